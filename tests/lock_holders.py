"""A finalizer run by the garbage collector inside a `with lock` section of its own thread
(runtime/stream.py's docstring): tests of finalizers that must not wait for such a lock."""

from __future__ import annotations

import threading
from collections.abc import Callable


def returns_holding(lock: threading.Lock, drop: Callable[[], None], wait: float = 20) -> bool:
    """Whether `drop()` returns (within `wait` seconds) in a thread that holds `lock`: as a
    garbage collection does that starts inside a `with lock` section (a tuple or list made
    there) and finds the last reference to an object in garbage, whose finalizer then runs
    in that thread. A finalizer that waited for the lock hangs the thread (and the lock
    stays taken: later tests that need it hang too)."""
    def hold() -> None:
        with lock:
            drop()
    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    thread.join(wait)
    return not thread.is_alive()
