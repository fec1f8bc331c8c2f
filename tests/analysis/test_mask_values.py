"""What a mask's values are (0/1 or a bias), where a fill's constant ends up, and what precision a
new tensor is made in: the facts ATN203, ATN206 and ATN208 read."""

from __future__ import annotations

from attnlint.analysis import mask_encoding
from attnlint.analysis.values import ATTEND, MASKED

from helpers import analyse, env, function, only_softmax


def test_a_mask_parameter_that_every_caller_builds_is_known_to_hold_0_1_values():
    analysis, _ = analyse(
        """
        import torch

        def add_bias(s, bias):
            return (s + bias).softmax(-1)

        def run(q, k):
            n = q.size(-2)
            return add_bias(q @ k.transpose(-2, -1), torch.ones(n, n, dtype=torch.bool).tril())
        """
    )
    callee = function(analysis, "add_bias")
    (site,) = [s for s in callee.fill_sites if s.additive]
    assert site.mask.mask.origin == "causal" and site.mask.mask.convention == ATTEND
    assert mask_encoding.zero_one_reason(site.mask, callee.node) is not None


def test_masks_made_into_biases_are_not_0_1_values():
    analysis, _ = analyse(
        """
        import torch

        def f(n):
            upper = torch.full((n, n), torch.finfo(torch.float16).min).triu(1)
            keep = torch.ones(n, n).tril()
            filled = keep.masked_fill(keep == 0, float("-inf"))
            ones = torch.full((n, n), True).triu(1)
            return upper, filled, ones
        """
    )
    upper, filled, ones = (env(analysis, "f", name) for name in ("upper", "filled", "ones"))
    assert upper.mask.scaled and mask_encoding.zero_one_reason(upper, None) is None
    assert filled.mask.scaled and mask_encoding.zero_one_reason(filled, None) is None
    # A triangle of True is still a 0/1 mask.
    assert not ones.mask.scaled


def test_a_filled_tensor_that_a_softmax_normalises_carries_its_fill():
    analysis, _ = analyse(
        """
        import torch

        NEAR_INF = 1e20

        def f(energy, keep):
            if keep is not None:
                energy.masked_fill_(~keep, -NEAR_INF)
            return torch.softmax(energy, dim=1)
        """
    )
    site = only_softmax(analysis)
    (fill,) = site.input.fills
    assert not fill.on_scores  # nothing shows `energy` is a Q·Kᵀ product
    assert site.input.fills_partial  # filled on one path only


def test_an_additive_mask_remembers_the_fill_that_built_it_on_every_path():
    analysis, _ = analyse(
        """
        import torch

        def f(q, k, v, bias, use_bias):
            if use_bias:
                bias = bias.masked_fill(bias.bool(), -1e8)
            s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
            return (s + bias).softmax(-1) @ v
        """
    )
    facts = function(analysis, "f")
    (built,) = [s for s in facts.fill_sites if not s.additive]
    (added,) = [s for s in facts.fill_sites if s.additive]
    assert added.source is built
    assert env(analysis, "f", "bias").additive_fill is built


def test_new_tensors_know_whether_they_are_half_precision():
    analysis, _ = analyse(
        """
        import torch

        def f(q, n):
            default = torch.zeros(n, n)
            explicit = torch.zeros(n, n, dtype=torch.float32)
            half = torch.ones(n, n, dtype=torch.float16)
            follows = torch.zeros(n, n, dtype=q.dtype)
            cast = torch.zeros(n, n).to(q.dtype)
            moved = torch.zeros(n, n).to(q.device)
            typed = torch.zeros(n, n).type_as(q)
            return default, explicit, half, follows, cast, moved, typed
        """
    )
    half = {name: env(analysis, "f", name).constructor.half for name in ("default", "explicit", "half", "follows", "cast", "moved", "typed")}
    assert half == {
        "default": False,
        "explicit": False,
        "half": True,
        "follows": None,
        "cast": None,
        "moved": False,
        "typed": None,
    }


def test_a_float32_additive_mask_is_marked_as_such():
    analysis, _ = analyse(
        """
        import torch

        def f(pad, q):
            a = torch.zeros(pad.shape).masked_fill(pad, -1e9)
            b = torch.zeros(pad.shape, dtype=q.dtype).masked_fill(pad, -1e9)
            return a, b
        """
    )
    first, second = function(analysis, "f").fill_sites
    assert first.float32_receiver and not second.float32_receiver


def test_a_finite_fill_after_a_minus_inf_one_restores_rows():
    analysis, _ = analyse(
        """
        import torch

        def f(energy, key_padding_mask):
            e = energy.masked_fill(key_padding_mask, float("-inf"))
            e = e.masked_fill(key_padding_mask.all(-1, keepdim=True), 0.0)
            return e.softmax(-1)
        """
    )
    first, second = function(analysis, "f").fill_sites
    assert not first.restores and second.restores
    assert only_softmax(analysis).input.fills == (second,)


def test_ids_handed_to_an_embedding_compared_with_zero_give_a_padding_mask():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(100, 16)

            def forward(self, tokens, other):
                keep = tokens > 0
                blocked = tokens == 0
                unknown = other == 0
                return self.embed(tokens), keep, blocked, unknown
        """
    )
    keep, blocked, unknown = (env(analysis, "forward", n, "Encoder") for n in ("keep", "blocked", "unknown"))
    assert keep.mask.origin == "padding" and keep.mask.convention == ATTEND
    # Alone, only an all-padding sequence would empty a row: not shown (see the causal case).
    assert keep.mask.can_mask_whole_row is None
    assert blocked.mask.convention == MASKED
    # Nothing shows `other` holds ids: a bool tensor, True meaning nothing the code says.
    assert unknown.mask.origin == "comparison" and unknown.mask.convention is None


def test_a_name_reassigned_before_the_embedding_is_not_the_ids_parameter():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(100, 16)

            def forward(self, x):
                flag = x == 0
                x = x.long()
                return self.embed(x), flag
        """
    )
    # Not the ids: a bool test whose True entries mean nothing the code says.
    flag = env(analysis, "forward", "flag", "Encoder").mask
    assert flag.origin == "comparison" and flag.convention is None


def test_literal_and_random_id_batches_and_the_product_of_keep_masks():
    analysis, _ = analyse(
        """
        import torch

        def f(n):
            history = torch.tensor([[7, 3, 0], [0, 0, 0]])
            random_ids = torch.randint(1, 50, (2, n))
            counts = torch.tensor([0, 2])
            valid = (history > 0).long()
            causal = torch.tril(torch.ones(1, n, n, dtype=torch.long))
            both = valid[:, None, :] * causal
            random_pad = random_ids == 0
            empty = counts > 0
            return both, random_pad, empty
        """
    )
    both = env(analysis, "f", "both").mask
    # A pad-id keep mask under a causal one: which side the batch is padded on is not tracked,
    # so whether a row can empty is not claimed.
    assert both.convention == ATTEND and both.can_mask_whole_row is None and not both.scaled
    assert env(analysis, "f", "random_pad").mask.convention == MASKED
    # One row of numbers is not a batch of ids: a bool test, not a padding mask.
    empty = env(analysis, "f", "empty").mask
    assert empty.origin == "comparison" and empty.convention is None


def test_an_elementwise_comparison_is_a_bool_mask_of_no_known_convention():
    analysis, _ = analyse(
        """
        import torch

        def f(frames, pos, radius, items):
            voiced = (frames.abs().sum(-1) > 0).float()
            far = torch.cdist(pos, pos) > radius
            bias = far.float() * -1e4
            member = frames in items
            return voiced
        """
    )
    voiced, far, bias, member = (env(analysis, "f", n) for n in ("voiced", "far", "bias", "member"))
    assert voiced.mask.origin == "comparison" and voiced.mask.convention is None
    assert mask_encoding.zero_one_reason(voiced, None) == "a float mask built from a comparison"
    assert far.mask.dtype == "bool" and far.mask.can_mask_whole_row is None
    assert bias.mask.scaled and mask_encoding.zero_one_reason(bias, None) is None
    # `in` is no elementwise test.
    assert member.mask is None


def test_a_keep_mask_times_a_number_is_a_bias_not_a_product_of_masks():
    analysis, _ = analyse(
        """
        import torch

        def f(lengths, n):
            keep = torch.arange(n)[None, :] < lengths[:, None]
            return keep * -1e9
        """
    )
    assert function(analysis, "f").returns[0].mask.scaled


def test_a_0_1_mask_multiplied_into_logits_is_recorded_as_a_zero_fill():
    analysis, _ = analyse(
        """
        import torch

        def f(q, k, lengths):
            keep = (torch.arange(k.size(-2))[None, :] < lengths[:, None]).float()
            s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
            s = s * keep[:, None, :]
            return s.softmax(-1)
        """
    )
    site = only_softmax(analysis)
    (fill,) = site.input.fills
    assert fill.multiplied and fill.keeps_where_true and fill.on_scores
    # Multiplying by a mask is no scale: the product keeps q.size(-1) ** -0.5.
    assert site.input.scores.scale_verdict().kind.name == "CORRECT"


def test_one_minus_a_keep_mask_is_its_complement_and_times_a_number_a_bias():
    analysis, _ = analyse(
        """
        import torch

        def f(q, k, lengths):
            keep = (torch.arange(k.size(-2))[None, :] < lengths[:, None]).float()
            dropped = 1.0 - keep
            s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
            s = s * keep + dropped * -10000.0
            return s.softmax(-1)
        """
    )
    dropped = env(analysis, "f", "dropped").mask
    assert dropped.convention == MASKED and dropped.dtype == "float" and not dropped.scaled
    multiplied, added = only_softmax(analysis).input.fills
    assert multiplied.multiplied and added.additive and added.mask.mask.scaled


def test_mixed_precision_training_set_ups_are_evidence_of_half_precision():
    import libcst as cst

    from attnlint.analysis import precision
    from attnlint.analysis.names import collect_aliases

    def evidence(source):
        module = cst.parse_module(source)
        return precision.file_evidence(module, collect_aliases(module)).dtypes

    assert evidence("import torch\nscaler = torch.cuda.amp.GradScaler()\n") == {"float16"}
    assert evidence("args = TrainingArguments(output_dir='o', bf16=True)\n") == {"bfloat16"}
    assert evidence("acc = Accelerator(mixed_precision='fp16')\n") == {"float16"}
    assert evidence("t = pl.Trainer(precision='16-mixed')\n") == {"float16"}
    assert evidence("p.add_argument('--fp16', action='store_true')\n") == {"float16"}
    assert evidence("from apex import amp\nm, o = amp.initialize(m, o, opt_level='O1')\n") == {"float16"}
    # Not about the training dtype.
    assert not evidence("import torch\ntorch.set_printoptions(precision=16)\nt = pl.Trainer(precision=32)\n")
    assert not evidence("args = TrainingArguments(output_dir='o', fp16=False)\n")


def test_configurations_that_select_half_precision_are_evidence_of_it():
    import libcst as cst

    from attnlint.analysis import precision
    from attnlint.analysis.names import collect_aliases

    def evidence(source):
        module = cst.parse_module(source)
        return precision.file_evidence(module, collect_aliases(module)).dtypes

    assert evidence("@dataclass\nclass C:\n    fp16: bool = True\n") == {"float16"}
    assert evidence("class C:\n    def __init__(self):\n        self.use_fp16 = True\n") == {"float16"}
    assert evidence("cfg = {'bf16': True}\n") == {"bfloat16"}
    assert evidence("model = load(name, torch_dtype='bfloat16')\n") == {"bfloat16"}
    assert evidence("@dataclass\nclass C:\n    dtype: str = 'float16'\n") == {"float16"}
    assert evidence("p.add_argument('--dtype', default='fp16')\n") == {"float16"}
    # Switched off, or naming float32; a string that is no setting's value.
    assert not evidence("@dataclass\nclass C:\n    fp16: bool = False\n    dtype: str = 'float32'\n")
    assert not evidence("p.add_argument('--dtype', default='float32')\nname = 'float16'\n")


def test_an_out_of_place_fill_written_as_a_statement_is_discarded():
    analysis, _ = analyse(
        """
        import torch

        def f(q, k, mask):
            s = q @ k.transpose(-2, -1)
            s.masked_fill(mask, -1e4)
            s.masked_fill_(mask, -1e4)
            t = s.masked_fill(mask, -1e4)
            return t.softmax(-1)
        """
    )
    dropped, in_place, kept = function(analysis, "f").fill_sites
    assert dropped.discarded and not in_place.discarded and not kept.discarded


def test_a_parameter_inverted_with_tilde_holds_bool_values():
    analysis, _ = analyse(
        """
        import torch

        def f(s, keep, bias, feats):
            s = s.masked_fill(~keep[:, None, :], -1e4)
            added = keep.float()
            plain = bias.float()
            dropped = ~feats.abs().amax(-1).isfinite()
            return s + added + plain, dropped
        """
    )
    added, plain, dropped = (env(analysis, "f", n) for n in ("added", "plain", "dropped"))
    assert added.mask.shown_bool and added.mask.param == "keep"
    assert mask_encoding.zero_one_reason(added, None) == "the bool `keep` (inverted with `~` here, so not a bias)"
    assert plain.mask is None  # a parameter used as it comes may be a caller's bias
    assert dropped.mask.origin == "negation" and dropped.mask.dtype == "bool"


def test_scores_against_a_threshold_from_outside_their_rows_can_empty_a_row():
    analysis, _ = analyse(
        """
        import torch

        def f(q, k, cutoff, pos):
            s = q @ k.transpose(-2, -1)
            fixed = s < 0.1
            passed = s > cutoff
            kth = s < s.topk(4, dim=-1).values[..., -1:]
            far = torch.cdist(pos, pos) > cutoff
            return s, fixed, passed, kth, far
        """
    )
    fixed, passed, kth, far = (env(analysis, "f", n).mask for n in ("fixed", "passed", "kth", "far"))
    assert fixed.can_mask_whole_row and passed.can_mask_whole_row
    # The row's own k-th score keeps k keys; distances are not the scores.
    assert kth.can_mask_whole_row is None and far.can_mask_whole_row is None


def test_a_fill_read_from_a_config_field_is_the_fields_default_unless_the_module_sets_it():
    import libcst as cst

    from attnlint.analysis import fill_values
    from attnlint.analysis.names import collect_aliases

    def value(source):
        module = cst.parse_module(source)
        node = cst.parse_expression("self.cfg.mask_value")
        found = fill_values.constant_value(node, collect_aliases(module), None, module)
        return None if found is None else found.value

    config = "@dataclass\nclass Config:\n    mask_value: float = -1e9\n"
    assert value(config) == -1e9
    assert value(config + "small = Config(mask_value=-1e4)\n") is None
    assert value(config + "def f(cfg):\n    cfg.mask_value = -1e4\n") is None
    assert value(config + "class Other:\n    mask_value = -1e4\n") is None


def test_a_thrown_away_fill_travels_with_the_tensor_to_its_softmax():
    analysis, _ = analyse(
        """
        import torch

        def f(enc, dec, keep, temperature):
            energy = torch.bmm(enc, dec.unsqueeze(2)).squeeze(2)
            energy.masked_fill(~keep, float("-inf"))
            energy = energy / temperature
            return energy.softmax(-1)
        """
    )
    site = only_softmax(analysis)
    (dropped,) = site.input.dropped_fills
    assert dropped.discarded and not site.input.fills


def test_a_mask_parameter_by_name_multiplied_into_the_scores_is_a_multiplied_fill_when_that_is_its_only_use():
    analysis, _ = analyse(
        """
        import torch

        def once(q, k, edge_mask):
            s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
            return (s * edge_mask[:, None]).softmax(-1)

        def twice(q, k, edge_mask):
            s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
            s = s * edge_mask + (1.0 - edge_mask) * -1e4
            return s.softmax(-1)
        """
    )
    (site,) = function(analysis, "once").fill_sites
    assert site.multiplied and site.mask.mask.param == "edge_mask"
    assert mask_encoding.multiplied_reason(site.mask, function(analysis, "once").node) is not None
    # Read again for the additive form: not shown to be the mask's only application.
    assert not any(s.multiplied for s in function(analysis, "twice").fill_sites)


def test_a_numpy_triangle_of_ones_is_a_causal_mask():
    analysis, _ = analyse(
        """
        import numpy as np
        import torch

        def f(n):
            keep = torch.from_numpy(np.tril(np.ones((n, n), dtype=np.int64)))
            future = np.triu(np.ones((n, n)), k=1)
            return keep, future
        """
    )
    keep, future = env(analysis, "f", "keep"), env(analysis, "f", "future")
    assert keep.mask.origin == "causal" and keep.mask.convention == ATTEND
    assert keep.mask.can_mask_whole_row is False
    assert future.mask.convention == MASKED


def test_fills_of_the_weights_after_the_softmax_are_kept_apart_and_marked_when_thrown_away():
    analysis, _ = analyse(
        """
        def f(s, rows):
            w = s.softmax(-1)
            w.masked_fill(rows, 0.0)
            w = w.masked_fill(rows, 0.0)
            return w
        """
    )
    facts = function(analysis, "f")
    assert not facts.fill_sites
    thrown, kept = facts.weight_fills
    assert thrown.discarded and thrown.on_weights and not kept.discarded


def test_a_fill_read_from_a_parameter_default_that_no_call_can_override():
    from attnlint.analysis import fill_values

    source = """
        import torch

        def attend(s, mask, eps=1e-9):
            return s.masked_fill(mask, -eps).softmax(-1)

        def run(s, mask):
            return attend(s, mask)

        def other(s, mask):
            return attend(s, mask, 1e9)
        """
    analysis, module = analyse(source)
    callee = function(analysis, "attend")
    (site,) = callee.fill_sites
    # `other` passes a third positional argument: the default may not be what fills.
    assert fill_values.fill_constant(site, analysis.aliases, callee.node, module) is None
    analysis, module = analyse(source.split("        def other")[0])
    callee = function(analysis, "attend")
    (site,) = callee.fill_sites
    assert fill_values.fill_constant(site, analysis.aliases, callee.node, module).value == -1e-9


def test_a_padding_mask_of_the_attended_sequence_laid_out_by_einops_and_cast_to_the_queries_dtype_is_a_float_0_1_mask():
    analysis, _ = analyse(
        """
        from einops import rearrange

        def f(q, context_mask):
            laid_out = rearrange(context_mask, "b j -> b 1 1 j").to(q.dtype)
            as_it_comes = context_mask.to(q.dtype)
            return laid_out, as_it_comes
        """
    )
    callee = function(analysis, "f")
    laid_out, as_it_comes = env(analysis, "f", "laid_out"), env(analysis, "f", "as_it_comes")
    # `.to(q.dtype)`: the queries are floating point.
    assert laid_out.mask.dtype == "float" and laid_out.mask.param == "context_mask"
    assert mask_encoding.zero_one_reason(laid_out, callee.node) is not None
    assert mask_encoding.broadcast_here("context_mask", callee.node)
    # Not laid out here: it may be the caller's bias.
    assert mask_encoding.zero_one_reason(as_it_comes, None) is None


def test_a_mask_parameter_a_caller_broadcasts_with_no_arithmetic_still_holds_its_0_1_values():
    source = """
        import torch
        from torch import nn

        class SelfAttention(nn.Module):
            def forward(self, q, k, attention_mask):
                scores = q @ k.transpose(-1, -2) / 8.0
                return (scores + attention_mask).softmax(-1)

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = SelfAttention()

            @staticmethod
            def extend(attention_mask, dtype):
                return {extended}

            def forward(self, q, k, attention_mask):
                return self.attn(q, k, self.extend(attention_mask, q.dtype))
        """
    raw = "attention_mask[:, None, None, :].to(dtype=dtype)"
    analysis, _ = analyse(source.format(extended=raw))
    callee = function(analysis, "forward", "SelfAttention")
    passed = callee.final_env["attention_mask"]
    assert passed.mask.laid_out_per_key and passed.mask.convention == ATTEND
    assert "broadcast by the caller" in mask_encoding.zero_one_reason(passed, callee.node)
    # Made into a bias on the way (Hugging Face's extended mask): no longer 0/1 values.
    biased = "(1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min"
    analysis, _ = analyse(source.format(extended=biased))
    callee = function(analysis, "forward", "SelfAttention")
    assert mask_encoding.zero_one_reason(callee.final_env["attention_mask"], callee.node) is None


def test_a_cast_of_a_mask_of_unknown_kind_still_casts_its_values():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(64, 4, batch_first=True)

            def forward(self, h, attention_mask):
                key_padding_mask = attention_mask.bool()
                return self.mha(h, h, h, key_padding_mask=key_padding_mask)

        def batches(tokenizer, texts, labels):
            for i in range(0, len(texts), 8):
                enc = tokenizer(texts[i:i + 8], padding=True, return_tensors="pt")
                yield enc["input_ids"], enc["attention_mask"], torch.tensor(labels[i:i + 8])

        def run(tokenizer, texts, labels, embed, device="cpu"):
            model = Classifier()
            for ids, attention_mask, y in batches(tokenizer, texts, labels):
                model(embed(ids), attention_mask.to(device))
        """
    )
    cast = env(analysis, "forward", "key_padding_mask", "Classifier")
    assert cast.mask.dtype == "bool" and cast.mask.convention == ATTEND


def test_a_dtype_handed_to_a_helper_casts_the_mask_to_it():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        def to_sdpa_mask(attention_mask, dtype):
            return attention_mask[:, None, None, :].to(dtype)

        class Encoder(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.tok = nn.Embedding(n, d)

            def forward(self, input_ids, attention_mask):
                x = self.tok(input_ids)
                float_mask = to_sdpa_mask(attention_mask, x.dtype)
                id_mask = to_sdpa_mask(attention_mask, input_ids.dtype)
                return float_mask, id_mask
        """
    )
    float_mask = env(analysis, "forward", "float_mask")
    id_mask = env(analysis, "forward", "id_mask")
    # The embedded tokens are floating point; the ids are not (their dtype says nothing here).
    assert float_mask.mask.dtype == "float" and float_mask.mask.laid_out_per_key
    assert id_mask.mask.dtype is None


def test_a_fill_bound_to_a_name_is_read_where_the_name_was_bound():
    analysis, _ = analyse(
        """
        import torch

        def window(bias, n, w):
            min_dtype = torch.finfo(bias.dtype).min
            far = torch.arange(n)[:, None] - torch.arange(n)[None, :] >= w
            return bias.masked_fill(far, min_dtype)
        """
    )
    (site,) = function(analysis, "window").fill_sites
    assert site.fill == "finite"


def test_a_tensor_filled_elsewhere_with_an_unknown_fill_is_not_its_mask_added():
    # What `scores + bias` adds is the fill `bias` holds where `far` is True, not `far`'s 0/1.
    analysis, _ = analyse(
        """
        import torch

        def window(bias, far, neg):
            return bias.masked_fill(far, neg)

        def attend(q, k, bias, far, neg):
            scores = q @ k.transpose(-2, -1)
            scores = scores + window(bias, far, neg)
            return scores.softmax(-1)
        """
    )
    (added,) = [s for s in function(analysis, "attend").fill_sites if s.additive]
    assert added.source is not None and added.fill is None
    assert not added.adds_the_mask


def test_a_tensor_padded_with_true_is_a_bool_mask_and_its_cast_to_hidden_states_float():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn.functional as F

        def f(x, frame_mask):
            keep = F.pad(frame_mask, (1, 0), value=True)
            bias = keep[:, None, None, :].to(x.dtype)
            return bias
        """
    )
    keep = env(analysis, "f", "keep").mask
    assert keep.origin == "bool_pad" and keep.dtype == "bool"
    bias = env(analysis, "f", "bias")
    assert bias.mask.dtype == "float"
    assert mask_encoding.zero_one_reason(bias, function(analysis, "f").node) is not None


def test_a_tensor_padded_with_a_number_is_no_mask():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F

        def f(x):
            return F.pad(x, (1, 0), value=0.0)
        """
    )
    assert function(analysis, "f").returns[0].mask is None


def test_a_fill_parameters_default_holds_when_only_other_functions_take_that_many_arguments():
    import libcst as cst

    from attnlint.analysis.fill_values import constant_value

    source = (
        "import torch\n"
        "def attend(q, k, mask=None, e=1e-12):\n"
        "    return (q @ k.mT).masked_fill(mask == 0, -e)\n"
        "def train(model, it, opt, crit, clip):\n"
        "    pass\n"
        "train(1, 2, 3, 4, 5)\n"
        "x = torch.zeros(1, 2, 3, 4, 5)\n"
    )
    module = cst.parse_module(source)
    attend = module.body[1]
    fill = cst.UnaryOperation(operator=cst.Minus(), expression=cst.Name("e"))
    assert constant_value(fill, {"torch": "torch"}, attend, module).value == -1e-12
    # A call that may reach `attend` with four positional arguments may pass `e`.
    other = cst.parse_module(source + "attend(1, 2, None, 1e9)\n")
    assert constant_value(fill, {"torch": "torch"}, other.body[1], other) is None


def test_scores_cast_to_float32_before_a_fill_meet_it_in_float32():
    import libcst as cst

    from attnlint.analysis.precision import cast_to_float32_before

    module = cst.parse_module(
        "def f(q, k, mask):\n"
        "    scores = q @ k\n"
        "    scores = scores.float()\n"
        "    scores = scores.masked_fill(mask, -1e18)\n"
        "    late = q @ k\n"
        "    late = late.masked_fill(mask, -1e18)\n"
        "    late = late.float()\n"
        "    return scores.to(torch.float32).masked_fill(mask, -1e18), late\n"
    )
    function = module.body[0]
    fills = [n for n in function.body.body if isinstance(n, cst.SimpleStatementLine)]
    first = fills[2].body[0].value
    assert cast_to_float32_before(function, first.func.value, first)
    late = fills[4].body[0].value
    assert not cast_to_float32_before(function, late.func.value, late)  # cast after the fill
    last = fills[6].body[0].value.elements[0].value
    assert cast_to_float32_before(function, last.func.value, last)  # `.to(torch.float32)` itself
