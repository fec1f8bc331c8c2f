"""Run a recipe on user code in a fresh, isolated interpreter and get its evidence back.

Why a subprocess: user code is arbitrary (it may loop forever, allocate without bound, print, call
``sys.exit`` or crash the interpreter), torch state is process-global (``set_warn_always``, TF32
flags, the once-per-process ``.T`` deprecation warning), and CUDA must never be initialised in a
process that later forks. So the parent never imports torch; it starts
``sys.executable -I -c BOOTSTRAP <dir>``:

* ``-I`` (isolated) ignores ``PYTHON*`` variables, the user site and the current directory, so user
  files lying next to the code cannot shadow ``torch`` or ``attnlint``. Because of that the child is
  told explicitly where the ``attnlint`` package lives: the bootstrap puts that directory first on
  ``sys.path`` and runs :mod:`attnlint.verify.child`.
* No ``preexec_fn``: CPython then spawns with ``vfork``/``posix_spawn`` and ``exec`` at once, which
  is safe even if the *caller* has initialised CUDA. Resource limits are therefore applied by the
  child to itself, before it imports torch.
* The child gets its own session, so a timeout kills it together with anything it started.
* Request: one JSON object on stdin. Reply: one JSON line on stdout (the child moves fd 1 to stderr
  while user code runs, so user prints cannot corrupt it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

DEFAULT_TIMEOUT_S = 180.0
DEFAULT_MEMORY_LIMIT_BYTES = 16 * 1024**3  # address space, CPU-only runs; see child.apply_limits

# The child's first statement: make `attnlint` importable from the directory we pass, then run.
BOOTSTRAP = "import sys; sys.path.insert(0, sys.argv[1]); from attnlint.verify.child import main; sys.exit(main())"


def package_parent_dir() -> str:
    """The directory that holds the ``attnlint`` package this code was imported from."""
    return str(Path(__file__).resolve().parents[2])


@dataclass
class ChildResult:
    """What came back from one child run: its JSON reply, or why there is none."""

    reply: Optional[Dict[str, Any]]
    error: Optional[str]
    returncode: Optional[int]
    stderr_tail: str


def run_child(request: Dict[str, Any], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> ChildResult:
    """Send ``request`` to a fresh child interpreter; never raises for anything the child does."""
    payload = json.dumps(request)
    kwargs: Dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", BOOTSTRAP, package_parent_dir()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )
    try:
        out, err = proc.communicate(payload.encode("utf-8"), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        out, err = proc.communicate()
        return ChildResult(None, f"timed out after {timeout_s:g} s", None, _tail(err))
    lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        why = f"child exited with status {proc.returncode} and no reply"
        return ChildResult(None, why, proc.returncode, _tail(err))
    try:
        reply = json.loads(lines[-1])
    except ValueError:
        return ChildResult(None, f"child reply is not JSON: {lines[-1][:200]!r}", proc.returncode, _tail(err))
    return ChildResult(reply, None, proc.returncode, _tail(err))


def _kill_tree(proc: subprocess.Popen) -> None:
    # Only the process group we created for this child (start_new_session), by its id.
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - not on POSIX
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _tail(data: bytes, limit: int = 2000) -> str:
    text = data.decode("utf-8", "replace") if data else ""
    return text[-limit:]
