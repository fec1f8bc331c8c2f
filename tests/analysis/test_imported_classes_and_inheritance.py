"""Classes of other files of the project, attributes a base class's `__init__` sets, the indices
of a sort, and masks made by testing ids against the pad id."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from attnlint.analysis import analyze_module
from attnlint.analysis.attention import unread_padding_masks
from attnlint.analysis.project import Project

from helpers import analyse, function


def _package(tmp_path, files):
    package = tmp_path / "proj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in files.items():
        (package / name).write_text(text)
    return package


def _analyse_file(tmp_path, path):
    return analyze_module(cst.parse_module(path.read_text()), project=Project([tmp_path]), path=Path(path))


def test_an_imported_collator_class_pads_the_batches_of_a_loader(tmp_path):
    package = _package(
        tmp_path,
        {
            "collate.py": (
                "from dataclasses import dataclass\n"
                "from torch.nn.utils.rnn import pad_sequence\n"
                "@dataclass\n"
                "class Collator:\n"
                "    pad_token_id: int\n"
                "    def __call__(self, batch):\n"
                "        ids = pad_sequence([b['ids'] for b in batch], batch_first=True, padding_value=self.pad_token_id)\n"
                "        return {'ids': ids[:, :-1], 'labels': ids[:, 1:]}\n"
            ),
            "train.py": (
                "from torch.utils.data import DataLoader\n"
                "from .collate import Collator\n"
                "def main(ds, pad):\n"
                "    loader = DataLoader(ds, collate_fn=Collator(pad_token_id=pad))\n"
                "    for batch in loader:\n"
                "        labels = batch['labels']\n"
            ),
        },
    )
    analysis = _analyse_file(tmp_path, package / "train.py")
    labels = function(analysis, "main").final_env["labels"]
    assert labels.padded and labels.padding.token_id


def test_an_imported_model_class_returns_what_its_forward_returns(tmp_path):
    package = _package(
        tmp_path,
        {
            "decoder.py": (
                "import torch.nn as nn\n"
                "class Decoder(nn.Module):\n"
                "    def __init__(self, vocab, dim):\n"
                "        super().__init__()\n"
                "        self.embed = nn.Embedding(vocab, dim)\n"
                "        self.out = nn.Linear(dim, vocab)\n"
                "    def forward(self, captions, lengths):\n"
                "        lengths, order = lengths.sort(dim=0, descending=True)\n"
                "        captions = captions[order]\n"
                "        return self.out(self.embed(captions)), captions\n"
            ),
            "train.py": (
                "from torch.nn.utils.rnn import pad_sequence\n"
                "from .decoder import Decoder\n"
                "def step(rows, lengths):\n"
                "    caps = pad_sequence(rows, batch_first=True, padding_value=0)\n"
                "    decoder = Decoder(100, 32).to('cpu')\n"
                "    scores, caps_sorted = decoder(caps, lengths)\n"
            ),
        },
    )
    analysis = _analyse_file(tmp_path, package / "train.py")
    step = function(analysis, "step").final_env
    assert step["decoder"].kind == "module"
    assert step["scores"].kind == "tensor"  # the Linear at the end of its forward
    # Rows reordered by the sort's indices are rows of the padded batch.
    assert step["caps_sorted"].padded and step["caps_sorted"].padding.value == 0


def test_a_boolean_selection_of_a_padded_batch_is_not_padded():
    analysis, _ = analyse(
        """
        from torch.nn.utils.rnn import pad_sequence
        def f(rows, keep, lengths):
            caps = pad_sequence(rows, batch_first=True, padding_value=0)
            _, order = lengths.sort(descending=True)
            return caps[order], caps[keep]
        """
    )
    reordered, selected = function(analysis, "f").returns[0].elements
    assert reordered.padded
    assert not selected.padded


def test_a_subclass_has_the_attributes_its_base_init_sets():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, n_head, n_feat):
                super().__init__()
                self.d_k = n_feat // n_head
                self.h = n_head
                self.linear_q = nn.Linear(n_feat, n_feat)
        class RelPositionAttention(Attention):
            def __init__(self, n_head, n_feat):
                super().__init__(n_head, n_feat)
                self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)
            def forward(self, x):
                return self.linear_q(x).view(x.size(0), -1, self.h, self.d_k)
        """
    )
    cls = analysis.classes["RelPositionAttention"]
    assert cls.attrs["d_k"].sym.text() == "n_feat / n_head"
    assert cls.attrs["linear_q"].kind == "module"
    # The base's attributes size the subclass's view: (batch, tokens, h, d_k).
    heads = function(analysis, "forward", "RelPositionAttention").returns[0]
    assert heads.rank == 4 and [a.size.text() for a in heads.shape[2:]] == ["n_head", "n_feat / n_head"]


def test_a_mask_made_by_testing_ids_against_the_pad_id_and_never_read():
    analysis, _ = analyse(
        """
        def forward(self, batch):
            hist_mask = batch["hist_items"] > 0
            score_mask = batch["scores"] > 0.5
            kept = batch["ids"].ne(self.pad_id).float()
            return self.attn(batch["target"], batch["hist"])
        """
    )
    unread = unread_padding_masks(function(analysis, "forward"))
    # A comparison with 0 or the pad id is a padding test; one with 0.5 is not.
    assert set(unread) == {"hist_mask"}


def test_refinement_signature_is_up_to_the_keys_of_atoms():
    from attnlint.analysis.summaries import refinement_signature
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import CallerScope, Value

    def context(caller):
        dim = Sym.atom(f"{caller}:dim", "dim")
        scope = CallerScope(
            frozenset(dim.atoms()),
            frozenset(),
            # Two callers' examples for sizes of one name (numbers are not ordered).
            ((f"{caller}:dim", Sym.const(64)), (f"Other.{caller}:dim", Sym.const(32))),
        )
        return refinement_signature({"dim": Value(kind="scalar", sym=dim)}, scope)

    # A parameter passed down one caller further: another key, the same names.
    assert context("Block.__init__") == context("Model.__init__")
    widths = refinement_signature({"dim": Value(kind="scalar", sym=Sym.atom("Block:width", "width"))}, CallerScope())
    assert widths != refinement_signature({"dim": Value(kind="scalar", sym=Sym.atom("Block:dim", "dim"))}, CallerScope())


def test_a_length_mask_from_an_imported_helper_over_lengths_an_imported_front_end_returns(tmp_path):
    # The front end's class and the mask helpers live in other files: the encoder's forward,
    # read for itself and as the classifier's callee, sees the length mask (True = real frame).
    package = _package(
        tmp_path,
        {
            "masking.py": (
                "import torch\n"
                "def make_pad_mask(lengths, max_len=None):\n"
                "    max_len = int(max_len or lengths.max().item())\n"
                "    seq = torch.arange(max_len, device=lengths.device)\n"
                "    return seq.unsqueeze(0) >= lengths.unsqueeze(1)\n"
                "def make_non_pad_mask(lengths, max_len=None):\n"
                "    return ~make_pad_mask(lengths, max_len)\n"
            ),
            "frontend.py": (
                "import torch.nn as nn\n"
                "class Subsampling(nn.Module):\n"
                "    def __init__(self, idim, odim):\n"
                "        super().__init__()\n"
                "        self.out = nn.Linear(idim, odim)\n"
                "    def forward(self, x, lengths):\n"
                "        return self.out(x[:, ::2]), (lengths - 1) // 2\n"
            ),
            "model.py": (
                "import torch.nn as nn\n"
                "from .frontend import Subsampling\n"
                "from .masking import make_non_pad_mask\n"
                "class Encoder(nn.Module):\n"
                "    def __init__(self, idim, d_model):\n"
                "        super().__init__()\n"
                "        self.subsample = Subsampling(idim, d_model)\n"
                "    def forward(self, feats, feat_lens):\n"
                "        x, lens = self.subsample(feats, feat_lens)\n"
                "        valid = make_non_pad_mask(lens, x.size(1))\n"
                "        return x, valid\n"
                "class Classifier(nn.Module):\n"
                "    def __init__(self, idim, d_model):\n"
                "        super().__init__()\n"
                "        self.encoder = Encoder(idim, d_model)\n"
                "    def forward(self, feats, feat_lens):\n"
                "        enc, valid = self.encoder(feats, feat_lens)\n"
                "        return enc, valid\n"
            ),
        },
    )
    analysis = _analyse_file(tmp_path, package / "model.py")
    for owner in ("Encoder", "Classifier"):
        valid = function(analysis, "forward", owner).final_env["valid"]
        assert valid.mask is not None and valid.mask.origin == "lengths" and valid.mask.convention == "attend", owner


def test_an_imported_class_reads_the_helper_its_own_module_imports(tmp_path):
    # The model imports the encoder's class; the encoder's module imports the mask helper from
    # a third module, read when the encoder's forward is summarised and calls it.
    package = tmp_path / "lib"
    (package / "layers").mkdir(parents=True)
    (package / "models").mkdir()
    (package / "layers" / "masking.py").write_text(
        "def padding_mask(ids, pad_id):\n"
        "    '''(B, S) ids -> (B, S) bool, True at real tokens.'''\n"
        "    return ids.ne(pad_id)\n"
    )
    (package / "models" / "encoder.py").write_text(
        "import torch.nn as nn\n"
        "from ..layers.masking import padding_mask\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self, vocab, d, pad_id):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(vocab, d)\n"
        "        self.pad_id = pad_id\n"
        "    def forward(self, ids):\n"
        "        return self.embed(ids), padding_mask(ids, self.pad_id)\n"
    )
    model = package / "models" / "model.py"
    model.write_text(
        "import torch.nn as nn\n"
        "from .encoder import Encoder\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.encoder = Encoder(100, 32, 0)\n"
        "    def forward(self, ids):\n"
        "        memory, keep = self.encoder(ids)\n"
        "        return memory, keep\n"
    )
    analysis = analyze_module(
        cst.parse_module(model.read_text()), project=Project([package]), path=Path(model)
    )
    keep = function(analysis, "forward", "Model").final_env["keep"]
    assert keep.mask is not None and keep.mask.convention == "attend" and keep.mask.origin != "name"


def test_a_subclass_that_adds_a_parameter_extends_its_base_rather_than_being_a_backend_of_it():
    source = """
        import torch.nn as nn

        class Attention(nn.Module):
            def forward(self, q, k, v, mask=None):
                return q if mask is None else q * mask

        class {name}(Attention):
            def forward(self, q, k, v{extra}, mask=None):
                return q
        """
    backend, _ = analyse(source.format(name="SdpaAttention", extra=""))
    assert ("forward", "mask") in backend.interface_parameters()
    assert not backend.drops_what_its_base_uses(function(backend, "forward", "SdpaAttention"), "mask")
    extended, _ = analyse(source.format(name="RelPositionAttention", extra=", pos_emb"))
    assert extended.drops_what_its_base_uses(function(extended, "forward", "RelPositionAttention"), "mask")
