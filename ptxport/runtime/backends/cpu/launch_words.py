"""What a CPU launch's workers share besides the blocks: memory on cache lines of its own,
the launch's stop word (kept for later launches, and set for every running launch at the
interpreter's exit) and its parameter buffer (kept for later launches of that size)."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ptxport.errors import KernelTimeoutError

__all__ = ["exiting_error", "give_param_buffer", "give_stop", "on_lines", "running",
           "stop_word", "take_param_buffer", "take_stop"]


def on_lines(count: int, dtype) -> np.ndarray:
    """`count` zeros of `dtype` on cache lines no other array shares (a worker's memory, which
    other workers must not slow down by writing next to it)."""
    nbytes = count * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + nbytes].view(dtype)


def stop_word() -> ctypes.c_int32:
    """A launch's stop word, which every worker reads in every loop: on a line of its own."""
    return ctypes.c_int32.from_buffer(on_lines(1, np.int32))


# The stop words of the launches running now (id -> word).
_RUNNING: dict[int, ctypes.c_int32] = {}


def running(stop: ctypes.c_int32, now: bool) -> None:
    """Count the launch of stop word `stop` as running (`now`) or ended: the interpreter's
    exit stops those running."""
    if now:
        _RUNNING[id(stop)] = stop
    else:
        del _RUNNING[id(stop)]


def _stop_running_launches() -> None:
    """At the interpreter's exit, stop the launches still running: a kernel that never ends
    (after Ctrl-C, say) would keep its stream's thread, which the interpreter may wait for,
    and the pool's threads busy."""
    for stop in list(_RUNNING.values()):
        stop.value = 1


# (called before the interpreter joins its threads)
threading._register_atexit(_stop_running_launches)


def exiting_error(name: str, grid, block) -> KernelTimeoutError:
    """The error of a launch without a watchdog whose stop word was set: the exit's."""
    return KernelTimeoutError(
        f"kernel '{name}' (grid {grid}, block {block}) was stopped because the process is "
        "exiting", kernels=(name,), stopped=True)


# stop words of finished launches that no watchdog could still set, for later launches
_STOPS: list[ctypes.c_int32] = []


def take_stop() -> ctypes.c_int32:
    """A stop word (0) for a launch without a watchdog."""
    try:
        return _STOPS.pop()
    except IndexError:      # none kept (or another launch took the last one first)
        return stop_word()


def give_stop(stop: ctypes.c_int32) -> None:
    """Keep the stop word of a launch that ended unstopped for a later launch."""
    _STOPS.append(stop)


# Parameter buffers of finished launches, by size, for later launches: a launch then finds
# its parameters at the address of the last one's, and its workers keep their allocation
# table. (A buffer is one launch's at a time: the printf log is found by its address.)
_PARAM_BUFFERS: dict[int, list[ctypes.Array]] = {}


def take_param_buffer(size: int) -> ctypes.Array:
    """A buffer of at least 8 bytes for a launch's `size` bytes of parameters."""
    size = max(size, 8)
    kept = _PARAM_BUFFERS.get(size)
    try:
        return kept.pop() if kept else ctypes.create_string_buffer(size)
    except IndexError:      # another launch took the last one first
        return ctypes.create_string_buffer(size)


def give_param_buffer(buffer: ctypes.Array) -> None:
    """Keep an ended launch's parameter buffer for a later launch."""
    kept = _PARAM_BUFFERS.get(len(buffer))
    if kept is None:        # (setdefault's default list would be made at every launch)
        kept = _PARAM_BUFFERS.setdefault(len(buffer), [])
    kept.append(buffer)
