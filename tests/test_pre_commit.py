"""The pre-commit hooks, run by the real pre-commit (`pre-commit try-repo`) on a throwaway repo.

`try-repo` on a repo with uncommitted changes commits only HEAD + *tracked* changes (`git add -u`);
new modules that are not yet tracked would be missing from the hook's environment. So the tests
snapshot this checkout's working tree (tracked and untracked, minus .gitignore'd files) into a
fresh git repo and point try-repo at that: the hooks are tested against the code as it is now.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "self_attention_v1.py"

pytestmark = pytest.mark.slow

GIT_ENV = {
    "GIT_AUTHOR_NAME": "attnlint tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "attnlint tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _pre_commit() -> list:
    exe = Path(sys.executable).with_name("pre-commit")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pre_commit"]


def _git(cwd: Path, *args: str, env=None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env=env, check=True)
    return proc.stdout


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    environ = dict(os.environ, **GIT_ENV)
    environ["PRE_COMMIT_HOME"] = str(tmp_path_factory.mktemp("pre-commit-home"))
    environ.pop("PRE_COMMIT", None)
    environ.pop("SKIP", None)
    return environ


@pytest.fixture(scope="module")
def hook_repo(env, tmp_path_factory) -> Path:
    """A committed snapshot of this checkout's working tree (what try-repo installs from)."""
    files = _git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    snapshot = tmp_path_factory.mktemp("hook-repo")
    for name in filter(None, files):
        source = REPO / name
        if not source.is_file() or name.startswith("tests/"):
            continue  # deleted in the work tree, or not needed to install the hooks
        target = snapshot / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    assert (snapshot / ".pre-commit-hooks.yaml").is_file()
    _git(snapshot, "init", "-q", env=env)
    _git(snapshot, "add", "-A", env=env)
    _git(snapshot, "commit", "-q", "-m", "snapshot", env=env)
    return snapshot


@pytest.fixture
def project(env, tmp_path) -> Path:
    """A throwaway git repo holding the buggy example, plus an excluded copy of it.

    pre-commit names every file explicitly; `--force-exclude` in the hooks' entry must keep
    `gen/` excluded anyway.
    """
    _git(tmp_path, "init", "-q", env=env)
    (tmp_path / "model.py").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "generated.py").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "pyproject.toml").write_text('[tool.attnlint]\nextend-exclude = ["gen"]\n', encoding="utf-8")
    _git(tmp_path, "add", "-A", env=env)
    _git(tmp_path, "commit", "-q", "-m", "buggy", env=env)
    return tmp_path


def try_repo(hook_repo: Path, project: Path, env, hook: str, *extra: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [*_pre_commit(), "try-repo", str(hook_repo), hook, "--all-files", "--color=never", *extra],
        cwd=project, capture_output=True, text=True, timeout=300, env=env,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode == 3 and "pip" in output and ("install" in output or "Could not find" in output):
        pytest.skip(f"pre-commit could not install the hook environment (no package index?):\n{output[-2000:]}")
    return proc


def test_hooks_lint_then_fix_then_pass(hook_repo, project, env):
    original = (project / "model.py").read_text(encoding="utf-8")
    generated = project / "gen" / "generated.py"

    lint = try_repo(hook_repo, project, env, "attnlint")
    out = lint.stdout + lint.stderr
    assert lint.returncode == 1, out
    assert "Failed" in out
    assert "model.py:26:33: ATN103" in out
    assert "Found 1 error." in out
    assert "gen/generated.py" not in out  # excluded, although pre-commit passed it
    assert (project / "model.py").read_text(encoding="utf-8") == original  # lint never writes

    fix = try_repo(hook_repo, project, env, "attnlint-fix")
    out = fix.stdout + fix.stderr
    assert fix.returncode == 1, out  # pre-commit fails a hook that changed files
    assert "Failed" in out
    assert "files were modified by this hook" in out
    fixed = (project / "model.py").read_text(encoding="utf-8")
    assert fixed == original.replace("queries @ keys.T  #", "queries @ keys.transpose(-2, -1)  #")
    assert ".transpose(-2, -1)" in fixed
    assert generated.read_text(encoding="utf-8") == original  # excluded: never fixed

    again = try_repo(hook_repo, project, env, "attnlint")
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "Passed" in out


def test_hooks_check_and_fix_notebooks(hook_repo, env, tmp_path):
    """`types_or: [python, pyi, jupyter]`: pre-commit hands the hooks `.ipynb` files too."""
    _git(tmp_path, "init", "-q", env=env)
    notebook = tmp_path / "notes.ipynb"
    notebook.write_bytes((REPO / "tests" / "data" / "notebooks" / "course_notes.ipynb").read_bytes())
    _git(tmp_path, "add", "-A", env=env)
    _git(tmp_path, "commit", "-q", "-m", "notes", env=env)

    lint = try_repo(hook_repo, tmp_path, env, "attnlint")
    out = lint.stdout + lint.stderr
    assert lint.returncode == 1, out
    assert "notes.ipynb:cell 4:13:33: ATN103" in out

    fix = try_repo(hook_repo, tmp_path, env, "attnlint-fix")
    assert fix.returncode == 1, fix.stdout + fix.stderr
    assert "keys.transpose(-2, -1)" in notebook.read_text(encoding="utf-8")
