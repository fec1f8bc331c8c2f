"""Issue 13, "Hardening": runs that died, hung or lied, and the CLI a ruff user expects.

Each test builds its pathological input itself. Unreadable paths: the tests may run as root, who
ignores permission bits, so those runs drop privileges to `nobody` in a subprocess (`user=`);
when the tests run unprivileged the same subprocess simply runs as the current user.
"""

from __future__ import annotations

import io
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from attnlint import cli, engine
from attnlint.config import Settings
from attnlint.diagnostics import ISSUES_URL
from attnlint.terminal import Progress, colourise, wants_colour

REPO = Path(__file__).resolve().parents[1]

T103 = (
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5\n"
    "    return scores.softmax(-1) @ v\n"
)
T103_FIXED = T103.replace("k.T /", "k.transpose(-2, -1) /")
MSG103 = "`k.T` reverses all 3 axes of a batched tensor; use `.transpose(-2, -1)` to swap only the last two"
# Trigger text, so the engine does not skip the file before parsing.
HEADER = "def attention(q, k):\n    return (q @ k.transpose(-2, -1)).softmax(-1)\n"


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# Runs attnlint with root's privileges dropped. The interpreter lives where `nobody` may not
# read (root's home), so everything is imported first, then the process becomes `nobody`.
_AS_UNPRIVILEGED = """
import os, sys
import attnlint.cli, attnlint.engine, attnlint.discovery, attnlint.reporters, attnlint.analysis
import attnlint.fileio, attnlint.filecodes, attnlint.terminal, attnlint.noqa, attnlint.cache
import attnlint.reporters.text, attnlint.rules.registry, difflib, traceback, importlib, importlib.util
import libcst, libcst.metadata, pkgutil
attnlint.rules.registry.all_rules()
# Every module attnlint may import lazily, and LibCST's native parser (loaded on first parse).
for info in pkgutil.walk_packages(attnlint.__path__, "attnlint."):
    if not info.name.startswith(("attnlint.server", "attnlint.verify", "attnlint.__main__")):
        importlib.import_module(info.name)
libcst.parse_module("x = 1")
uid = int(sys.argv[1])
os.setgroups([]); os.setgid(uid); os.setuid(uid)
sys.exit(attnlint.cli.main(sys.argv[2:]))
"""


def attnlint(*argv, cwd, user=None):
    """`python -m attnlint ARGV` in a subprocess (so a crash or a hang cannot hide); as the
    user id `user` when given."""
    command = [sys.executable, "-m", "attnlint", *argv]
    if user is not None:
        command = [sys.executable, "-c", _AS_UNPRIVILEGED, str(user), *argv]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,  # a guard against a hang, not a timing assertion
        cwd=cwd,
    )


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def shared_dir():
    """A directory `nobody` can enter (pytest's tmp_path is private to its owner)."""
    path = Path(tempfile.mkdtemp(prefix="attnlint-hardening-"))
    path.chmod(0o755)
    yield path
    for root, dirs, _files in os.walk(path):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    shutil.rmtree(path, ignore_errors=True)


def unprivileged():
    """The user to run as so that permission bits apply (None: we are not root already)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:  # pragma: no cover - a system without `nobody`
        pytest.skip("no unprivileged user to test permissions with")


# ---------------------------------------------------------------------------------------------
# Runs that died
# ---------------------------------------------------------------------------------------------
def test_two_thousand_nested_parentheses_do_not_crash_the_run(cwd):
    # LibCST's native parser segfaults on this (exit 139, no output); CPython refuses it first.
    (cwd / "deep.py").write_text(HEADER + "x = " + "(" * 2000 + "1" + ")" * 2000 + "\n", encoding="utf-8")
    (cwd / "good.py").write_text(T103, encoding="utf-8")
    proc = attnlint("check", "--no-cache", "--output-format", "concise", ".", cwd=cwd)
    assert proc.returncode == 1, proc.stderr
    deep, good = proc.stdout.splitlines()[:2]
    assert deep.startswith("deep.py:3:")
    assert deep.endswith(": ATN001 SyntaxError: too many nested parentheses; the file was not checked")
    assert good == f"good.py:3:18: ATN103 [*] {MSG103}"


def test_nested_parentheses_after_an_earlier_syntax_error_never_reach_libcst():
    # CPython stops at the first error; the nesting after it must still keep LibCST away.
    source = "def (:\n" + HEADER + "x = " + "(" * 2000 + "1" + ")" * 2000 + "\n"
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from attnlint.engine import check_source; "
         "print([d.code for d in check_source(sys.stdin.read(), 'x.py').diagnostics])"],
        input=source, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['ATN001']"


@pytest.mark.parametrize(
    "expression",
    [
        "-" * 100_000 + "y",  # CPython's parser runs out of stack: MemoryError
        " + ".join(["y"] * 20_000),  # AST construction: RecursionError (LibCST takes minutes)
        "not " * 3000 + "y",
    ],
    ids=["unary-100k", "sum-20k", "not-3k"],
)
def test_expressions_cpython_rejects_as_too_deep_are_syntax_errors(expression):
    result = engine.check_source(HEADER + "x = " + expression + "\n", "deep.py")
    assert [d.code for d in result.diagnostics] == ["ATN001"]
    assert "too deeply nested" in result.diagnostics[0].message
    assert not result.internal_error


def test_twenty_thousand_concatenated_strings_are_not_a_syntax_error():
    # Valid Python (CPython parses it); LibCST's parser gives up on it. Not ATN001: the file is
    # fine, attnlint cannot read it, and says so as its own failure.
    source = HEADER + "TABLE = (\n" + "".join(f'    "entry {i} "\n' for i in range(20_000)) + ")\n"
    result = engine.check_source(source, "strings.py")
    assert [d.code for d in result.diagnostics] == ["ATN003"]
    # 20,000 adjacent strings are one chain of 19,999 links: the guard keeps it from LibCST.
    assert "chains more than 2,000 operators" in result.diagnostics[0].message
    # Without attention code in it the file is never handed to LibCST, and it is clean.
    plain = "TABLE = (\n" + "".join(f'    "entry {i} "\n' for i in range(20_000)) + ")\n"
    assert engine.check_source(plain, "strings.py").diagnostics == []


@pytest.mark.parametrize(
    "expression",
    [
        " and ".join(["y"] * 20_000),  # LibCST's native parser segfaults (CPython: one flat BoolOp)
        "y" + "()" * 2_500,  # call trailers: LibCST's time grows faster than the square
        "(y\n" + " + y\n" * 2_500 + ")",  # a chain over many lines, inside brackets
    ],
    ids=["and-20k", "calls-2.5k", "sum-over-lines"],
)
def test_operator_chains_libcst_cannot_take_never_reach_it(expression, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("LibCST was given the file")

    monkeypatch.setattr(engine.cst, "parse_module", refuse)
    result = engine.check_source(HEADER + "x = " + expression + "\n", "chain.py")
    assert [d.code for d in result.diagnostics] == ["ATN003"]
    assert "chains more than 2,000 operators" in result.diagnostics[0].message


def test_long_but_ordinary_lines_are_not_mistaken_for_chains():
    from attnlint.parseguard import chain_too_long, longest_chain

    table = "VOCAB = [" + ", ".join(f"'tok{i}'" for i in range(20_000)) + "]\n"
    prose = '"""' + "This is not a chain, and it is long. " * 500 + '"""\n'
    sums = "".join(f"x{i} = a + b * c - d.e.f(g)[h]\n" for i in range(5_000))
    for source in (table, prose, sums):
        assert not chain_too_long(source)
    assert longest_chain("x = a.b.c(d)[e] + f\n") == 5  # . . ( [ + (the trailers link to what precedes)


def test_an_imported_module_gets_the_guard_too(tmp_path):
    # The project reader parses what a checked file imports: a hostile module next to it must
    # not take the run down (it used to reach LibCST unguarded, and segfault).
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (tmp_path / "deep.py").write_text("PAD = " + "(" * 2000 + "0" + ")" * 2000 + "\n", encoding="utf-8")
    (tmp_path / "chained.py").write_text("PAD = " + " and ".join(["0"] * 5_000) + "\n", encoding="utf-8")
    (tmp_path / "main.py").write_text("from deep import PAD\nfrom chained import PAD as P2\n" + T103, encoding="utf-8")
    proc = attnlint("check", "--no-cache", "--output-format", "concise", "main.py", cwd=tmp_path)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stdout.splitlines()[0] == f"main.py:5:18: ATN103 [*] {MSG103}"


def _crash_on(name):
    real = engine.check_source

    def check_source(source, path="<stdin>", settings=None, **kwargs):
        if path.endswith(name):
            # What a native parser crash looks like to the pool: the worker dies at once.
            os.kill(os.getpid(), signal.SIGKILL)
        return real(source, path, settings, **kwargs)

    return check_source


def test_a_worker_that_dies_costs_its_file_only(tmp_path, monkeypatch):
    # Workers are forked, so they inherit the patched engine.
    monkeypatch.setattr(engine, "check_source", _crash_on("f03.py"))
    # Twelve small files would be checked in this process (a pool does not pay for them): this
    # test is about the pool, so it asks for one.
    from attnlint import scheduling

    monkeypatch.setattr(scheduling, "POOL_MIN_BYTES", 0)
    jobs = []
    for i in range(12):
        path = tmp_path / f"f{i:02d}.py"
        path.write_text(T103, encoding="utf-8")
        jobs.append(engine.Job(path=str(path), display=path.name, fix=False, write=False))
    results = engine.process_files(jobs, Settings(), workers=2)
    assert [r.path for r in results] == [job.display for job in jobs]
    crashed = [r for r in results if r.internal_error]
    assert [r.path for r in crashed] == ["f03.py"]
    assert crashed[0].diagnostics[0].code == "ATN003"
    assert "crashed" in crashed[0].diagnostics[0].message
    others = [r for r in results if not r.internal_error]
    assert all([d.code for d in r.diagnostics] == ["ATN103"] for r in others)


def test_an_uncaught_crash_exits_2_and_says_where_to_report(cwd, capsys, monkeypatch):
    (cwd / "a.py").write_text(T103, encoding="utf-8")

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    from attnlint import scheduling

    monkeypatch.setattr(scheduling, "process_files", broken)
    code, out, err = run(capsys, "check", "a.py")
    assert code == 2  # 1 would read as "findings remain"
    assert "attnlint: error: internal error: RuntimeError: boom" in err
    assert ISSUES_URL in err


# ---------------------------------------------------------------------------------------------
# Paths that hung or raised
# ---------------------------------------------------------------------------------------------
def test_symlink_loop_is_reported_and_the_rest_checked(cwd):
    (cwd / "loop_a.py").symlink_to(cwd / "loop_b.py")
    (cwd / "loop_b.py").symlink_to(cwd / "loop_a.py")
    (cwd / "good.py").write_text(T103, encoding="utf-8")
    proc = attnlint("check", "--no-cache", "--output-format", "concise", ".", cwd=cwd)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.splitlines()[:3] == [
        f"good.py:3:18: ATN103 [*] {MSG103}",
        "loop_a.py:1:1: ATN002 cannot read the file: symbolic link loop",
        "loop_b.py:1:1: ATN002 cannot read the file: symbolic link loop",
    ]


def test_named_pipe_never_hangs(cwd):
    os.mkfifo(cwd / "pipe.py")
    (cwd / "good.py").write_text(T103, encoding="utf-8")
    for argv in ((".",), ("pipe.py", "good.py")):
        proc = attnlint("check", "--no-cache", "--output-format", "concise", *argv, cwd=cwd)
        assert proc.returncode == 1, proc.stderr
        assert "pipe.py:1:1: ATN002 cannot read the file: not a regular file (a named pipe)" in proc.stdout
        assert f"good.py:3:18: ATN103 [*] {MSG103}" in proc.stdout


def test_a_pipe_swapped_in_after_discovery_is_not_read(tmp_path):
    # The check is on the open descriptor (opened non-blocking), not on an earlier stat.
    os.mkfifo(tmp_path / "late.py")
    result = engine.process_file(engine.Job(str(tmp_path / "late.py"), "late.py", False, False), Settings())
    assert result.diagnostics[0].code == "ATN002"
    assert "named pipe" in result.diagnostics[0].message


def test_file_in_unreadable_directory_named_on_the_command_line(shared_dir):
    locked = shared_dir / "locked"
    locked.mkdir()
    (locked / "x.py").write_text(T103, encoding="utf-8")
    (shared_dir / "good.py").write_text(T103, encoding="utf-8")
    (shared_dir / "good.py").chmod(0o644)
    locked.chmod(0o000)
    proc = attnlint(
        "check", "--no-cache", "--output-format", "concise", "locked/x.py", "good.py",
        cwd=shared_dir, user=unprivileged(),
    )
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[:2] == [
        f"good.py:3:18: ATN103 [*] {MSG103}",
        "locked/x.py:1:1: ATN002 cannot read the file: Permission denied",
    ]


def test_unreadable_directory_in_a_walk_is_reported(shared_dir):
    src = shared_dir / "src"
    (src / "locked").mkdir(parents=True)
    (src / "locked" / "x.py").write_text(T103, encoding="utf-8")
    (src / "good.py").write_text(T103, encoding="utf-8")
    for path in (src, src / "good.py"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    (src / "locked").chmod(0o000)
    proc = attnlint("check", "--no-cache", "--output-format", "concise", "src", cwd=shared_dir, user=unprivileged())
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[:2] == [
        f"src/good.py:3:18: ATN103 [*] {MSG103}",
        "src/locked:1:1: ATN002 cannot read the directory: Permission denied",
    ]


def test_output_file_in_a_missing_directory_is_created(cwd, capsys):
    (cwd / "a.py").write_text(T103, encoding="utf-8")
    code, out, err = run(capsys, "check", "-o", "no/such/dir/out.txt", "a.py")
    assert code == 1
    assert out == ""
    assert (cwd / "no/such/dir/out.txt").read_text(encoding="utf-8").startswith(f"a.py:3:18: ATN103 [*] {MSG103}")


def test_output_file_that_cannot_be_written_is_a_usage_error_and_nothing_is_fixed(cwd, capsys):
    (cwd / "a.py").write_text(T103, encoding="utf-8")
    code, out, err = run(capsys, "check", "--fix", "-o", "a.py/out.txt", "a.py")
    assert code == 2
    assert err.strip().splitlines() == ["attnlint: error: cannot write the report to a.py/out.txt: a.py is not a directory"]
    assert (cwd / "a.py").read_text(encoding="utf-8") == T103


# ---------------------------------------------------------------------------------------------
# Writes that lied or lost data
# ---------------------------------------------------------------------------------------------
def test_fixes_in_a_read_only_directory_are_not_claimed(shared_dir):
    # `nobody` may write the file (0666) but not the directory: the temp file cannot be made.
    target = shared_dir / "a.py"
    target.write_text(T103, encoding="utf-8")
    target.chmod(0o666)
    proc = attnlint("check", "--no-cache", "--fix", "a.py", cwd=shared_dir, user=unprivileged())
    assert proc.returncode == 1, proc.stderr
    assert target.read_text(encoding="utf-8") == T103
    assert "All checks passed!" not in proc.stdout
    assert "a.py:1:1: ATN002 cannot write fixes: Permission denied" in proc.stdout
    assert f"a.py:3:18: ATN103 [*] {MSG103}" in proc.stdout  # the finding, as it still is on disk
    proc = attnlint("check", "--no-cache", "--fix", "--output-format", "json", "a.py", cwd=shared_dir,
                    user=unprivileged())
    records = json.loads(proc.stdout)
    assert [r["code"] for r in records] == ["ATN002", "ATN103"]
    # The JSON shows the finding and its (unapplied) fix, never the fixed text as if on disk.
    assert records[1]["location"] == {"row": 3, "column": 18}
    assert target.read_text(encoding="utf-8") == T103


def test_a_file_edited_while_fix_runs_keeps_the_edit(cwd, capsys, monkeypatch):
    target = cwd / "a.py"
    target.write_text(T103, encoding="utf-8")
    edited = T103 + "# saved by the editor meanwhile\n"
    real_fix_source = engine.fix_source

    def editor_saves_meanwhile(source, path, settings=None, unsafe=None, **options):
        result = real_fix_source(source, path, settings, unsafe, **options)
        target.write_text(edited, encoding="utf-8")
        return result

    monkeypatch.setattr(engine, "fix_source", editor_saves_meanwhile)
    code, out, err = run(capsys, "check", "--fix", "--no-cache", "--jobs", "1", "--output-format", "concise", "a.py")
    assert target.read_text(encoding="utf-8") == edited
    assert code == 1
    assert out.splitlines()[0] == (
        "a.py:1:1: ATN002 cannot write fixes: the file changed on disk while attnlint was fixing it; "
        "fixes were not written"
    )


def test_read_only_file_is_not_rewritten(cwd, capsys):
    target = cwd / "a.py"
    target.write_text(T103, encoding="utf-8")
    target.chmod(0o444)
    code, out, err = run(capsys, "check", "--fix", "--no-cache", "--output-format", "concise", "a.py")
    assert target.read_text(encoding="utf-8") == T103
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
    assert code == 1
    assert out.splitlines()[0] == (
        "a.py:1:1: ATN002 cannot write fixes: the file is read-only (mode 0444); fixes were not written"
    )


def test_hard_links_survive_a_fix(cwd, capsys):
    # ruff writes in place (std::fs::write), so every name of the file sees the fix.
    first = cwd / "a.py"
    first.write_text(T103, encoding="utf-8")
    second = cwd / "other_name.py"
    os.link(first, second)
    inode = first.stat().st_ino
    code, out, err = run(capsys, "check", "--fix", "--no-cache", "a.py")
    assert code == 0, out + err
    assert first.stat().st_ino == inode and first.stat().st_nlink == 2
    assert second.read_text(encoding="utf-8") == T103_FIXED
    assert [p.name for p in cwd.iterdir() if p.name.endswith(".attnlint-tmp")] == []


# ---------------------------------------------------------------------------------------------
# Paths and stdin
# ---------------------------------------------------------------------------------------------
def test_a_symlink_is_reported_under_the_name_given(cwd, capsys):
    (cwd / "real.py").write_text(T103, encoding="utf-8")
    (cwd / "link.py").symlink_to("real.py")
    (cwd / "dangling.py").symlink_to("gone.py")
    code, out, err = run(capsys, "check", "--no-cache", "--output-format", "concise", "link.py", "dangling.py")
    assert code == 1
    assert out.splitlines()[:2] == [
        "dangling.py:1:1: ATN002 cannot read the file: broken symbolic link (to gone.py)",
        f"link.py:3:18: ATN103 [*] {MSG103}",
    ]


def test_stdin_filename_without_dash_reads_stdin(cwd, capsys, monkeypatch):
    (cwd / "on_disk.py").write_text(T103, encoding="utf-8")  # must not be linted instead
    monkeypatch.setattr(sys, "stdin", io.StringIO(T103))
    code, out, err = run(capsys, "check", "--stdin-filename", "editor.py", "--output-format", "concise")
    assert code == 1
    assert out.splitlines()[0] == f"editor.py:3:18: ATN103 [*] {MSG103}"
    assert "on_disk.py" not in out


def test_dash_next_to_other_paths(cwd, capsys, monkeypatch):
    (cwd / "a.py").write_text(T103, encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO(T103))
    code, out, err = run(capsys, "check", "--output-format", "concise", "a.py", "-")
    assert code == 1
    assert out.splitlines()[:2] == [f"a.py:3:18: ATN103 [*] {MSG103}", f"-:3:18: ATN103 [*] {MSG103}"]


def test_stdin_bytes_are_decoded_by_their_cookie(cwd):
    source = "# -*- coding: latin-1 -*-\n# café\n" + T103
    proc = subprocess.run(
        [sys.executable, "-m", "attnlint", "check", "--output-format", "concise", "-"],
        input=source.encode("latin-1"), capture_output=True, timeout=300, cwd=cwd,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.decode().splitlines()[0] == f"-:5:18: ATN103 [*] {MSG103}"


# ---------------------------------------------------------------------------------------------
# ruff's flags
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def project(cwd):
    (cwd / "src").mkdir()
    (cwd / "src" / "model.py").write_text(T103, encoding="utf-8")
    (cwd / "tests").mkdir()
    (cwd / "tests" / "test_model.py").write_text(T103, encoding="utf-8")
    return cwd


def _paths(out):
    return sorted({line.split(":")[0] for line in out.splitlines() if ": ATN" in line})


def test_quiet_prints_findings_without_summary(project, capsys):
    code, out, err = run(capsys, "check", "-q", "--output-format", "concise", "src")
    assert code == 1
    assert out.splitlines() == [f"src/model.py:3:18: ATN103 [*] {MSG103}"]


def test_silent_prints_nothing_but_exits_1(project, capsys):
    code, out, err = run(capsys, "check", "-s", "src")
    assert (code, out, err) == (1, "", "")


def test_verbose_says_what_it_checks(project, capsys):
    code, out, err = run(capsys, "check", "-v", "--no-cache", "src")
    assert "attnlint: checking 1 file with settings from the defaults" in err


def test_exclude_and_extend_exclude(project, capsys):
    assert _paths(run(capsys, "check", "--extend-exclude", "tests", ".")[1]) == ["src/model.py"]
    assert _paths(run(capsys, "check", "--exclude", "src", ".")[1]) == ["tests/test_model.py"]


def test_per_file_ignores_flags(project, capsys):
    (project / "pyproject.toml").write_text('[tool.attnlint]\nper-file-ignores = { "src/*" = ["ATN103"] }\n')
    assert _paths(run(capsys, "check", ".")[1]) == ["tests/test_model.py"]
    # --per-file-ignores replaces the config's table, --extend-per-file-ignores adds to it.
    assert _paths(run(capsys, "check", "--per-file-ignores", "tests/*:atn103", ".")[1]) == ["src/model.py"]
    assert _paths(run(capsys, "check", "--extend-per-file-ignores", "tests/*:ATN1", ".")[1]) == []


def test_fixable_and_unfixable(project, capsys):
    code, out, _ = run(capsys, "check", "--fix", "--unfixable", "ATN103", "src")
    assert (project / "src" / "model.py").read_text(encoding="utf-8") == T103
    code, out, _ = run(capsys, "check", "--fix", "--fixable", "ATN103", "src")
    assert (project / "src" / "model.py").read_text(encoding="utf-8") == T103_FIXED


def test_ignore_noqa(project, capsys):
    (project / "src" / "model.py").write_text(T103.replace("d ** 0.5\n", "d ** 0.5  # noqa: ATN103\n"))
    assert run(capsys, "check", "src")[0] == 0
    code, out, _ = run(capsys, "check", "--ignore-noqa", "src")
    assert code == 1 and "ATN103" in out


def test_isolated_ignores_the_configuration(project, capsys):
    (project / "pyproject.toml").write_text('[tool.attnlint]\nignore = ["ATN103"]\n')
    assert run(capsys, "check", "src")[0] == 0
    assert run(capsys, "check", "--isolated", "src")[0] == 1
    code, _, err = run(capsys, "check", "--isolated", "--config", "pyproject.toml", "src")
    assert code == 2 and "--config and --isolated cannot be used together" in err


def test_show_files(project, capsys):
    code, out, _ = run(capsys, "check", "--show-files", ".")
    assert (code, out.splitlines()) == (0, ["src/model.py", "tests/test_model.py"])


def test_show_settings(project, capsys):
    code, out, _ = run(capsys, "check", "--show-settings", "--ignore", "ATN2", "src")
    assert code == 0
    assert "ignore = ['ATN2']" in out.splitlines()
    assert "enabled for src/model.py: ATN100, ATN101, ATN102, ATN103" in out


def test_cache_dir(project, capsys):
    run(capsys, "check", "--cache-dir", "elsewhere", "src")
    assert any(p.is_file() for p in (project / "elsewhere").rglob("*") if p.name != ".gitignore")
    assert not (project / ".attnlint_cache").exists()


def test_colour_on_request_and_never_when_piped(project, capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    _, plain, _ = run(capsys, "check", "src")  # captured stdout is not a terminal
    assert "\x1b[" not in plain
    _, coloured, _ = run(capsys, "check", "--color", "src")
    assert "\x1b[1m\x1b[31mATN103\x1b[0m" in coloured
    assert "\x1b[" not in run(capsys, "check", "--no-color", "src")[1]


def test_colour_follows_the_terminal_and_no_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert wants_colour(None, Tty()) is True
    assert wants_colour(None, io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert wants_colour(None, Tty()) is False
    assert wants_colour(True, Tty()) is True
    # Colour is laid over the text: the words are unchanged.
    text = f"a.py:3:18: ATN103 [*] {MSG103}\nFound 1 error.\n"
    assert __import__("re").sub(r"\x1b\[[0-9;]*[mK]", "", colourise(text)) == text


def test_watch_checks_then_waits(project, capsys, monkeypatch):
    waited = []

    def wait_then_stop(snapshot):
        waited.append(snapshot())
        raise KeyboardInterrupt  # Ctrl-C while waiting

    monkeypatch.setattr(cli, "_wait_for_change", wait_then_stop)
    code, out, err = run(capsys, "check", "--watch", "src")
    assert code == 0
    assert "ATN103" in out and "Watching for file changes." in err
    assert list(waited[0]) == ["src/model.py"]  # it watches the files it checks


def test_progress_on_a_terminal_only(project, capsys, monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    for i in range(Progress.MIN_FILES):
        (project / "src" / f"m{i}.py").write_text("x = 1\n", encoding="utf-8")
    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    cli.main(["check", "--jobs", "1", "--no-cache", "src"])
    total = Progress.MIN_FILES + 1
    assert f"\rChecked {total}/{total} files" in tty.getvalue()
    monkeypatch.undo()
    monkeypatch.chdir(project)
    code, out, err = run(capsys, "check", "--jobs", "1", "--no-cache", "src")
    assert "Checked" not in err  # not a terminal: silent (CI logs)


# ---------------------------------------------------------------------------------------------
# Usage errors and pages
# ---------------------------------------------------------------------------------------------
def test_usage_error_shows_the_subcommand_usage(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["check", "--no-such-flag"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.startswith("usage: attnlint check ")
    assert "attnlint: error: unrecognized arguments: --no-such-flag" in err


def test_rule_without_a_code_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["rule"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: attnlint rule ") and "a rule code is required" in err


def test_select_is_case_insensitive(cwd, capsys):
    (cwd / "a.py").write_text(T103, encoding="utf-8")
    code, out, err = run(capsys, "check", "--select", "atn103", "--output-format", "concise", "a.py")
    assert code == 1 and out.splitlines()[0] == f"a.py:3:18: ATN103 [*] {MSG103}"


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_positive(capsys, jobs):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["check", "--jobs", jobs, "."])
    assert exit_info.value.code == 2
    assert "argument --jobs/-j" in capsys.readouterr().err


@pytest.mark.parametrize("code, name", [("ATN001", "syntax-error"), ("atn002", "io-error"), ("ATN003", "internal-error")])
def test_file_code_pages(capsys, code, name):
    status, out, _ = run(capsys, "rule", code)
    assert status == 0
    assert out.startswith(f"# {name} ({code.upper()})")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety"):
        assert section in out
    status, out, _ = run(capsys, "rule", code, "--output-format", "json")
    assert json.loads(out)["name"] == name


def test_internal_error_page_says_where_to_report(capsys):
    assert ISSUES_URL in run(capsys, "rule", "ATN003")[1]


# ---------------------------------------------------------------------------------------------
# verify's errors: one line, exit 2
# ---------------------------------------------------------------------------------------------
def test_verify_errors_are_one_line(cwd, capsys, monkeypatch):
    from attnlint.rules import registry

    (cwd / "a.py").write_text(T103, encoding="utf-8")
    (cwd / "pkg").mkdir()
    cases = {
        ("ATN103", "missing.py"): "attnlint: error: no such file or directory: missing.py",
        ("ATN999", "a.py"): "attnlint: error: unknown rule 'ATN999'; known: "
        + ", ".join(r.code for r in registry.all_rules()),
    }
    for (code, target), expected in cases.items():
        status, out, err = run(capsys, "verify", code, target, "--entry", "attention")
        assert (status, err.strip().splitlines()) == (2, [expected])
    # A directory is a set of files to verify (every fixable finding in it), not an error.
    status, out, err = run(capsys, "verify", "pkg")
    assert (status, out.strip()) == (0, "No fixable findings to verify.")

    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name, *a)
    )
    status, out, err = run(capsys, "verify", "ATN103", "a.py", "--entry", "attention")
    assert status == 2
    assert err.strip().splitlines() == [
        "attnlint: error: verification needs torch: pip install torch==2.13.0"
    ]


# ---------------------------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------------------------
def test_readme_verify_install_works_from_a_clone():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    # `attnlint` is not on PyPI, and the bare extra would pull an unpinned (CUDA) torch.
    assert "pip install 'attnlint[verify]'" not in readme
    assert "pip install torch==2.13.0 && pip install '.[verify]'" in readme


def test_readme_pre_commit_rev_names_no_missing_tag():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    revs = [line.split("rev:", 1)[1].split("#")[0].strip() for line in readme.splitlines() if "rev:" in line]
    assert revs, "the README has a pre-commit snippet"
    tags = subprocess.run(["git", "tag", "--list"], cwd=REPO, capture_output=True, text=True).stdout.split()
    for rev in revs:
        looks_like_tag = rev[:1] == "v" and rev[1:2].isdigit()
        assert not looks_like_tag or rev in tags, f"rev {rev!r} names a tag that does not exist"


def test_dash_with_other_paths_cannot_be_fixed_in_one_run(cwd, capsys, monkeypatch):
    (cwd / "a.py").write_text(T103, encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO(T103))
    code, out, err = run(capsys, "check", "--fix", "a.py", "-")
    assert code == 2 and "cannot be fixed together with other paths" in err
    assert (cwd / "a.py").read_text(encoding="utf-8") == T103


def test_bracket_depth_ignores_strings_and_comments_and_survives_bad_tokens():
    from attnlint.parseguard import MAX_BRACKET_DEPTH, bracket_depth, cpython_verdict

    assert bracket_depth("x = '((((((' # ((((\ny = [(1)]\n") == 2
    assert bracket_depth('s = """\n' + "(" * 500 + '\n"""\n') == 0
    assert bracket_depth("x = (" + "[" * 300) > MAX_BRACKET_DEPTH  # unterminated: counted raw
    verdict = cpython_verdict("def (:\n" + "x = " + "(" * 300 + ")" * 300 + "\n")
    assert not verdict.ok and verdict.at_limit  # LibCST must not see it
    assert cpython_verdict("def (:\n    pass\n").libcst_may_parse  # maybe newer grammar
    assert cpython_verdict("x = 1\n").ok
