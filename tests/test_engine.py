"""The engine on real files: syntax errors, safe writes, encodings, idempotence, the process pool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attnlint import cli, engine
from attnlint.config import Settings
from attnlint.engine import check_source, fix_source

T103 = (
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5\n"
    "    return scores.softmax(-1) @ v\n"
)
T103_FIXED = T103.replace("k.T /", "k.transpose(-2, -1) /")
T102 = (
    "def forward(self, q, k, v):\n"
    "    b, n, d = q.shape\n"
    "    scores = q @ k.transpose(-2, -1) * d ** -0.5\n"
    "    return scores.softmax(1) @ v\n"
)
# Not Python, but it contains trigger text, so it is parsed (and fails).
BROKEN = "def attention(q, k:\n    return q @ k.T\n"


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def leftovers(directory: Path):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".attnlint-tmp"))


# ---------------------------------------------------------------------------------------------
# Syntax errors
# ---------------------------------------------------------------------------------------------
def test_syntax_error_is_atn001_and_other_files_are_checked(cwd, capsys):
    (cwd / "a_broken.py").write_text(BROKEN, encoding="utf-8")
    (cwd / "b.py").write_text(T103, encoding="utf-8")
    code, out, err = run(capsys, "check", "--output-format", "concise", ".")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("a_broken.py:1:14:")  # where CPython places it: the unclosed `(`
    assert ": ATN001 SyntaxError: " in lines[0]
    assert lines[0].endswith("; the file was not checked")
    assert lines[1].startswith("b.py:3:18: ATN103 [*] ")
    assert lines[2] == "Found 2 errors."
    assert err == ""  # ATN001 is the report; no duplicate warning on stderr


def test_syntax_error_file_untouched_by_fix_others_fixed(cwd, capsys):
    (cwd / "a_broken.py").write_text(BROKEN, encoding="utf-8")
    (cwd / "b.py").write_text(T103, encoding="utf-8")
    code, out, _ = run(capsys, "check", "--fix", "--output-format", "concise", ".")
    assert code == 1  # the syntax error remains
    assert (cwd / "a_broken.py").read_text(encoding="utf-8") == BROKEN
    assert (cwd / "b.py").read_text(encoding="utf-8") == T103_FIXED
    assert "ATN001" in out and "ATN103" not in out


def test_syntax_error_in_check_source():
    result = check_source(BROKEN, "x.py")
    assert result.error is not None and result.error.startswith("SyntaxError")
    (diag,) = result.diagnostics
    assert (diag.code, diag.name, diag.path) == ("ATN001", "syntax-error", "x.py")


def test_syntax_error_json(cwd, capsys):
    (cwd / "a_broken.py").write_text(BROKEN, encoding="utf-8")
    code, out, _ = run(capsys, "check", "--output-format", "json", "a_broken.py")
    assert code == 1
    (item,) = json.loads(out)
    assert item["code"] == "ATN001" and item["fix"] is None


# ---------------------------------------------------------------------------------------------
# Never write bad code; write atomically
# ---------------------------------------------------------------------------------------------
def test_fix_never_writes_unparsable_code(cwd, capsys, monkeypatch):
    (cwd / "a.py").write_text(T103, encoding="utf-8")
    calls = []

    def broken_apply(source, diagnostics):
        calls.append(len(diagnostics))
        return source.replace("k.T", "k.T)(", 1), list(diagnostics)

    monkeypatch.setattr(engine, "apply_fixes", broken_apply)
    code, out, _ = run(capsys, "check", "--fix", "--jobs", "1", "--output-format", "concise", "a.py")
    assert calls, "the patched apply_fixes was not used"
    assert (cwd / "a.py").read_text(encoding="utf-8") == T103
    assert code == 1
    assert out.splitlines()[0].startswith("a.py:3:18: ATN103")
    assert leftovers(cwd) == []


def test_fix_source_never_returns_unparsable_code(monkeypatch):
    monkeypatch.setattr(engine, "apply_fixes", lambda s, d: ("def (:\n", list(d)))
    result = fix_source(T103, "x.py")
    assert result.fixed_source == T103
    assert result.fixed == {}


def test_write_is_atomic_when_replace_fails(cwd, capsys, monkeypatch):
    target = cwd / "a.py"
    target.write_text(T103, encoding="utf-8")

    def failing_replace(src, dst, *args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", failing_replace)
    code, out, err = run(capsys, "check", "--fix", "--jobs", "1", "a.py")
    assert target.read_text(encoding="utf-8") == T103
    assert leftovers(cwd) == []
    assert sorted(p.name for p in cwd.iterdir()) == ["a.py"]
    assert code == 1
    # A finding on the file (every output format carries it), and the fix is not claimed.
    assert "a.py:1:1: ATN002 cannot write fixes: disk on fire" in out
    assert "fixed" not in out


def test_write_atomically_keeps_mode(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(T103, encoding="utf-8")
    os.chmod(path, 0o640)
    engine.write_atomically(path, engine.read_source(path), T103_FIXED)
    assert path.read_text(encoding="utf-8") == T103_FIXED
    assert path.stat().st_mode & 0o777 == 0o640
    assert leftovers(tmp_path) == []


def test_write_atomically_cleans_up_on_encode_midway(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text(T103, encoding="utf-8")

    def boom(fd):
        raise OSError("fsync failed")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        engine.write_atomically(path, engine.read_source(path), T103_FIXED)
    assert path.read_text(encoding="utf-8") == T103
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# Encodings and newlines: byte for byte except the fix
# ---------------------------------------------------------------------------------------------
def _fix_bytes(cwd: Path, capsys, data: bytes) -> bytes:
    path = cwd / "enc.py"
    path.write_bytes(data)
    code, out, err = run(capsys, "check", "--fix", "enc.py")
    assert code == 0, out + err
    return path.read_bytes()


def test_fix_preserves_utf8_bom(cwd, capsys):
    before = b"\xef\xbb\xbf# \xc3\xa9t\xc3\xa9\n" + T103.encode()
    after = _fix_bytes(cwd, capsys, before)
    assert after == b"\xef\xbb\xbf# \xc3\xa9t\xc3\xa9\n" + T103_FIXED.encode()


def test_fix_preserves_crlf(cwd, capsys):
    before = T103.replace("\n", "\r\n").encode()
    after = _fix_bytes(cwd, capsys, before)
    assert after == T103_FIXED.replace("\n", "\r\n").encode()


def test_fix_preserves_latin1_with_cookie(cwd, capsys):
    head = b"# -*- coding: latin-1 -*-\n# caf\xe9 cr\xe8me\n"
    after = _fix_bytes(cwd, capsys, head + T103.encode("latin-1"))
    assert after == head + T103_FIXED.encode("latin-1")


def test_fix_preserves_mixed_bom_and_crlf(cwd, capsys):
    before = b"\xef\xbb\xbf" + T103.replace("\n", "\r\n").encode()
    after = _fix_bytes(cwd, capsys, before)
    assert after == b"\xef\xbb\xbf" + T103_FIXED.replace("\n", "\r\n").encode()


def test_fix_after_form_feed_edits_the_right_line():
    # A form feed (page break, as in CPython's stdlib) on its own line before the finding.
    source = (
        "\x0c\n"
        "def attention(q, k, v):\n"
        "    b, n, d = k.shape\n"
        "    scorez = q @ k.W / d ** 0.5\n"
        "    scores = q @ k.T / d ** 0.5\n"
        "    return (scores + scorez).softmax(-1) @ v\n"
    )
    result = fix_source(source, "x.py")
    assert result.fixed_source == source.replace("k.T", "k.transpose(-2, -1)")


def test_fix_after_unicode_line_separator_in_comment():
    source = "# copied text:\u2028second half\n" + T103
    result = fix_source(source, "x.py")
    assert result.fixed_source == "# copied text:\u2028second half\n" + T103_FIXED


# ---------------------------------------------------------------------------------------------
# Idempotence; many fixes in one run
# ---------------------------------------------------------------------------------------------
MANY = textwrap.dedent(
    """\
    import torch


    def a(q, k, v):
        b, n, d = k.shape
        s1 = q @ k.T / d ** 0.5
        s2 = torch.matmul(q, k.T) / d ** 0.5
        s3 = q.matmul(k.T) * d ** -0.5
        return (s1 + s2 + s3).softmax(-1) @ v


    def b(q, k, v):
        b, n, d = q.shape
        scores = q @ k.transpose(-2, -1) * d ** -0.5
        return scores.softmax(1) @ v
    """
)


def test_several_findings_fixed_in_one_run(cwd, capsys):
    (cwd / "m.py").write_text(MANY, encoding="utf-8")
    code, out, _ = run(capsys, "check", "--fix", "--unsafe-fixes", "--show-fixes", "m.py")
    assert code == 0
    assert (cwd / "m.py").read_text(encoding="utf-8") == (
        MANY.replace("k.T", "k.transpose(-2, -1)").replace("softmax(1)", "softmax(-1)")
    )
    assert out == (
        "Fixed 4 errors:\n"
        "- m.py:\n"
        "    3 × ATN103 (batched-transpose)\n"
        "    1 × ATN102 (softmax-wrong-axis)\n"
        "\n"
        "Found 4 errors (4 fixed, 0 remaining).\n"
    )


@pytest.mark.parametrize("unsafe", [False, True])
def test_fix_is_idempotent(unsafe):
    once = fix_source(MANY, "m.py", Settings(), unsafe=unsafe)
    twice = fix_source(once.fixed_source, "m.py", Settings(), unsafe=unsafe)
    assert twice.fixed_source == once.fixed_source
    assert twice.fixed == {}
    assert once.fixed == ({"ATN103": 3, "ATN102": 1} if unsafe else {"ATN103": 3})


def test_fix_idempotent_on_disk(cwd, capsys):
    (cwd / "m.py").write_text(MANY, encoding="utf-8")
    run(capsys, "check", "--fix", "m.py")
    first = (cwd / "m.py").read_bytes()
    code, out, _ = run(capsys, "check", "--fix", "--exit-non-zero-on-fix", "m.py")
    assert (cwd / "m.py").read_bytes() == first
    assert code == 1  # the unsafe ATN102 remains, nothing was fixed this time
    assert "(0 fixed" not in out and "Found 1 error." in out


def test_unchanged_file_is_not_rewritten(cwd, capsys):
    path = cwd / "clean.py"
    path.write_text("x = 1  # k.T softmax\n", encoding="utf-8")
    os.utime(path, (1_000_000, 1_000_000))
    code, _, _ = run(capsys, "check", "--fix", "clean.py")
    assert code == 0
    assert path.stat().st_mtime == 1_000_000


# ---------------------------------------------------------------------------------------------
# The process pool gives the same answer
# ---------------------------------------------------------------------------------------------
def _tree(root: Path) -> None:
    for i in range(12):
        body = [T103, T102, MANY, "x = 1\n", BROKEN][i % 5]
        (root / f"f{i:02d}.py").write_text(body, encoding="utf-8")


@pytest.mark.parametrize("extra", [[], ["--fix"], ["--fix", "--unsafe-fixes"]])
def test_process_pool_matches_serial(tmp_path, monkeypatch, capsys, extra):
    outputs = {}
    for jobs in ("1", "2"):
        root = tmp_path / f"jobs{jobs}"
        root.mkdir()
        _tree(root)
        monkeypatch.chdir(root)
        code, out, err = run(capsys, "check", "--jobs", jobs, "--output-format", "json", *extra, ".")
        contents = {p.name: p.read_text(encoding="utf-8") for p in sorted(root.iterdir()) if p.is_file()}
        outputs[jobs] = (code, json.loads(out), err, contents)
    assert outputs["1"] == outputs["2"]
    code, data, _, _ = outputs["2"]
    assert code == 1
    assert len({d["filename"] for d in data}) >= 2


def test_process_files_order_and_content(tmp_path):
    _tree(tmp_path)
    jobs = [engine.Job(path=str(p), display=p.name, fix=False, write=False) for p in sorted(tmp_path.iterdir())]
    serial = engine.process_files(jobs, Settings(), workers=1)
    pooled = engine.process_files(jobs, Settings(), workers=2)
    assert [r.path for r in pooled] == [j.display for j in jobs]
    assert [(r.path, r.diagnostics, r.error) for r in pooled] == [(r.path, r.diagnostics, r.error) for r in serial]


# ---------------------------------------------------------------------------------------------
# torch is never imported
# ---------------------------------------------------------------------------------------------
def test_torch_never_imported(tmp_path):
    (tmp_path / "a.py").write_text(T103, encoding="utf-8")
    (tmp_path / "b.py").write_text(MANY, encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import contextlib, io, sys
        import attnlint
        import attnlint.cli
        from attnlint.engine import check_source, fix_source
        assert check_source({T103!r}, "x.py").diagnostics
        assert fix_source({T103!r}, "x.py").fixed
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            for args in (
                ["check", {str(tmp_path)!r}],
                ["check", "--output-format", "sarif", {str(tmp_path)!r}],
                ["check", "--diff", {str(tmp_path)!r}],
                ["rules"],
                ["rule", "--all"],
            ):
                attnlint.cli.main(args)
        heavy = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.") or m == "numpy")
        print("HEAVY=" + ",".join(heavy))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY="


# ---------------------------------------------------------------------------------------------
# Unreadable files
# ---------------------------------------------------------------------------------------------
def test_unreadable_file_is_an_error_and_others_are_checked(cwd, capsys):
    (cwd / "a_bad.py").write_bytes(b'x = "\xff"  # k.T\n')
    (cwd / "b.py").write_text(T103, encoding="utf-8")
    code, out, err = run(capsys, "check", "--fix", "--output-format", "concise", ".")
    assert code == 1
    # Reported like ruff's E902: a finding on the file, so every output format carries it.
    assert "a_bad.py:1:1: ATN002 cannot read the file:" in out
    assert (cwd / "b.py").read_text(encoding="utf-8") == T103_FIXED
    assert (cwd / "a_bad.py").read_bytes() == b'x = "\xff"  # k.T\n'


def test_unreadable_file_summary_does_not_claim_success(cwd, capsys):
    (cwd / "a_bad.py").write_bytes(b'x = "\xff"  # k.T\n')
    code, out, err = run(capsys, "check", "a_bad.py")
    assert code == 1
    assert "All checks passed!" not in out
    assert "Found 1 error." in out


def test_syntax_error_reported_even_without_trigger_words(cwd, capsys):
    # Nothing in the file could interest a rule, so LibCST never parses it; a syntax error is
    # still reported (found by CPython's parser, which is much cheaper).
    (cwd / "plain.py").write_text("def f(:\n    return 1\n", encoding="utf-8")
    code, out, _ = run(capsys, "check", "--output-format", "concise", "--no-cache", ".")
    assert code == 1
    assert out.splitlines()[0].startswith("plain.py:1:7: ATN001 SyntaxError: invalid syntax")


def test_fix_through_a_symlink_rewrites_the_target(cwd, capsys):
    target = cwd / "real.py"
    target.write_text(T103, encoding="utf-8")
    link = cwd / "link.py"
    link.symlink_to(target)
    code, out, _ = run(capsys, "check", "--fix", "--no-cache", "link.py")
    assert code == 0
    assert link.is_symlink()
    assert target.read_text(encoding="utf-8") == T103_FIXED


def test_diff_reports_unparsable_files(cwd, capsys):
    (cwd / "a_broken.py").write_text(BROKEN, encoding="utf-8")
    code, out, err = run(capsys, "check", "--diff", "a_broken.py")
    assert code == 1
    assert out == ""
    assert "a_broken.py: SyntaxError" in err


def test_a_fix_that_would_not_parse_is_skipped_and_the_others_applied(monkeypatch):
    import libcst as cst

    from attnlint.config import Settings
    from attnlint.diagnostics import Applicability
    from attnlint.engine import fix_source
    from attnlint.fixers.transpose import swap_last_two_axes
    from attnlint.rules import batched_transpose
    from attnlint.edits import NodeFix, Replacement

    def broken_for_q(node, spelling="transpose"):
        if isinstance(node.value, cst.Name) and node.value.value == "q":
            # A keyword where an expression belongs: valid as a node, not as Python.
            return NodeFix("broken", Applicability.SAFE, (Replacement(node, cst.Name("lambda")),))
        return swap_last_two_axes(node, spelling)

    monkeypatch.setattr(batched_transpose, "swap_last_two_axes", broken_for_q)
    source = "def f(q, k):\n    b, n, d = k.shape\n    b, n, d = q.shape\n    return (q.T @ k, q @ k.T)\n"
    result = fix_source(source, "x.py", Settings(select=["ATN103"]))
    assert result.fixed_source == source.replace("q @ k.T", "q @ k.transpose(-2, -1)")
    assert result.fixed == {"ATN103": 1}
    assert any("would not parse" in w for w in result.fix_warnings)


# ---------------------------------------------------------------------------------------------
# Facts from other files of the project (`from .data import PAD_ID`)
# ---------------------------------------------------------------------------------------------
PROJECT_DATA = """\
import torch
from torch.nn.utils.rnn import pad_sequence

PAD_ID = {pad}


def collate(batch):
    return pad_sequence([torch.tensor(x) for x in batch], batch_first=True, padding_value=PAD_ID)
"""

PROJECT_TRAIN = """\
import torch.nn.functional as F

from .data import collate


def compute_loss(model, rows):
    batch = collate(rows)
    logits = model(batch[:, :-1])
    targets = batch[:, 1:]
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
"""


def _two_file_project(root: Path, pad: int) -> Path:
    package = root / "pkg"
    package.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "data.py").write_text(PROJECT_DATA.format(pad=pad), encoding="utf-8")
    (package / "train.py").write_text(PROJECT_TRAIN, encoding="utf-8")
    return package / "train.py"


def test_pad_value_from_another_file_of_the_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files are analysed under the path reported, relative to here
    train = _two_file_project(tmp_path, pad=0)
    result = engine.process_file(engine.Job(str(train), "pkg/train.py", fix=False, write=False, use_cache=False), Settings())
    assert [d.code for d in result.diagnostics] == ["ATN201"]
    assert "padded with 0" in result.diagnostics[0].message
    assert [p.name for p in result.depends_on] == ["data.py"]


def test_a_result_built_on_another_file_is_not_served_stale_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train = _two_file_project(tmp_path, pad=0)
    job = engine.Job(str(train), "pkg/train.py", fix=False, write=False, use_cache=True)
    assert [d.code for d in engine.process_file(job, Settings()).diagnostics] == ["ATN201"]
    # The pad id becomes the loss's default ignore_index: train.py itself is unchanged, and the
    # finding must go away (a cache keyed on train.py alone would keep reporting it).
    (tmp_path / "pkg" / "data.py").write_text(PROJECT_DATA.format(pad=-100), encoding="utf-8")
    assert engine.process_file(job, Settings()).diagnostics == []


# An ATN204 buffer whose scores' shape is unknown: the fix inserts a line that reads the lengths.
_UNSLICED_BUFFER = (
    "import torch\n"
    "import torch.nn as nn\n"
    "class A(nn.Module):\n"
    "{i}def __init__(self, n):\n"
    "{i}{i}super().__init__()\n"
    "{i}{i}self.register_buffer('mask', torch.ones(n, n).triu(1).bool())\n"
    "{i}def forward(self, s):\n"
    "{i}{i}# the scores\n"
    "{i}{i}s = s.masked_fill(self.mask, float('-inf'))\n"
    "{i}{i}return s.softmax(-1)\n"
)


@pytest.mark.parametrize("indent,newline", [("    ", "\n"), ("\t", "\n"), ("  ", "\r\n")])
def test_a_fix_inserts_a_line_at_the_statements_indentation_and_newline(indent, newline):
    source = _UNSLICED_BUFFER.format(i=indent).replace("\n", newline)
    fixed = fix_source(source, "x.py", Settings(select=["ATN204"])).fixed_source
    expected = source.replace(
        f"{indent}{indent}s = s.masked_fill(self.mask,",
        f"{indent}{indent}q_len, k_len = s.shape[-2:]{newline}"
        f"{indent}{indent}s = s.masked_fill(self.mask[..., k_len - q_len:k_len, :k_len],",
    )
    assert fixed == expected
    assert check_source(fixed, "x.py", Settings(select=["ATN204"])).diagnostics == []


def test_a_node_evaluated_per_element_is_reported_once():
    # The generator's element is evaluated once for each of q, k and v; it is one place in the code.
    source = textwrap.dedent(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def __init__(self, dim, heads=8, dim_head=64):
                super().__init__()
                self.heads = heads
                self.to_qkv = nn.Linear(dim, heads * dim_head * 3, bias=False)
            def forward(self, x):
                b, n, _ = x.shape
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = (t.reshape(b, self.heads, n, -1) for t in (q, k, v))
                return F.scaled_dot_product_attention(q, k, v)
        """
    )
    found = [(d.code, d.start.line) for d in check_source(source, "x.py").diagnostics]
    assert found == [("ATN106", 12)]


FUNCTIONAL = """\
import math
import torch


def scaled_dot_product(q, k, v, bias=None):
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.size(-1))
    if bias is not None:
        scores = scores + bias
    return scores.softmax(dim=-1) @ v
"""

LAYERS = """\
import torch.nn as nn

from .functional import scaled_dot_product


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, hidden, attn_bias=None):
        B, L, D = hidden.shape
        q, k, v = self.qkv(hidden).view(B, L, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        return scaled_dot_product(q, k, v, bias=attn_bias)


class Encoder(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.attn = SelfAttention(d, heads)

    def forward(self, hidden, attention_mask=None):
        attn_bias = None
        if attention_mask is not None:
            attn_bias = attention_mask[:, None, None, :].to(hidden.dtype){bias}
        return self.attn(hidden, attn_bias)
"""


@pytest.mark.parametrize("bias, codes", [("", ["ATN208"]), (" * -1e4", [])])
def test_a_mask_added_by_a_function_of_another_file_is_reported_where_the_caller_makes_it(tmp_path, monkeypatch, bias, codes):
    monkeypatch.chdir(tmp_path)
    package = tmp_path / "pkg"
    package.mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "functional.py").write_text(FUNCTIONAL, encoding="utf-8")
    layers = package / "layers.py"
    layers.write_text(LAYERS.replace("{bias}", bias), encoding="utf-8")
    job = engine.Job(str(layers), "pkg/layers.py", fix=False, write=False, use_cache=False)
    result = engine.process_file(job, Settings())
    assert [d.code for d in result.diagnostics] == codes
    if codes:
        assert result.diagnostics[0].start.line == 26  # `attn_bias = attention_mask[...]`, not the call


DT_MODEL = """\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size).bool())

    def forward(self, x, attention_mask=None):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        allowed = self.bias[:, :, :T, :T]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :].bool()
        att = att.masked_fill(~allowed, float("-inf"))
        return F.softmax(att, dim=-1) @ v
"""

DT_TRAIN = """\
import numpy as np
from .model import CausalSelfAttention


def get_batch(trajs, K):
    masks = []
    for s_ in trajs:
        tlen = s_.shape[0]
        masks.append(np.concatenate([np.zeros(K - tlen), np.ones(tlen)]))
    return masks
"""


def test_left_padding_done_by_a_neighbour_that_imports_the_model_is_a_dependency(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    package = tmp_path / "dt"
    package.mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    model = package / "model.py"
    model.write_text(DT_MODEL, encoding="utf-8")
    job = engine.Job(str(model), "dt/model.py", fix=False, write=False, use_cache=False)
    assert engine.process_file(job, Settings()).diagnostics == []  # right padding, as far as it shows
    (package / "train.py").write_text(DT_TRAIN, encoding="utf-8")
    result = engine.process_file(job, Settings())
    assert [d.code for d in result.diagnostics] == ["ATN203"]
    assert [p.name for p in result.depends_on] == ["train.py"]
