"""Slow work that test modules start when collection ends, to run beside the tests before them.

tests/conftest.py calls each selected test module's `start_early(session)` once collection
ends. What a module submits there runs in one queue, first come first served, ONE job at a
time while the suite's own process runs other tests (on a 2-core machine, the core that
process leaves idle), more while a module's tests wait for their results (`allow`).
Subprocesses started through `run` are ended when the session ends (`stop`), so that a
session cut short (-x, Ctrl-C) does not wait for them.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future

__all__ = ["allow", "run", "stop", "submit"]

_QUEUE: queue.SimpleQueue = queue.SimpleQueue()
_WORKERS: list[threading.Thread] = []
_PROCESSES: set[subprocess.Popen] = set()
_STOPPED = threading.Event()
_STOP_HOOKS: list[Callable[[], None]] = []
# jobs allowed at once, and under way (guarded by _TURNS)
_TURNS = threading.Condition()
_ALLOWED = 1
_RUNNING = 0


def submit(work: Callable, *args, on_stop: Callable[[], None] | None = None) -> Future:
    """Queue `work(*args)`; its Future holds the result. `on_stop`: what ends this work's
    own subprocesses when the session ends (those started by `run` are ended anyway)."""
    if on_stop is not None and on_stop not in _STOP_HOOKS:
        _STOP_HOOKS.append(on_stop)
    future: Future = Future()
    _QUEUE.put((future, work, args))
    _start_workers(_ALLOWED)
    return future


def allow(jobs: int) -> None:
    """Let `jobs` jobs run at once from now on: more while this process only waits for
    them, one while it runs tests."""
    global _ALLOWED
    with _TURNS:
        _ALLOWED = jobs
        _TURNS.notify_all()
    _start_workers(jobs)


def _start_workers(count: int) -> None:
    while len(_WORKERS) < count:
        worker = threading.Thread(target=_work, name=f"background-{len(_WORKERS)}",
                                  daemon=True)
        _WORKERS.append(worker)
        worker.start()


def _work() -> None:
    global _RUNNING
    while not _STOPPED.is_set():
        future, work, args = _QUEUE.get()
        with _TURNS:
            while _RUNNING >= _ALLOWED:
                _TURNS.wait()
            _RUNNING += 1
        try:
            if _STOPPED.is_set():
                future.cancel()
            elif future.set_running_or_notify_cancel():
                try:
                    future.set_result(work(*args))
                except BaseException as e:  # the test that waits for it reports it
                    future.set_exception(e)
        finally:
            with _TURNS:
                _RUNNING -= 1
                _TURNS.notify_all()


def run(command: list[str], timeout: float, **popen) -> subprocess.CompletedProcess:
    """subprocess.run(command, capture_output=True, text=True, **popen) in a process group of
    its own, ended with what it started at `stop`; past `timeout` seconds it is killed and
    the result's return code is -1, with a line saying so at the end of its stderr."""
    if _STOPPED.is_set():
        raise RuntimeError("the test session ended before this command started")
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, **popen) as process:
        _PROCESSES.add(process)
        if _STOPPED.is_set():   # stop() came between the check above and the start
            _kill(process)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            _, stderr = process.communicate()
            return subprocess.CompletedProcess(command, -1, "",
                                               f"{stderr}\n(timed out after {timeout} s)")
        finally:
            _PROCESSES.discard(process)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop() -> None:
    """The session is over: drop the work not started, end the subprocesses under way."""
    _STOPPED.set()
    while True:
        try:
            future, _, _ = _QUEUE.get_nowait()
        except queue.Empty:
            break
        future.cancel()
    for process in list(_PROCESSES):
        _kill(process)
    for hook in _STOP_HOOKS:
        hook()
