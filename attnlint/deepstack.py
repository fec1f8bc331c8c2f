"""Run a call with room for deep recursion: deeply nested code is valid Python too.

LibCST's visitors, its code generation and attnlint's analysis recurse once per level of nesting,
so an expression 2,000 levels deep (which CPython accepts) exceeds the interpreter's default
recursion limit of 1,000. Raising the limit alone would trade the RecursionError for a crash on
the main thread's 8 MB stack; a thread of its own gets a stack sized for the higher limit.
Only files that hit the limit pay for the thread.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, TypeVar

T = TypeVar("T")

# About 8 KB of C stack per Python frame is the worst case measured for LibCST's visitors, so
# 512 MB holds 60,000 frames, 30 levels of visitor calls for each of 2,000 levels of nesting.
DEEP_RECURSION_LIMIT = 60_000
DEEP_STACK_BYTES = 512 * 1024 * 1024

_lock = threading.Lock()  # the recursion limit is process-wide: one deep call at a time


def call_with_deep_stack(function: Callable[..., T], *args, **kwargs) -> T:
    """`function(*args, **kwargs)` on a thread with a large stack and a high recursion limit."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    with _lock:
        old_limit, old_size = sys.getrecursionlimit(), threading.stack_size()
        try:
            threading.stack_size(DEEP_STACK_BYTES)
            sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
            worker = threading.Thread(target=target, name="attnlint-deep-stack")
            worker.start()
            worker.join()
        finally:
            sys.setrecursionlimit(old_limit)
            threading.stack_size(old_size)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
