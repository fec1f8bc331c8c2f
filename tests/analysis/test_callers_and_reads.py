"""Facts a smoke test or a caller must not change: roles named by the callee's parameters, the
scale of plain weight tensors, and weights that are only read after the softmax."""

from __future__ import annotations

from attnlint.analysis.values import Value

from helpers import analyse, dims_text, env, function, only_softmax

SELF_ATTENTION_CALLED_WITH_ONE_TENSOR = """
import torch

def attend(q, k, v):
    s = torch.bmm(q, k.transpose(1, 2))
    return torch.softmax(s, dim=-1) @ v

if __name__ == "__main__":
    x = torch.randn(4, 5, 16)
    attend(x, x, x)
    query = torch.randn(4, 5, 16)
    attend(query, query, query)
"""


def test_the_callee_parameter_names_give_the_roles_whatever_the_caller_passes():
    site = only_softmax(analyse(SELF_ATTENTION_CALLED_WITH_ONE_TENSOR)[0])
    assert site.input.scores is not None
    assert site.input.rank == 3
    assert site.key_axis() == -1


def test_a_product_with_plain_weight_tensors_is_unscaled_and_a_scaled_weight_is_not():
    source = """
    import math
    import torch

    x = torch.randn(6, 12)
    w_q = torch.randn(12, 12){q_factor}
    w_k = torch.randn(12, 12)
    queries = x @ w_q
    keys = x @ w_k
    weights = torch.softmax(queries @ keys.T, dim=-1)
    """
    plain = only_softmax(analyse(source.format(q_factor=""))[0]).input.scores
    assert plain.scaled is False
    scaled = only_softmax(analyse(source.format(q_factor=" / math.sqrt(12)"))[0]).input.scores
    assert scaled.scaled is not False  # scaled (or at least not known unscaled): never reported


def test_weights_that_are_printed_or_summed_are_not_renormalised_but_weights_divided_again_are():
    source = """
    import torch

    def attend(q, k):
        return torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-1)

    if __name__ == "__main__":
        q = torch.randn(2, 5, 8)
        w = attend(q, q)
        {after}
    """
    read = only_softmax(analyse(source.format(after="print(w.sum(-1), w.max().item(), len(w))"))[0])
    assert read.renormalized is False
    again = only_softmax(analyse(source.format(after="w = w / w.sum(-2, keepdim=True)"))[0])
    assert again.renormalized is True
    handed_on = only_softmax(analyse(source.format(after="sinkhorn(w)"))[0])
    assert handed_on.renormalized is True


def test_a_product_with_a_learned_weight_has_an_unknown_scale():
    analysis, _ = analyse(
        """
        import torch
        from torch import nn

        class Bilinear(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.left = nn.Parameter(torch.empty(d, d))
                self.right = nn.Parameter(torch.empty(d, d))
                nn.init.normal_(self.left, std=d ** -0.5)

            def forward(self, x):
                q = x @ self.left
                k = x @ self.right
                return torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        """
    )
    scores = only_softmax(analysis).input.scores
    assert scores is None or scores.scaled is not False


def test_a_model_switched_to_eval_is_still_the_model_its_callers_bind():
    source = """
    import torch
    from torch import nn

    class Attend(nn.Module):
        def forward(self, q, k, padding_mask):
            s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
            return s.masked_fill(padding_mask, float("-inf")).softmax(dim=-1)

    if __name__ == "__main__":
        layer = Attend(){mode}
        x = torch.randn(2, 3, 8, 4)
        layer(x, x, torch.zeros(2, 1, 1, 3, dtype=torch.bool))
    """
    for mode in ("", ".eval()", ".train(False)"):
        analysis, _ = analyse(source.format(mode=mode))
        assert only_softmax(analysis).input.rank == 4, mode


def test_an_indexed_module_list_is_its_element():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class PerHead(nn.Module):
            def __init__(self, dim, n_heads):
                super().__init__()
                self.q = nn.ModuleList([nn.Linear(dim, 16) for _ in range(n_heads)])

            def forward(self, x, i):
                b, t, d = x.shape
                q = self.q[i](x)
                outs = torch.zeros(4, b, t, 16)
                outs[i] = q
                return q, outs
        """
    )
    q = env(analysis, "forward", "q")
    assert dims_text(q) == ("b", "t", "16") and q.role == "query"
    # Written with results, the new tensor is no longer one whose axes mean nothing yet.
    assert env(analysis, "forward", "outs").constructor is None


def test_a_model_handed_in_and_called_on_a_padded_batch_is_the_one_root_module():
    source = """
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence

        class Layer(nn.Module):
            def forward(self, x):
                return x

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = Layer()

            def forward(self, ids):
                return self.layer(ids)

        def encode(model, seqs, fn):
            model(pad_sequence(seqs, batch_first=True))
            return fn(pad_sequence(seqs, batch_first=True))
        """
    analysis, _ = analyse(source)
    assert analysis.summaries.root_module() == "Encoder"  # Layer is built by Encoder
    assert function(analysis, "forward", "Encoder").params["ids"].padding.value == 0.0
    # A second root: which one `model` is, the module does not show.
    analysis, _ = analyse(source + "\n        class Other(nn.Module):\n            def forward(self, ids):\n                return ids\n")
    assert analysis.summaries.root_module() is None
    assert function(analysis, "forward", "Encoder").params["ids"].padding is None
    # A criterion written as a module is handed labels, not the model's batch: it is no root.
    for criterion in (
        "class Seq2SeqCriterion(nn.Module):\n            def forward(self, logits, labels):\n                return logits",
        "class Smoothed(nn.Module):\n            def __init__(self):\n                super().__init__()\n"
        "                self.loss = nn.CrossEntropyLoss()\n            def forward(self, logits, labels):\n"
        "                return self.loss(logits, labels)",
    ):
        analysis, _ = analyse(source + "\n        " + criterion + "\n")
        assert analysis.summaries.root_module() == "Encoder"


def test_a_parameter_named_for_the_root_class_is_an_instance_of_it():
    source = """
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence

        class SpeechEncoder(nn.Module):
            def forward(self, feats):
                return feats

        def run({name}, utterances):
            return {name}(pad_sequence(utterances, batch_first=True))
        """
    for name in ("speech_encoder", "speechencoder", "encoder"):
        analysis, _ = analyse(source.format(name=name))
        assert function(analysis, "forward", "SpeechEncoder").params["feats"].padding.value == 0.0, name
    # A name that is no word of the class says nothing of which object it is.
    analysis, _ = analyse(source.format(name="speech"))
    assert function(analysis, "forward", "SpeechEncoder").params["feats"].padding is None


def test_a_local_holding_a_function_of_the_module_calls_it_and_passes_it_arguments():
    analysis, module = analyse(
        """
        import torch

        REGISTRY = {}

        def eager(q, k, scale):
            return torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1)

        def other(q, k, scale):
            return torch.softmax(q @ k.transpose(-1, -2), dim=-1)

        def attend(q, k, impl):
            fn = eager
            if impl != "eager":
                fn = REGISTRY[impl]  # another backend the analysis cannot see
            return fn(q, k, q.shape[-1] ** -0.5)

        def pick(q, k, flag):
            fn = eager if flag else other  # two functions it can see: neither for sure
            return fn(q, k, 1.0)
        """
    )
    eager = function(analysis, "eager")
    (passed,) = analysis.argument_nodes_for(eager, "scale")
    assert module.code_for_node(passed) == "q.shape[-1] ** -0.5"
    assert env(analysis, "attend", "fn").user_function == "eager"
    assert env(analysis, "pick", "fn").user_function is None


def test_a_parameter_a_helper_hands_back_is_the_caller_s_argument():
    analysis, _ = analyse(
        """
        import torch

        def contiguous_heads(x):
            return x.contiguous()

        def attend(h, keys):
            local = h * 2
            a = contiguous_heads(local)
            b = contiguous_heads(keys)
            return a, b
        """
    )
    # The helper's `x` is the caller's local (no parameter of the caller), then its `keys`.
    assert env(analysis, "attend", "a").param is None
    assert env(analysis, "attend", "b").param == "keys"


def test_an_import_resolved_once_is_remembered_and_a_module_that_appears_later_is_found(tmp_path, monkeypatch):
    from attnlint.analysis import project as project_module
    from attnlint.analysis.project import Project

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "data.py").write_text("PAD_ID = 1\n")
    importer = package / "train.py"
    importer.write_text("from .data import PAD_ID\n")
    project = Project([tmp_path])
    found = project.resolve(importer, "data", 1)
    assert found == (package / "data.py").resolve()
    assert project.resolve(importer, "data", 1) == found  # remembered
    # A miss is remembered for a few seconds only: a module written later is then found.
    assert project.resolve(importer, "collate", 1) is None
    (package / "collate.py").write_text("def collate(batch): return batch\n")
    monkeypatch.setattr(project_module, "_MISS_SECONDS", 0.0)
    assert project.resolve(importer, "collate", 1) == (package / "collate.py").resolve()


def test_a_summary_cut_short_deep_down_is_computed_again_nearer_the_top():
    # `top` is read first: through `deep` and `outer`, `causal_helper(5)` is summarised three
    # calls down, where its own call of `causal` is past the depth limit. Asked for from the
    # top, the same call reaches `causal`.
    analysis, _ = analyse(
        """
        import torch

        def top():
            far = deep()
            near = causal_helper(5)
            return far, near

        def deep():
            return outer()

        def outer():
            return causal_helper(5)

        def causal_helper(n):
            return causal(n)

        def causal(n):
            return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        """
    )
    near = function(analysis, "top").final_env["near"]
    assert near.mask is not None and near.mask.origin == "causal"


def test_a_mask_reaches_an_attention_function_four_calls_below_where_it_is_made():
    # A training step builds the 0/1 mask; the model, its layer and its attention hand it on;
    # the attention function adds it. Each level is refined by the one above it, once per round.
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        def eager_attention_forward(module, query, key, value, attention_mask, scaling):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            return torch.matmul(attn_weights.softmax(dim=-1), value)

        class Attention(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.h, self.scaling = h, (d // h) ** -0.5
                self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            def forward(self, x, attention_mask=None):
                b, n, d = x.shape
                q, k, v = (p(x).view(b, n, self.h, -1).transpose(1, 2) for p in (self.q, self.k, self.v))
                return eager_attention_forward(self, q, k, v, attention_mask, self.scaling)

        class Layer(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.attn = Attention(d, h)
            def forward(self, x, attention_mask=None):
                return self.attn(x, attention_mask=attention_mask)

        class Model(nn.Module):
            def __init__(self, vocab, d=64, h=4):
                super().__init__()
                self.embed = nn.Embedding(vocab, d)
                self.layer = Layer(d, h)
            def forward(self, ids, attention_mask=None):
                mask = attention_mask[:, None, None, :].to(torch.float32)
                return self.layer(self.embed(ids), attention_mask=mask)

        def step(model, ids, pad_id):
            return model(ids, attention_mask=(ids != pad_id).long())
        """
    )
    mask = function(analysis, "eager_attention_forward").params["attention_mask"].mask
    assert mask is not None and mask.origin == "padding" and mask.convention == "attend"


SUBLAYERS = """
    import torch
    import torch.nn as nn

    class Attention(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.proj = nn.Linear(d, d)

        def forward(self, x, *kv, mask=None):
            k = kv[0] if kv else x
            return self.proj(x), k, mask

    class SublayerConnection(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm = nn.LayerNorm(d)

        def forward(self, x, sublayer):
            return x + sublayer(self.norm(x))

    class EncoderLayer(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.self_attn = Attention(d)
            self.sublayer = nn.ModuleList([SublayerConnection(d) for _ in range(2)])

        def forward(self, x, mask):
            b, n, d = x.shape
            return self.sublayer[0](x, lambda y: self.self_attn(y, mask=mask))
"""


def test_a_lambda_handed_to_a_sublayer_makes_its_calls_in_the_caller():
    # The Annotated Transformer's sublayer connection: the lambda's call of the attention is the
    # encoder layer's, its parameter what the sublayer passes (its own x through a layer).
    analysis, _ = analyse(SUBLAYERS)
    x = env(analysis, "forward", "x", class_name="Attention")
    assert x.rank == 3
    calls = [c for c in function(analysis, "forward", "EncoderLayer").calls if c.callee_class == "Attention"]
    assert len(calls) == 1


def test_star_arguments_are_a_tuple_of_what_each_call_passes():
    from attnlint.analysis.summaries import bind_arguments
    import libcst as cst

    definition = cst.parse_module("def forward(self, x, *kv, mask=None):\n    pass\n").body[0]
    call = cst.parse_expression("attn(a, b, c, mask=m)")
    values = [Value(kind="tensor", rank=r) for r in (1, 2, 3, 4)]
    bound = bind_arguments(definition, call, values, method=True)
    assert [v.rank for v in bound["kv"].elements] == [2, 3]
    assert bound["mask"].rank == 4


def test_tuples_of_two_lengths_join_to_what_holds_of_every_element():
    from attnlint.analysis.values import join

    three = Value(kind="tuple", elements=(Value(kind="tensor", rank=4),) * 3)
    none = Value(kind="tuple", elements=())
    joined = join(three, none)
    assert not joined.elements and joined.each.rank == 4
    pairs = join(Value(kind="tuple", elements=(Value(kind="tensor", rank=3),)), Value(kind="tuple", elements=(Value(kind="tensor", rank=3, role="query"),)))
    assert pairs.elements[0].rank == 3


def test_a_helpers_softmax_dim_is_the_number_each_call_binds():
    analysis, module = analyse(
        """
        import torch

        def masked_softmax(scores, mask, dim=1):
            return torch.softmax(scores.masked_fill(~mask, -1e4), dim=dim)

        def attend(q, k, v, keep):
            scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
            return masked_softmax(scores, keep) @ v
        """
    )
    (site,) = analysis.scores_through_helpers
    assert site.dim == 1 and site.dim_known  # the default the call leaves out
    assert site.dim_bound_by is not None and site.dim_bound_by.func.value == "masked_softmax"
    # Read on its own (every caller at once), the helper's dim is its parameter: unknown.
    (own,) = analysis.softmax_sites
    assert not own.dim_known and own.dim_bound_by is None


def test_a_parameter_a_call_leaves_at_none_decides_the_helpers_none_tests_for_that_call():
    analysis, _ = analyse(
        """
        import torch

        def exists(val):
            return val is not None

        def attend(q, k, v, scale=None):
            sim = q @ k.transpose(-2, -1)
            if exists(scale):
                sim = sim * scale
            return sim.softmax(dim=-1) @ v

        def plain(q, k, v):
            return attend(q, k, v)

        def scaled(q, k, v):
            return attend(q, k, v, scale=q.shape[-1] ** -0.5)
        """
    )
    (own,) = analysis.softmax_sites
    assert own.input.scores.scaled is None  # every caller at once: it depends on `scale`
    ((call, site),) = analysis.unscaled_by_calls()
    assert call.args[-1].keyword is None and site.input.scores.scaled is False  # `plain`'s call


def test_a_call_takes_a_keyword_only_for_a_parameter_it_leaves_free():
    import libcst as cst

    from attnlint.analysis import ModuleAnalysis

    analysis, module = analyse(
        """
        class A:
            def helper(self, scores, mask, dim=1, scale=None):
                return scores

            @property
            def causal(self):
                return self.bias

            def forward(self, s, m):
                return self.helper(s, m), self.helper(s, m, -1), self.helper(s, m, scale=2)
        """
    )
    cls = module.body[0]
    helper, prop, forward = [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]
    calls = forward.body.body[0].body[0].value.elements
    first, positional, keyword = (e.value for e in calls)
    assert ModuleAnalysis.takes_keyword(first, helper, "dim")
    assert not ModuleAnalysis.takes_keyword(positional, helper, "dim")  # passed third, by position
    assert not ModuleAnalysis.takes_keyword(keyword, helper, "scale")
    assert analysis.enclosing(first) is forward and analysis.enclosing(first, cst.ClassDef) is cls
    assert analysis.in_property(prop.body.body[0].body[0].value) and not analysis.in_property(first)
