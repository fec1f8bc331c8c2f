"""The first reading reads each function with the context its callers give it: `__init__`s of
classes that construct others before those others', the other functions last defined first
(analysis._first_reading). What a class's `__init__` leaves, once read again with its callers'
context, is what every summary of its methods reads afterwards. A class imported from another
file of the project is read when it is called, not when it is named."""

from __future__ import annotations

import textwrap

import libcst as cst

from attnlint.analysis import analyze_module
from attnlint.analysis.project import Project
from helpers import analyse, env, only_softmax

# ESM-style: the queries are scaled by `self.scaling` and the scores divided by sqrt(head_dim)
# again; heads are split by a helper method, and the sizes come from the model's constructor
# through a layer's.
SCALED_TWICE = """
    import math
    import torch
    import torch.nn as nn


    class SelfAttention(nn.Module):
        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.num_heads = num_heads
            self.head_dim = embed_dim // num_heads
            self.scaling = self.head_dim ** -0.5
            self.q_proj = nn.Linear(embed_dim, embed_dim)
            self.k_proj = nn.Linear(embed_dim, embed_dim)

        def _heads(self, x):
            b, n, _ = x.shape
            return x.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

        def forward(self, x):
            q = self._heads(self.q_proj(x)) * self.scaling
            k = self._heads(self.k_proj(x))
            attn = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(self.head_dim)
            return attn.softmax(dim=-1)


    class Layer(nn.Module):
        def __init__(self, embed_dim, heads):
            super().__init__()
            self.attn = SelfAttention(embed_dim, heads)

        def forward(self, x):
            return self.attn(x)


    class Model(nn.Module):
        def __init__(self, embed_dim=64, heads=4):
            super().__init__()
            self.layers = nn.ModuleList(Layer(embed_dim, heads) for _ in range(2))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x


    model = Model(embed_dim=64, heads=4)
"""


def test_scale_and_head_dim_are_in_the_same_terms_through_a_constructor_chain():
    # The attention's attributes are made of the model's sizes (its __init__ is read with the
    # layer's context); the helper splitting heads is summarised with those attributes, not
    # with the ones its class had before: the scale is 1/head_dim in the head dimension's terms.
    analysis, _ = analyse(SCALED_TWICE)
    scores = only_softmax(analysis).input.scores
    assert scores.head_dim.text() == "embed_dim / heads"
    assert (scores.scale * scores.head_dim).text() == "1"


def test_a_class_read_before_its_caller_gets_the_callers_context():
    # Source order puts the attention first; the model's __init__ passes its sizes down and
    # the attention's attribute is the model's quantity.
    analysis, _ = analyse(SCALED_TWICE)
    assert analysis.classes["SelfAttention"].attrs["head_dim"].sym.text() == "embed_dim / heads"


HELPER_BEFORE_CALLER = """
    import torch


    def attend(q, k):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1)


    def block(x):
        b, n, d = x.shape
        return attend(x, x)
"""


def test_a_function_defined_before_its_caller_is_read_with_the_callers_arguments():
    analysis, _ = analyse(HELPER_BEFORE_CALLER)
    q = env(analysis, "attend", "q")
    assert q.rank == 3


def _package(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return Project([tmp_path])


def test_an_imported_class_named_only_in_an_annotation_leaves_its_module_unread(tmp_path):
    project = _package(
        tmp_path,
        {
            "config.py": """
                class ModelConfig:
                    def __init__(self, pad_id=0):
                        self.pad_id = pad_id
            """,
            "model.py": """
                import torch.nn as nn
                from .config import ModelConfig


                class Model(nn.Module):
                    config_class = ModelConfig

                    def __init__(self, config: ModelConfig):
                        super().__init__()
                        self.proj = nn.Linear(4, 4)
            """,
        },
    )
    path = tmp_path / "model.py"
    analysis = analyze_module(cst.parse_module(path.read_text()), project=project, path=path)
    assert (tmp_path / "config.py") not in project._analyses  # not parsed
    assert tmp_path / "config.py" in [p.resolve() for p in analysis.imported_files]  # but depended on


def test_an_imported_class_called_is_read(tmp_path):
    project = _package(
        tmp_path,
        {
            "vocab.py": """
                class Vocab:
                    def __init__(self):
                        self.pad_idx = 1
            """,
            "train.py": """
                from .vocab import Vocab

                vocab = Vocab()
                PAD = vocab.pad_idx
            """,
        },
    )
    path = tmp_path / "train.py"
    analyze_module(cst.parse_module(path.read_text()), project=project, path=path)
    assert [p.name for p in project._analyses] == ["vocab.py"]
