"""Cutting the entry class and what it uses out of a tutorial-style file (LibCST, no torch)."""

from pathlib import Path

import pytest

from attnlint.verify.extract import ExtractionError, extract_entry

DATA = Path(__file__).parent / "data"


def test_seed_keeps_imports_and_the_class_and_drops_demo_code():
    source = (DATA / "seed_self_attention.py").read_text(encoding="utf-8")
    code = extract_entry(source, "SelfAttentionV1")
    assert "import torch\n" in code and "import torch.nn as nn\n" in code
    assert "class SelfAttentionV1(nn.Module):" in code
    assert "queries @ keys.T" in code
    for demo in ("print(", "inputs = torch.tensor", "SelfAttentionV2", "manual_seed"):
        assert demo not in code
    compile(code, "<extracted>", "exec")


def test_module_constants_come_along_but_attribute_namesakes_and_main_guards_do_not():
    source = (DATA / "variants.py").read_text(encoding="utf-8")
    code = extract_entry(source, "LinearSelfAttention")
    assert "SCALE_EXPONENT = 0.5" in code  # read by forward
    assert "import math" not in code  # not used by this class
    causal = extract_entry(source, "CausalAttention")
    assert "import math" in causal
    for unwanted in ("__main__", "SystemExit", 'mask = "a top-level name'):
        assert unwanted not in code and unwanted not in causal


def test_transitive_dependencies_and_future_imports():
    source = (
        "from __future__ import annotations\n"
        "import os\n"
        "import math\n"
        "BASE = 3\n"
        "WIDTH = BASE * 2\n"
        "def helper(x):\n"
        "    return x * WIDTH + math.pi\n"
        "class Entry:\n"
        "    def f(self, x):\n"
        "        return helper(x)\n"
        "print('demo')\n"
    )
    code = extract_entry(source, "Entry")
    assert code.splitlines()[0] == "from __future__ import annotations"
    for needed in ("import math", "BASE = 3", "WIDTH = BASE * 2", "def helper", "class Entry"):
        assert needed in code
    assert "import os" not in code and "print" not in code


def test_last_definition_before_use_wins():
    source = "class Entry:\n    v = 1\n\nclass Entry:\n    v = 2\n"
    code = extract_entry(source, "Entry")
    assert "v = 2" in code and "v = 1" not in code


def test_missing_entry_and_syntax_errors_are_reported():
    with pytest.raises(ExtractionError, match="no top-level 'Nope'"):
        extract_entry("x = 1\n", "Nope")
    with pytest.raises(ExtractionError, match="cannot parse"):
        extract_entry("def broken(:\n", "broken")


def test_guarded_imports_and_config_blocks_are_kept_whole():
    source = (
        "try:\n    import numpy as np\nexcept ImportError:\n    np = None\n"
        "if True:\n    K = 3\nelse:\n    K = 4\n"
        "import json\n"
        "class Entry:\n    def f(self):\n        return np, K\n"
    )
    code = extract_entry(source, "Entry")
    assert "import numpy as np" in code and "np = None" in code and "K = 4" in code
    assert "import json" not in code
