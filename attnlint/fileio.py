"""Reading and writing the user's files without hanging, lying or losing data.

Reading: only regular files are read, and the check happens on the open descriptor (opened
non-blocking), so a named pipe, a socket or a device named `x.py` is an error instead of a hang,
even if it replaces a regular file between the walk and the read.

Writing fixes (ruff's behaviour where it has one, stricter where it writes blindly):
- the file is read again just before the write; if it changed since attnlint read it (an editor
  saved it while `--fix` ran), nothing is written and the user is told;
- a read-only file (no write bit for its owner, e.g. 0444) is refused and reported: root can write
  it, but the user made it read-only for a reason;
- a file with several hard links is rewritten in place, as ruff does (`std::fs::write`), so every
  link keeps seeing the same file; if that write fails midway the old bytes are put back;
- any other file is written to a temp file in its directory and moved over it with `os.replace`
  (never half a file), keeping its permission bits. A symbolic link is followed: its target is
  rewritten and the link stays a link.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


class NotRegularFile(OSError):
    """The path is not a regular file (and reading it could block forever)."""


class WriteRefused(OSError):
    """The fixes were computed but deliberately not written (the message says why)."""


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file; NotRegularFile for anything else (without blocking on it)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind_of(mode)})", str(path))
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class WriteOutcome:
    in_place: bool  # True when hard links made us rewrite the file in place


def write_fixed(path: Path, expected: bytes, data: bytes) -> WriteOutcome:
    """Replace the file's content `expected` (what the fixes were computed from) by `data`.

    Raises WriteRefused when the file changed since it was read or is read-only, and OSError when
    the write itself fails; in every case the file keeps its old content.
    """
    target = Path(os.path.realpath(path))  # through symbolic links, to the file itself
    info = os.stat(target)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind_of(info.st_mode)})", str(path))
    if not info.st_mode & stat.S_IWUSR:
        raise WriteRefused(
            errno.EACCES,
            f"the file is read-only (mode {stat.S_IMODE(info.st_mode):04o}); fixes were not written",
            str(path),
        )
    _ensure_unchanged(target, expected)
    if info.st_nlink > 1:
        _write_in_place(target, expected, data)
        return WriteOutcome(in_place=True)
    _replace_atomically(target, data, info.st_mode)
    return WriteOutcome(in_place=False)


def _ensure_unchanged(target: Path, expected: bytes) -> None:
    try:
        current = read_regular(target)
    except OSError as exc:
        raise WriteRefused(exc.errno or errno.EIO, f"the file cannot be read again ({exc.strerror})") from exc
    if current != expected:
        raise WriteRefused(
            errno.EAGAIN, "the file changed on disk while attnlint was fixing it; fixes were not written", str(target)
        )


def _write_in_place(target: Path, expected: bytes, data: bytes) -> None:
    with open(target, "r+b") as handle:
        try:
            handle.write(data)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.seek(0)
            handle.write(expected)
            handle.truncate()
            handle.flush()
            raise


def _replace_atomically(target: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".attnlint-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(mode))
        except OSError:
            pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_new(path: Path, data: bytes) -> None:
    """Write an output of attnlint's own (a report), replacing what is there: never half a file.

    Unlike :func:`write_fixed` nothing is compared first: the file is attnlint's, not the user's."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _replace_atomically(target, data, 0o644)
