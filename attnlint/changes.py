"""What changed since a git revision: the lines `--diff-base` reviews.

Teams adopt a linter on a big repository one pull request at a time, so a review reports the
findings a change introduced, not the repository's history. `git diff BASE` against the working
tree gives, for every file, the lines added or changed (the findings we keep) and the lines the
diff shows with git's usual three lines of context (the only lines GitHub accepts review comments
on). Renames are followed (`-M`), new files are wholly added, deleted files have nothing left to
check, and untracked files (not ignored) count as new: locally they are part of the change.

`auto` is the merge base with the branch the change will land on: `GITHUB_BASE_REF` in a GitHub
pull request, else the remote's default branch, else a local `main`/`master`.
"""

from __future__ import annotations

import codecs
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

from attnlint.config import ConfigError
from attnlint.diagnostics import INTERNAL_ERROR_CODE, IO_ERROR_CODE, SYNTAX_ERROR_CODE, FileResult, Position

AUTO = "auto"
# GitHub's pull-request diffs show three lines of context, as `git diff` does by default.
CONTEXT_LINES = 3
# Findings about a whole file: kept whenever the file changed (the change most likely caused them).
_FILE_LEVEL_CODES = frozenset({SYNTAX_ERROR_CODE, IO_ERROR_CODE, INTERNAL_ERROR_CODE})
_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DiffBaseError(ConfigError):
    """`--diff-base` cannot be honoured (no git, not a repository, unknown revision): exit 2."""


@dataclass(frozen=True)
class FileChanges:
    """One file's side of the diff, in the file's current line numbers."""

    path: Path  # absolute, symlinks resolved
    repo_path: str  # relative to the repository root, with `/` (what GitHub calls the file)
    added: FrozenSet[int]  # lines added or changed since the base
    # Line ranges (first, last) the diff shows: the added lines and their context.
    hunks: Tuple[Tuple[int, int], ...]
    new_file: bool = False
    # Every line is new (an untracked file): nothing needs reading to know which lines changed.
    whole: bool = False

    def is_added(self, line: int) -> bool:
        return self.whole or line in self.added

    def touches(self, first: int, last: int) -> bool:
        """Was any of lines ``first``..``last`` added or changed?"""
        if self.whole:
            return True
        if last - first < len(self.added):
            return any(line in self.added for line in range(first, last + 1))
        return any(first <= line <= last for line in self.added)

    def hunk_holding(self, first: int, last: int) -> Optional[Tuple[int, int]]:
        """The diff hunk that shows all of ``first``..``last``, if one does."""
        if self.whole:
            return 1, max(first, last)
        for lo, hi in self.hunks:
            if lo <= first and last <= hi:
                return lo, hi
        return None


@dataclass
class ChangeSet:
    root: Path
    base: str  # the commit compared against
    files: Dict[Path, FileChanges] = field(default_factory=dict)

    def for_path(self, path: os.PathLike) -> Optional[FileChanges]:
        return self.files.get(Path(path).resolve())

    def changed_files(self, files: Sequence[Path]) -> List[Path]:
        """The files to check: those the diff touched (the others can hold no new finding)."""
        return [f for f in files if self.for_path(f) is not None]

    def restrict(self, results: Sequence[FileResult], files: Sequence[Path]) -> Dict[str, FileChanges]:
        """Drop, in place, every finding whose statement has no added or changed line.

        ``results`` and ``files`` are parallel. Returns each file's changes by display path, for
        reporters that must stay inside the diff (GitHub rejects comments on lines it does not show).
        """
        from attnlint.statements import StatementIndex

        scope: Dict[str, FileChanges] = {}
        for result, path in zip(results, files):
            file_changes = self.for_path(path)
            if file_changes is None:
                result.diagnostics = []
                continue
            scope[result.path] = file_changes
            index = StatementIndex(result.source) if result.source is not None else None
            kept = []
            for diag in result.diagnostics:
                first, last = diag.start.line, diag.end.line
                if index is not None:
                    lo, hi = index.statement_lines(first, last)
                    first, last = min(first, lo), max(last, hi)
                if result.notebook is not None:  # the diff is of the notebook's JSON text
                    first = result.notebook.json_position(Position(first, 0)).line
                    last = result.notebook.json_position(Position(last, 0)).line
                if diag.code in _FILE_LEVEL_CODES or file_changes.touches(first, last):
                    kept.append(diag)
            result.diagnostics = kept
        return scope


# ---------------------------------------------------------------------------------------------
# git
# ---------------------------------------------------------------------------------------------
def _git(args: Sequence[str], cwd: Path, *, check: bool = True) -> subprocess.CompletedProcess:
    # Config that would change the output we parse is overridden on the command line.
    command = ["git", "-c", "core.quotePath=false", "-c", "diff.noprefix=false", *args]
    try:
        proc = subprocess.run(command, cwd=str(cwd), capture_output=True)
    except FileNotFoundError:
        raise DiffBaseError("--diff-base needs git, and no `git` executable was found") from None
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
        raise DiffBaseError(f"git {' '.join(args[:2])} failed: {message}")
    return proc


def _stdout(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


def repository_root(cwd: Path) -> Path:
    proc = _git(["rev-parse", "--show-toplevel"], cwd, check=False)
    if proc.returncode != 0:
        raise DiffBaseError(f"--diff-base needs a git repository, and {cwd} is not inside one")
    return Path(_stdout(proc)).resolve()


def _commit(rev: str, root: Path) -> Optional[str]:
    proc = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], root, check=False)
    return _stdout(proc) if proc.returncode == 0 else None


def _target_branches(root: Path) -> List[str]:
    """Where the change will land, best guess first."""
    base_ref = os.environ.get("GITHUB_BASE_REF", "").strip()
    if base_ref:  # a pull request in GitHub Actions names its target
        return [f"origin/{base_ref}", base_ref]
    candidates = []
    proc = _git(["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"], root, check=False)
    if proc.returncode == 0 and _stdout(proc):
        candidates.append(_stdout(proc))
    return candidates + ["origin/main", "origin/master", "main", "master"]


def resolve_base(rev: str, root: Path) -> str:
    """The commit ``rev`` names; for ``auto``, the merge base with the target branch."""
    if rev != AUTO:
        commit = _commit(rev, root)
        if commit is None:
            raise DiffBaseError(f"--diff-base {rev}: no such commit in {root}")
        return commit
    for branch in _target_branches(root):
        if _commit(branch, root) is None:
            continue
        proc = _git(["merge-base", "HEAD", branch], root, check=False)
        if proc.returncode == 0:
            return _stdout(proc)
        raise DiffBaseError(
            f"--diff-base auto: HEAD and {branch} have no common history here"
            " (a shallow clone? check out with `fetch-depth: 0`)"
        )
    tried = ", ".join(_target_branches(root))
    raise DiffBaseError(f"--diff-base auto: none of {tried} exists; pass --diff-base REV")


def changes_since(rev: str, cwd: Optional[Path] = None) -> ChangeSet:
    """Every file changed between ``rev`` and the working tree, with its added lines."""
    cwd = Path.cwd() if cwd is None else Path(cwd)
    root = repository_root(cwd)
    base = resolve_base(rev, root)
    diff = _git(
        [
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-relative",
            "--find-renames",
            f"--unified={CONTEXT_LINES}",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            base,
            "--",
        ],
        root,
    )
    changes = ChangeSet(root=root, base=base)
    for relative, added, hunks, new_file in parse_diff(diff.stdout):
        path = (root / relative).resolve()
        changes.files[path] = FileChanges(path, relative, frozenset(added), tuple(hunks), new_file)
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root)
    for name in untracked.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if name:
            path = (root / name).resolve()
            changes.files[path] = _whole_file(path, name)
    return changes


def _whole_file(path: Path, repo_path: str) -> FileChanges:
    return FileChanges(path, repo_path, frozenset(), (), new_file=True, whole=True)


# ---------------------------------------------------------------------------------------------
# Unified diff parsing
# ---------------------------------------------------------------------------------------------
def _unquote(name: bytes) -> str:
    """A path as git prints it: C-quoted ("a\\tb", octal bytes) when it has odd characters."""
    if name.endswith(b"\t"):  # git ends names holding a space with a tab
        name = name[:-1]
    if len(name) >= 2 and name.startswith(b'"') and name.endswith(b'"'):
        name = codecs.escape_decode(name[1:-1])[0]
    return name.decode("utf-8", "surrogateescape")


def parse_diff(patch: bytes) -> Iterator[Tuple[str, List[int], List[Tuple[int, int]], bool]]:
    """(new path, added lines, shown ranges, is new) for each file with a new side in ``patch``.

    Hunk bodies are consumed by the line counts in their headers, so an added line that reads
    `++ x` (shown as `+++ x`) is content, not a file header.
    """
    current: Optional[str] = None
    new_file = False
    added: List[int] = []
    hunks: List[Tuple[int, int]] = []
    line_no = old_left = new_left = 0

    for raw in patch.split(b"\n"):
        if old_left > 0 or new_left > 0:
            marker = raw[:1]
            if marker == b"+":
                added.append(line_no)
                line_no += 1
                new_left -= 1
            elif marker == b"-":
                old_left -= 1
            elif marker == b"\\":  # "\ No newline at end of file"
                pass
            else:  # context (a blank context line may have lost its leading space)
                line_no += 1
                old_left -= 1
                new_left -= 1
            continue
        if raw.startswith(b"\\"):
            continue
        if raw.startswith(b"diff --git "):
            if current is not None:
                yield current, added, hunks, new_file
            current, new_file, added, hunks = None, False, [], []
            continue
        match = _HUNK.match(raw)
        if match:
            old_left = int(match.group(1)) if match.group(1) is not None else 1
            start = int(match.group(2))
            new_left = int(match.group(3)) if match.group(3) is not None else 1
            if new_left:
                hunks.append((start, start + new_left - 1))
            line_no = start
        elif raw.startswith(b"new file mode"):
            new_file = True
        elif raw.startswith(b"+++ "):
            target = raw[4:]
            current = None if target.rstrip(b"\t") == b"/dev/null" else _unquote(target)[2:]
    if current is not None:
        yield current, added, hunks, new_file


# ---------------------------------------------------------------------------------------------
# Keeping the findings a change introduced
# ---------------------------------------------------------------------------------------------
