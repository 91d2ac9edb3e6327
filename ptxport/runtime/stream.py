"""Streams: ordered queues of device work (copies, fills, launches, event records, waits).

Each stream has a worker thread that runs its work in the order it was queued, so calls
return at once and different streams may overlap; a thread that waits for the stream
(sync() without a timeout) runs the work the worker has not started yet itself, in the same
order, which spares a launch followed by a sync two thread switches; and work that cannot
wait for anything its caller does later (a small grid of a loop-free kernel, launch.py) runs
on the caller's thread at once when the stream is idle (_run_now). A launch queued on an
idle stream does not wake the stream's thread (_Worker.submit's `defer`): a sync that
follows takes it on the caller's thread, and otherwise the thread, which looks at its queue
every _TICK seconds for a while after work was queued, starts it within that time. When a
piece of work fails, its error is kept and raised by the stream's next sync(); the stream's
later copies and launches queued before that sync are skipped (they would read what the
failed work did not write), event records and waits still happen so that no one waits
forever, and after the sync the stream is usable again.

The worker holds the queue, not the Stream, so a stream that is dropped still finishes its
work, and its thread ends once the queue is empty.

Finalizers (a dropped Stream's stop, a dropped Buffer's free, memory.py) never wait for a
lock: the garbage collector runs them in whatever thread allocates when a collection is due,
which may be inside a `with worker._lock` section of that very thread (a tuple or list made
there): a finalizer that took the same lock would wait for itself, and the stream's thread
with it. They take the lock only where it is free at once, and otherwise leave their work to
the next _submit or sync (`later`, `run_later`). So do the Triton driver's tensors' (their
registrations, frontends/triton.py) and the opencl backend's module variables' (their
blocks, backends/opencl_blocks.py; the backend's lock). Work left for later must not take a
lock that a caller of _submit or sync may hold.

sync(timeout=...) gives up waiting after that long and raises KernelTimeoutError naming what
still runs (the kernel, or the stream a wait waits for, and the kernel running there); the
work goes on. Stopping a launch that runs too long is the launch's watchdog's job
(LaunchConfig(timeout=...)).
"""

from __future__ import annotations

import collections
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from ptxport.errors import InvalidValueError, KernelTimeoutError
from ptxport.runtime.event import Event, EventOptions, _Marker, timeout_seconds

if TYPE_CHECKING:
    from ptxport.runtime.device import Device

__all__ = ["Stream"]

# How often (seconds) a stream's worker thread looks at its queue for work queued without
# waking it, and for how many such looks after the last submission before it sleeps until
# woken: deferred work waits at most _TICK for a thread that did not sync; the looks cost
# a thread wake-up each (a few microseconds) only while work keeps coming.
_TICK = 0.002
_LINGER = 25


class _Worker:
    """A thread running queued work in order, and what went wrong."""

    def __init__(self, label: str):
        # queued work, and whether one piece of it runs now (on the worker's thread, or on
        # a thread waiting in wait_idle that took it): one at a time, in queue order
        self._items: collections.deque = collections.deque()
        self._running = False
        self._stopped = False
        # one lock, two conditions: the worker thread waits on `_work` (for work to take),
        # threads in wait_idle on `_state` (for the stream to empty, or work to take), so
        # that work run on a waiting thread does not wake the idle worker for nothing
        # (taken as `with self._lock`: the lock's own, C, enter and exit; the conditions'
        # are Python functions, and every launch takes the lock twice)
        self._lock = lock = threading.Lock()
        self._state = threading.Condition(lock)
        self._work = threading.Condition(lock)
        self._pending = 0
        self._waiters = 0   # threads waiting on _state (in wait_idle)
        # whether the worker thread waits without a timeout (asleep: work queued must wake
        # it), and how many pieces of work were queued so far (it stays awake, looking at
        # the queue every _TICK seconds, until none came for _LINGER ticks)
        self._asleep = False
        self._submitted = 0
        self._error: BaseException | None = None
        self._skipped = 0
        # what runs now: (words for it, its kernel's name or None, the worker it waits
        # for or None, when it started)
        self._current: tuple[str, str | None, _Worker | None, float] | None = None
        # kernels whose first launch, queued here, compiled them (in stream order; Events
        # recorded here say when their time includes one)
        self.compiled: list[str] = []
        self._thread = threading.Thread(target=self._run, name=f"ptxport {label}", daemon=True)
        self._thread.start()
        # (asked at every sync: threading.get_ident() is one C call, current_thread() a
        # Python function and a dict look-up)
        self._ident = self._thread.ident

    @property
    def error(self) -> BaseException | None:
        return self._error

    def submit(self, work: Callable[[], None], skippable: bool, what: str | Callable[[], str],
               kernel: str | None = None, waits_for: _Worker | None = None,
               compiled: bool = False, defer: bool = False) -> None:
        """Queue `work`. With `defer` (launches), work queued on an idle stream does not
        wake the worker thread while that thread is awake anyway: a sync that follows runs
        it on the waiting thread (a launch followed by a sync then costs no thread switch,
        nor a thread woken on a core the launch's own workers use), and otherwise the
        worker thread takes it at its next look at the queue, within _TICK seconds."""
        with self._lock:
            idle = not self._items and not self._running
            self._enqueue((work, skippable, (what, kernel, waits_for), compiled),
                          wake=not (defer and idle))

    def _enqueue(self, item: tuple, wake: bool) -> None:
        """Queue `item` (the lock held): the worker thread is woken where `wake` or where it
        sleeps; threads waiting for the stream are told."""
        self._pending += 1
        self._submitted += 1
        self._items.append(item)
        if wake or self._asleep:
            self._asleep = False
            self._work.notify()
        if self._waiters:
            self._state.notify_all()

    def kick(self) -> None:
        """Wake the worker thread for work queued but not started (a thread about to wait
        for it without taking it: a sync with a timeout, a query)."""
        with self._lock:
            if self._items and not self._running:
                self._work.notify()

    def run_now(self, work: Callable[[], None], what: str | Callable[[], str],
                kernel: str | None = None) -> bool:
        """Run skippable `work` on this thread at once if the stream is idle (nothing queued,
        nothing running, no kept error), as if the worker had taken it: False, having done
        nothing, when it is not. A failure is kept for the next sync, as the worker keeps it."""
        with self._lock:
            if self._running or self._items or self._error is not None or self._stopped:
                return False
            self._running = True
            self._pending += 1
            self._current = (what, kernel, None, time.monotonic())
        failure = None
        try:
            work()
        except BaseException as e:  # kept and raised by sync() on the user's thread
            failure = e
        with self._lock:
            self._current = None
            self._running = False
            if failure is not None:
                self._error = failure
            self._pending -= 1
            self._done()
        return True

    def start_now(self, start: Callable[..., Callable[[], None] | None], args: tuple,
                  what: str | Callable[[], str], kernel: str | None = None) -> bool:
        """Begin work at once if the stream is idle (nothing queued or running, no kept
        error): start(*args) begins it and returns the function that completes it, queued as
        the stream's next work (not skippable; a sync or the worker thread runs it, as
        submit's `defer` says). False when the stream is not idle or start() returned None
        (having done nothing)."""
        with self._lock:      # (held through start(): nothing is queued ahead of it)
            if self._running or self._items or self._error is not None or self._stopped:
                return False
            finish = start(*args)
            if finish is None:
                return False
            # (as submit's `defer` on an idle stream: the worker thread is woken only from sleep)
            self._enqueue((finish, False, (what, kernel, None), False), wake=False)
        return True

    def stop(self) -> None:
        """End the thread once the queued work has run."""
        with self._lock:
            self._stopped = True
            self._work.notify()

    def try_submit(self, work: Callable[[], None], what: str) -> bool:
        """submit(work, skippable=False) only where the lock is free at once and the worker
        is not stopped: False, having done nothing, otherwise (for finalizers: this thread
        may hold the lock itself, see the module's docstring)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._stopped:
                return False
            self._enqueue((work, False, (what, None, None), False), wake=True)
        finally:
            self._lock.release()
        return True

    def try_stop(self) -> bool:
        """stop() only where the lock is free at once (False, having done nothing, if not)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._stopped = True
            self._work.notify()
        finally:
            self._lock.release()
        return True

    def _take(self) -> tuple | None:
        """The next piece of work, marked running, if none runs now (under self._state)."""
        if self._running or not self._items:
            return None
        self._running = True
        return self._items.popleft()

    def _run(self) -> None:
        while True:
            with self._lock:
                item = self._next()
                if item is None:   # stopped, and nothing is left
                    return
            self._execute(item)
            # (dropped before waiting for the next: the work holds memory it used alive)
            item = None

    def _next(self) -> tuple | None:
        """The worker thread's next piece of work, once none runs (None: stopped and
        nothing left), under self._state. While work was queued in the last _LINGER ticks
        it looks at the queue every _TICK seconds (deferred submissions wake no one);
        after that it sleeps until a submission wakes it."""
        seen, quiet = self._submitted, 0
        while True:
            if not self._running:
                if self._items:
                    return self._take()
                if self._stopped:
                    return None
            if quiet < _LINGER:
                self._work.wait(_TICK)
                if self._submitted != seen:
                    seen, quiet = self._submitted, 0
                else:
                    quiet += 1
            else:
                self._asleep = True
                self._work.wait()
                self._asleep = False
                seen, quiet = self._submitted, 0

    def _execute(self, item: tuple) -> None:
        work, skippable, about, compiled = item
        failure = None
        if compiled:   # a launch whose kernel was compiled for it
            self.compiled.append(about[1])
        if skippable and self._error is not None:
            with self._lock:
                self._skipped += 1
        else:
            with self._lock:
                self._current = (*about, time.monotonic())
            try:
                work()
            except BaseException as e:  # kept and raised by sync() on the user's thread
                failure = e
        item = work = about = None
        with self._lock:
            self._current = None
            self._running = False
            if failure is not None and self._error is None:
                self._error = failure
            self._pending -= 1
            self._done()

    def _done(self) -> None:
        """After a piece of work ran (under self._state): wake the threads that wait for it
        (the worker thread too when work is left, or it is to end)."""
        if self._items or self._stopped:
            self._work.notify()
        if self._waiters:   # (notify_all costs more than a kernel runs, even for no one)
            self._state.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the queue is empty (True), or `timeout` seconds pass first (False).

        Without a timeout, the waiting thread runs queued work itself when the worker has
        not started it yet (in queue order, one piece at a time, as the worker would): a
        launch followed by a sync then costs no hand-over to the worker's thread and back.
        With a timeout, it only waits, so that it can give up in time."""
        if not self._pending:   # (this thread's own work is counted when it was queued)
            return True
        if timeout is not None or threading.get_ident() == self._ident:
            with self._lock:
                if self._items and not self._running:   # (deferred work: start it now)
                    self._work.notify()
                return self._wait(lambda: self._pending == 0, timeout)
        while True:
            with self._lock:
                # (the usual case, a launch queued on an idle stream: take it, no waiting)
                if not self._items or self._running:
                    self._wait(lambda: self._pending == 0 or self._items and not self._running)
                if self._pending == 0:
                    return True
                item = self._take()
            if item is not None:
                self._execute(item)
                item = None
                if not self._pending:   # (the usual case, a launch and its sync: done)
                    return True

    def _wait(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        """self._state.wait_for, counted in self._waiters (under self._state)."""
        self._waiters += 1
        try:
            return self._state.wait_for(predicate, timeout)
        finally:
            self._waiters -= 1

    def still_running(self) -> tuple[str, tuple[str, ...]]:
        """Words for what this worker runs now (following waits to the streams they wait
        for), and the names of the kernels among it."""
        parts, kernels, worker, seen = [], [], self, set()
        while worker is not None and id(worker) not in seen:
            seen.add(id(worker))
            with worker._lock:
                current, pending = worker._current, worker._pending
            if current is None:
                parts.append(f"{pending} operation(s) not started yet" if pending else
                             "nothing (it has just finished)")
                break
            what, kernel, worker, started = current
            what = what() if callable(what) else what
            parts.append(f"{what}, running for {time.monotonic() - started:.1f} s")
            if kernel is not None:
                kernels.append(kernel)
            if pending > 1:
                parts[-1] += f" ({pending - 1} later operation(s) wait behind it)"
        return "; that waits for ".join(parts), tuple(kernels)

    def timeout_error(self, waiting: str, timeout: float, device) -> KernelTimeoutError:
        """The error of a sync that gave up after `timeout` seconds waiting for this worker
        (`waiting`: what waited, in words)."""
        running, kernels = self.still_running()
        if device._backend.stops_launches:
            advice = ("sync() again to wait longer, or launch with LaunchConfig(timeout="
                      "seconds) so that a launch running longer is stopped")
        else:
            advice = (f"ptxport cannot stop a kernel running on {device} (its API has no "
                      "way short of ending the process): if it never ends, the stream never "
                      "finishes and the device may stay busy until the process exits")
        return KernelTimeoutError(
            f"{waiting} gave up after {timeout:g} s: still running: {running}. The work goes "
            f"on; {advice}", kernels=kernels, stopped=False)

    def take_error(self) -> BaseException | None:
        """The kept error, if any, forgotten so that the stream is usable again."""
        if self._error is None:     # (set before the work counts as done: seen by then)
            return None
        with self._lock:
            error, skipped = self._error, self._skipped
            self._error, self._skipped = None, 0
        if error is not None and skipped and hasattr(error, "add_note"):
            error.add_note(f"({skipped} later operation(s) on the same stream were skipped)")
        return error


# Work that finalizers could not do at once (their lock was taken), done by the next
# Stream._submit or sync of any stream (run_later).
_LATER: collections.deque = collections.deque()


def later(work: Callable[[], None]) -> None:
    """Do `work` at the next _submit or sync (a finalizer's, whose lock was taken)."""
    _LATER.append(work)


def run_later() -> None:
    """Do the work finalizers left (where this thread holds none of the streams' locks)."""
    while _LATER:
        try:
            work = _LATER.popleft()
        except IndexError:      # (another thread took the last one)
            return
        work()


def _stop_dropped(worker: _Worker) -> None:
    """A dropped Stream's finalizer: its worker ends once its queue is empty."""
    if not worker.try_stop():
        later(worker.stop)


class Stream:
    """An ordered queue of work on one device; made by Device.create_stream."""

    def __init__(self, device: Device):
        self._device = device
        self._worker = _Worker(f"stream on {device}")
        device._streams_started(self._worker)
        self._close = weakref.finalize(self, _stop_dropped, self._worker)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def handle(self) -> int:
        return id(self._worker)

    def _run_now(self, work: Callable[[], None], what: str | Callable[[], str],
                 kernel: str | None = None) -> bool:
        """Run skippable `work` now, on this thread, if the stream is idle (True); else do
        nothing (False: queue it with _submit). For work that cannot wait for anything the
        caller does later (a loop-free kernel): running it at once is then one of the orders
        an asynchronous stream may run it in, without the hand-over to the worker thread.
        (A closed stream's worker is stopped: run_now gives False, and _submit refuses.)"""
        return self._worker.run_now(work, what, kernel)

    def _start_now(self, start: Callable[..., Callable[[], None] | None], args: tuple,
                   what: str | Callable[[], str], kernel: str | None = None) -> bool:
        """Begin work now if the stream is idle, and queue what completes it
        (_Worker.start_now: a launch whose blocks start on the device at once, start(*args)
        giving its finish); False, having done nothing, otherwise (queue it with _submit,
        which refuses a closed stream: its worker is stopped, and start_now declines)."""
        return self._worker.start_now(start, args, what, kernel)

    def _submit(self, work: Callable[[], None], skippable: bool = True,
                what: str | Callable[[], str] = "an operation", kernel: str | None = None,
                waits_for: _Worker | None = None, compiled: bool = False,
                defer: bool = False) -> None:
        """Queue `work` (a callable that must keep alive whatever it uses). Copies, fills
        and launches are skippable after a failure; records and waits are not. `what` (or a
        function giving it, called only when needed) names the work for an error
        (`kernel`: the kernel it runs; `waits_for`: the worker of the stream it waits for;
        `compiled`: the kernel was compiled for this launch, which Events around it say;
        `defer`: see _Worker.submit)."""
        if _LATER:
            run_later()
        if not self._close.alive:
            raise InvalidValueError(f"{self!r} is closed: create a new stream")
        self._worker.submit(work, skippable, what, kernel, waits_for, compiled, defer)

    def sync(self, timeout: float | None = None) -> None:
        """Wait until all work queued so far has run; raise the first failure among it (once:
        the stream is usable afterwards).

        Parameters
        ----------
        timeout : float, optional
            Give up after this many seconds and raise KernelTimeoutError naming the kernels
            still running (the work goes on; a later sync waits for it again). None: wait
            as long as it takes.
        """
        if _LATER:
            run_later()
        worker = self._worker
        if timeout is None and not worker._pending and worker._error is None:
            return      # (the usual case after a launch run at once: nothing to wait for)
        seconds = None if timeout is None else timeout_seconds(timeout)
        if not worker.wait_idle(seconds):
            raise self._worker.timeout_error(f"{self!r}.sync(timeout={seconds:g})", seconds,
                                             self._device)
        if worker._error is not None:   # (set before the work counts as done: seen by now)
            error = worker.take_error()
            if error is not None:
                raise error

    def record(self, event: Event | None = None,
               options: EventOptions | dict | None = None) -> Event:
        """Record `event` (a new one made with `options` if None) at this point of the
        stream, and return it."""
        if event is None:
            event = Event(self._device, options)
        elif not isinstance(event, Event):
            raise InvalidValueError(f"Stream.record takes an Event, not {type(event).__name__}")
        elif event.device is not self._device:
            raise InvalidValueError(
                f"cannot record an event of {event.device} on a stream of {self._device}")
        worker = self._worker
        marker = _Marker(worker)
        event._marker = marker
        self._submit(lambda: marker.complete(worker.error, worker.compiled), skippable=False,
                     what="an event record")
        return event

    def wait(self, event_or_stream: Event | Stream) -> None:
        """Make this stream's later work wait until `event_or_stream` reaches the point it
        has now (an event's latest record, or all work queued so far on a stream). A failure
        of the work waited for becomes this stream's failure too."""
        if isinstance(event_or_stream, Stream):
            if event_or_stream is self:
                return
            event = event_or_stream.record()
        elif isinstance(event_or_stream, Event):
            event = event_or_stream
        else:
            raise InvalidValueError(
                f"Stream.wait takes an Event or a Stream, not {type(event_or_stream).__name__}")
        marker = event._marker

        def wait_for_marker() -> None:
            marker.done.wait()
            if marker.error is not None:
                raise marker.error

        self._submit(wait_for_marker, skippable=False,
                     what="a wait for an event of another stream", waits_for=marker.worker)

    def close(self) -> None:
        """Let queued work finish, then end the worker thread; the stream takes no more."""
        if self._close.detach() is not None:    # (None: closed before)
            self._worker.stop()

    def __repr__(self) -> str:
        return f"<Stream {self.handle:#x} on {self._device}>"
