"""The verification child: ``python -I -c BOOTSTRAP <dir>`` ends up in :func:`main`.

Reads one JSON request on stdin, applies resource limits to itself, runs the rule's recipe and
writes one JSON line to the *original* stdout. While user code runs, fd 1 and ``sys.stdout`` point at
stderr, so whatever the user code prints (from Python or C) cannot corrupt the reply.

Request keys: ``rule_code``, ``recipe``, ``original_source``, ``fixed_source``, ``entry``,
``params`` (recipe-specific), ``devices`` (list or null = cpu + cuda when available), ``dtypes``
(``{device: [dtype names]}`` or null = the defaults in :mod:`attnlint.verify.tolerance`),
``seed``, ``limits`` (``cpu_seconds``, ``memory_bytes``).
Reply: ``{"reports": [report dict, ...]}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from typing import Any, Dict


def apply_limits(limits: Dict[str, Any]) -> None:
    """Self-imposed limits, set before torch is imported (``resource`` is POSIX-only)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return

    def lower(which: int, value: int) -> None:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError):
            pass

    lower(resource.RLIMIT_CORE, 0)  # a crashing kernel must not drop multi-GB core files
    cpu_seconds = limits.get("cpu_seconds")
    if cpu_seconds:
        lower(resource.RLIMIT_CPU, int(cpu_seconds))
    memory = limits.get("memory_bytes")
    # The CUDA driver reserves huge *virtual* ranges, so an address-space limit breaks CUDA
    # initialisation; apply it only where no NVIDIA device node exists (CUDA cannot be used anyway).
    # Checking /dev avoids initialising CUDA just to decide.
    if memory and hasattr(resource, "RLIMIT_AS") and not _nvidia_device_present():
        lower(resource.RLIMIT_AS, int(memory))


def _nvidia_device_present() -> bool:
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia")


def main() -> int:
    # Keep the real stdout for the reply; everything else written to fd 1 goes to stderr.
    reply_stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        request = json.loads(sys.stdin.read())
        apply_limits(request.get("limits") or {})
        recipe = importlib.import_module(f"attnlint.verify.recipes.{request['recipe']}")
        reply: Dict[str, Any] = {"reports": recipe.run(request)}
        if request.get("pictures"):
            reply["pictures"] = _pictures(request)
    except BaseException as exc:  # noqa: BLE001 - the reply must say what went wrong, whatever it was
        if isinstance(exc, KeyboardInterrupt):
            raise
        reply = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
    reply_stream.write(json.dumps(reply) + "\n")
    reply_stream.flush()
    return 0


def _pictures(request: Dict[str, Any]) -> Dict[str, Any]:
    try:
        from attnlint.verify.pictures import attention_pictures

        return attention_pictures(request)
    except Exception as exc:  # noqa: BLE001 - a picture that cannot be drawn never changes a verdict
        return {"unavailable": f"{type(exc).__name__}: {exc}"}


if __name__ == "__main__":
    sys.exit(main())
