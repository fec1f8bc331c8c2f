"""Which files to check: Python files under the given paths, minus excludes and .gitignore'd ones."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, List, Sequence, Set

from attnlint.config import Settings
from attnlint.fileio import kind_of

# Notebooks are checked by default, as ruff does since 0.6.
PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass(frozen=True)
class PathProblem:
    """A path named or met that cannot be checked, reported as ATN002 (ruff's E902)."""

    path: Path
    reason: str  # e.g. "No such file or directory", "Permission denied", "a named pipe"
    directory: bool = False  # a directory that could not be listed


@dataclass
class Discovery:
    files: List[Path] = field(default_factory=list)
    problems: List[PathProblem] = field(default_factory=list)


def collect_files(paths: Sequence[str], settings: Settings) -> List[Path]:
    """The files of :func:`discover`; FileNotFoundError for the first path that does not exist."""
    found = discover(paths, settings)
    for problem in found.problems:
        if problem.reason == os.strerror(errno.ENOENT):
            raise FileNotFoundError(str(problem.path))
    return found.files


def discover(paths: Sequence[str], settings: Settings) -> Discovery:
    """Files to check, sorted, without duplicates, and the paths that cannot be checked.

    A file named on the command line is checked even when excluded (as ruff does) unless
    `force-exclude` is set; pre-commit passes files explicitly, so its hook sets --force-exclude.
    Paths keep the spelling the user gave (a symlink is reported as the link, not its target). A
    missing path, an unreadable directory, a symlink loop or a named pipe is a problem on its own:
    the other paths are still checked.
    """
    result = Discovery()
    found: List[Path] = []
    walked: List[Path] = []  # found by walking a directory (named files are not gitignore-filtered)
    seen: Set[Path] = set()
    for raw in paths:
        path = Path(raw)
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            result.problems.append(PathProblem(path, _reason(exc, path)))
            continue
        if stat.S_ISDIR(mode):
            candidates: Iterable[Path] = list(_walk(path, settings, result.problems))
            from_walk = True
        elif stat.S_ISREG(mode):
            if settings.force_exclude and settings.is_excluded(path):
                continue
            candidates = [path]
            from_walk = settings.force_exclude
        else:
            result.problems.append(PathProblem(path, f"not a regular file ({kind_of(mode)})"))
            continue
        for candidate in candidates:
            key = _identity(candidate)
            if key not in seen:
                seen.add(key)
                found.append(candidate)
                if from_walk:
                    walked.append(candidate)
    if settings.respect_gitignore and walked:
        ignored = _git_ignored(walked)
        found = [f for f in found if _identity(f) not in ignored]
    result.files = sorted(found)
    result.problems.sort(key=lambda problem: problem.path)
    return result


def _reason(exc: OSError, path: Path) -> str:
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    if exc.errno == errno.ENOENT and path.is_symlink():
        return f"broken symbolic link (to {os.readlink(path)})"
    return exc.strerror or str(exc)


def _identity(path: Path) -> Path:
    """Where the path really leads (two names of one file are checked once); never raises."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, RuntimeError, ValueError):
        return Path(os.path.abspath(path))


def _walk(root: Path, settings: Settings, problems: List[PathProblem]) -> Iterable[Path]:
    def unreadable(exc: OSError) -> None:  # os.walk skips what it cannot list; say so
        problems.append(PathProblem(Path(exc.filename or root), exc.strerror or str(exc), directory=True))

    for directory, dirnames, filenames in os.walk(root, onerror=unreadable):
        base = Path(directory)
        dirnames[:] = sorted(d for d in dirnames if not settings.is_excluded(base / d, root))
        for name in sorted(filenames):
            if name.endswith(PYTHON_SUFFIXES):
                path = base / name
                if settings.is_excluded(path, root):
                    continue
                try:
                    mode = path.stat().st_mode
                except OSError as exc:
                    problems.append(PathProblem(path, _reason(exc, path)))
                    continue
                if stat.S_ISREG(mode):
                    yield path
                elif not stat.S_ISDIR(mode):  # a directory symlink is not descended (no loops)
                    problems.append(PathProblem(path, f"not a regular file ({kind_of(mode)})"))


def _git_ignored(files: Sequence[Path]) -> Set[Path]:
    """Files git ignores, asked of git itself (so every .gitignore rule is honoured exactly):
    one `rev-parse` per repository found and one `check-ignore` per repository."""
    by_top: dict = {}
    tops: List[Path] = []
    outside: Set[Path] = set()  # directories known not to be in a repository
    for f in files:
        resolved = _identity(f)
        parent = resolved.parent
        top = next((t for t in tops if t == parent or t in parent.parents), None)
        if top is None and parent not in outside and not _may_be_in_repository(parent):
            outside.add(parent)  # no `.git` above: asking git would cost a process per directory
        if top is None and parent not in outside:
            try:
                out = subprocess.run(
                    ["git", "-C", str(parent), "rev-parse", "--show-toplevel"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                )
            except (OSError, subprocess.SubprocessError):
                return set()  # no git: nothing is ignored
            if out.returncode == 0:
                top = _identity(Path(out.stdout.strip()))
                tops.append(top)
            else:
                outside.add(parent)
        if top is not None:
            by_top.setdefault(top, []).append(resolved)
    ignored: Set[Path] = set()
    for top, members in by_top.items():
        try:
            out = subprocess.run(
                ["git", "-C", str(top), "check-ignore", "--no-index", "--stdin", "-z"],
                input="\0".join(str(m) for m in members) + "\0",
                capture_output=True,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        for entry in out.stdout.split("\0"):
            if entry:
                ignored.add(_identity(Path(entry)))
    return ignored


def _may_be_in_repository(directory: Path) -> bool:
    """False when no `.git` is in `directory` or above it (and git is not pointed elsewhere by
    the environment): git would find no repository there either."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    return any(os.path.lexists(os.path.join(d, ".git")) for d in (directory, *directory.parents))
