"""Which files to check: Python files under the given paths, minus excludes and .gitignore'd ones."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterable, List, Sequence, Set

from attnlint.config import Settings

PYTHON_SUFFIXES = (".py", ".pyi")


def collect_files(paths: Sequence[str], settings: Settings) -> List[Path]:
    """Files to check, sorted, without duplicates.

    A file named on the command line is checked even when excluded (as ruff does) unless
    `force-exclude` is set; pre-commit passes files explicitly, so its hook sets --force-exclude.
    """
    found: List[Path] = []
    walked: List[Path] = []  # found by walking a directory (named files are not gitignore-filtered)
    seen: Set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            candidates: Iterable[Path] = list(_walk(path, settings))
            from_walk = True
        elif path.exists():
            if settings.force_exclude and settings.is_excluded(path):
                continue
            candidates = [path]
            from_walk = settings.force_exclude
        else:
            raise FileNotFoundError(raw)
        for candidate in candidates:
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                found.append(candidate)
                if from_walk:
                    walked.append(candidate)
    if settings.respect_gitignore and walked:
        ignored = _git_ignored(walked)
        found = [f for f in found if f.resolve() not in ignored]
    return sorted(found)


def _walk(root: Path, settings: Settings) -> Iterable[Path]:
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory)
        dirnames[:] = sorted(d for d in dirnames if not settings.is_excluded(base / d, root))
        for name in sorted(filenames):
            if name.endswith(PYTHON_SUFFIXES):
                path = base / name
                if not settings.is_excluded(path, root):
                    yield path


def _git_ignored(files: Sequence[Path]) -> Set[Path]:
    """Files git ignores, asked of git itself (so every .gitignore rule is honoured exactly):
    one `rev-parse` per repository found and one `check-ignore` per repository."""
    by_top: dict = {}
    tops: List[Path] = []
    outside: Set[Path] = set()  # directories known not to be in a repository
    for f in files:
        resolved = f.resolve()
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
                top = Path(out.stdout.strip()).resolve()
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
                ignored.add(Path(entry).resolve())
    return ignored


def _may_be_in_repository(directory: Path) -> bool:
    """False when no `.git` is in `directory` or above it (and git is not pointed elsewhere by
    the environment): git would find no repository there either."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    return any(os.path.lexists(os.path.join(d, ".git")) for d in (directory, *directory.parents))
