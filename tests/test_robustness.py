"""Issue 12, Robustness: bad input never crashes the run or loses data.

Each case puts one hostile file next to a good one and runs `attnlint check --fix`: the hostile
file gets its clear message (or is checked correctly), its bytes stay as they were unless a fix
was due, the good file is still fixed, and the exit code says what happened.

Unreadable files: root ignores permission bits, so the permission case runs attnlint as `nobody`
(privileges dropped in a subprocess after the imports, see tests/test_hardening.py); a second
variant makes the open itself fail (monkeypatching `os.open` in attnlint.fileio, the layer every
read goes through), which is how the other unreadable cases (EIO, EACCES on network mounts) look.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from attnlint import cli, fileio

sys.path.insert(0, str(Path(__file__).parent))
from test_hardening import attnlint, shared_dir, unprivileged  # noqa: E402,F401  (fixture re-exported)

T103 = (
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5\n"
    "    return scores.softmax(-1) @ v\n"
)
T103_FIXED = T103.replace("k.T /", "k.transpose(-2, -1) /")
GOOD_LINE = "good.py:3:18: ATN103 [*]"


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def fix_both(cwd: Path, capsys, name: str, data: bytes):
    """`check --fix` over a hostile file and a good one; (exit code, report lines, hostile bytes)."""
    (cwd / name).write_bytes(data)
    (cwd / "good.py").write_text(T103, encoding="utf-8")
    code, out, err = run(capsys, "check", "--fix", "--no-cache", "--output-format", "concise", ".")
    assert "Traceback" not in err
    assert (cwd / "good.py").read_text(encoding="utf-8") == T103_FIXED, "the good file was not fixed"
    return code, out.splitlines(), (cwd / name).read_bytes()


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# (file name, bytes, the report line about it (a prefix), whether the bytes must stay as they are)
UNCHECKABLE = {
    "syntax-error": (b"def attention(q, k:\n    return q @ k.T\n", "bad.py:1:14: ATN001 SyntaxError: '(' was never closed"),
    "python2": (
        b"def attention(q, k):\n    print 'scores', q @ k.T\n",
        "bad.py:2:5: ATN001 SyntaxError: Missing parentheses in call to 'print'",
    ),
    "non-utf8-no-cookie": (
        b"# caf\xe9\n" + T103.encode(),
        "bad.py:1:1: ATN002 cannot read the file: not valid UTF-8 (byte 0xe9 at line 1, byte 6); save it as UTF-8 "
        "or declare its encoding",
    ),
    "unknown-cookie": (b"# -*- coding: klingon -*-\n" + T103.encode(), "bad.py:1:1: ATN002 cannot read the file: unknown encoding: klingon"),
    "nested-2000": (
        ("x = " + "(" * 2000 + "1" + ")" * 2000 + "\n" + T103).encode(),
        "bad.py:1:",  # CPython's column; the message follows
    ),
}


@pytest.mark.parametrize("case", sorted(UNCHECKABLE))
def test_uncheckable_file_is_reported_untouched_and_the_rest_fixed(cwd, capsys, case):
    data, expected = UNCHECKABLE[case]
    code, lines, after = fix_both(cwd, capsys, "bad.py", data)
    assert code == 1
    assert after == data
    bad = [line for line in lines if line.startswith("bad.py:")]
    assert len(bad) == 1 and bad[0].startswith(expected), lines
    if case == "nested-2000":
        assert "ATN001 SyntaxError: too many nested parentheses" in bad[0]


# Files that are fine, only unusual: checked and fixed, with their bytes kept except the fix.
def _fixed(data: bytes, old: bytes = b"k.T /", new: bytes = b"k.transpose(-2, -1) /") -> bytes:
    assert data.count(old) == 1
    return data.replace(old, new)


UNUSUAL = {
    "latin1-cookie": b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + T103.encode("latin-1"),
    "bom": b"\xef\xbb\xbf" + T103.encode(),
    "crlf": T103.replace("\n", "\r\n").encode(),
    "tabs": T103.replace("    ", "\t").encode(),
    "form-feed": b"import torch\n\x0c\n" + T103.encode(),
    "form-feed-in-indent": T103.replace("    scores", "\x0c    scores").encode(),
    "mixed-bom-crlf": b"\xef\xbb\xbf" + T103.replace("\n", "\r\n").encode(),
}


@pytest.mark.parametrize("case", sorted(UNUSUAL))
def test_unusual_but_valid_file_is_fixed_byte_for_byte(cwd, capsys, case):
    data = UNUSUAL[case]
    code, lines, after = fix_both(cwd, capsys, "odd.py", data)
    assert code == 0, lines
    assert after == _fixed(data)


def test_empty_file(cwd, capsys):
    code, lines, after = fix_both(cwd, capsys, "empty.py", b"")
    assert code == 0 and after == b""
    assert lines == ["All checks passed!"] or lines[-1].startswith("Found 1 error (1 fixed")


def test_fifty_thousand_line_generated_file(cwd, capsys):
    # A generated module: a 49,000-line table as text, a thousand statements, then the bug.
    table = '"""Generated table.\n' + "".join(f"row {i}: {i * i}\n" for i in range(49_000)) + '"""\n'
    statements = "".join(f"CONST_{i} = {i}\n" for i in range(1_000))
    data = (table + statements + T103).encode()
    assert data.count(b"\n") > 50_000
    (cwd / "generated.py").write_bytes(data)
    code, out, err = run(capsys, "check", "--no-cache", "--output-format", "concise", "generated.py")
    first_line = table.count("\n") + statements.count("\n") + 3
    assert code == 1
    assert out.splitlines()[0].startswith(f"generated.py:{first_line}:18: ATN103")
    code, out, err = run(capsys, "check", "--fix", "--no-cache", "generated.py")
    assert code == 0
    assert (cwd / "generated.py").read_bytes() == _fixed(data)


@pytest.mark.parametrize(
    "expression",
    ["-" * 2000 + "y", "not " * 2000 + "y", "a if b else " * 2000 + "c", " + ".join(["y"] * 2000), "[" * 199 + "]" * 199],
    ids=["unary", "not", "conditional", "sum", "brackets-199"],
)
def test_two_thousand_deep_expressions_python_accepts_are_checked(cwd, capsys, expression):
    # Valid Python, deeper than the interpreter's default recursion limit allows LibCST's
    # visitors and the analysis to go: checked (on a deep stack) and fixed, not reported as a bug.
    data = ("x = " + expression + "\n" + T103).encode()
    code, lines, after = fix_both(cwd, capsys, "deep.py", data)
    assert code == 0, lines
    assert after == _fixed(data)


def test_directory_named_like_a_python_file(cwd, capsys):
    (cwd / "pkg.py").mkdir()
    (cwd / "pkg.py" / "inner.py").write_text(T103, encoding="utf-8")
    code, out, err = run(capsys, "check", "--no-cache", "--output-format", "concise", ".")
    assert code == 1
    assert out.splitlines()[0].startswith("pkg.py/inner.py:3:18: ATN103")
    code, out, err = run(capsys, "check", "--no-cache", "--output-format", "concise", "pkg.py")
    assert out.splitlines()[0].startswith("pkg.py/inner.py:3:18: ATN103")


def test_broken_symlink(cwd, capsys):
    (cwd / "dangling.py").symlink_to(cwd / "removed.py")
    code, lines, _ = fix_both(cwd, capsys, "unrelated.txt", b"")
    assert code == 1
    assert "dangling.py:1:1: ATN002 cannot read the file: broken symbolic link" in lines[0]


def test_unreadable_file_as_an_unprivileged_user(shared_dir):  # noqa: F811
    bad = shared_dir / "secret.py"
    bad.write_text(T103, encoding="utf-8")
    bad.chmod(0o000)
    good = shared_dir / "good.py"
    good.write_text(T103, encoding="utf-8")
    good.chmod(0o666)
    proc = attnlint("check", "--no-cache", "--output-format", "concise", ".", cwd=shared_dir, user=unprivileged())
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[:2] == [
        "good.py:3:18: ATN103 [*] `k.T` reverses all 3 axes of a batched tensor; use `.transpose(-2, -1)` "
        "to swap only the last two",
        "secret.py:1:1: ATN002 cannot read the file: Permission denied",
    ]


def test_unreadable_file_when_the_open_fails(cwd, capsys, monkeypatch):
    real_open = os.open

    def failing_open(path, flags, *args, **kwargs):
        if str(path).endswith("bad.py"):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(fileio.os, "open", failing_open)
    code, lines, after = fix_both(cwd, capsys, "bad.py", T103.encode())
    assert code == 1
    assert "bad.py:1:1: ATN002 cannot read the file: Input/output error" in lines
    assert after == T103.encode()


def test_file_changed_between_read_and_write(cwd, capsys, monkeypatch):
    from attnlint import engine

    real = engine.write_atomically

    def someone_writes_first(path, decoded, text):
        Path(path).write_text("# rewritten by someone else\n" + T103, encoding="utf-8")
        return real(path, decoded, text)

    monkeypatch.setattr(engine, "write_atomically", someone_writes_first)
    (cwd / "a.py").write_text(T103, encoding="utf-8")
    code, out, err = run(capsys, "check", "--fix", "--no-cache", "--jobs", "1", "--output-format", "concise", "a.py")
    assert code == 1
    assert (cwd / "a.py").read_text(encoding="utf-8") == "# rewritten by someone else\n" + T103
    assert out.splitlines()[0].startswith("a.py:1:1: ATN002 cannot write fixes: the file changed on disk")
