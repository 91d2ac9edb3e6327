"""Streams: ordered queues of device work (copies, fills, launches, event records, waits).

Each stream has a worker thread that runs its work in the order it was queued, so calls
return at once and different streams may overlap. When a piece of work fails, its error is
kept and raised by the stream's next sync(); the stream's later copies and launches queued
before that sync are skipped (they would read what the failed work did not write), event
records and waits still happen so that no one waits forever, and after the sync the stream
is usable again.

The worker holds the queue, not the Stream, so a stream that is dropped still finishes its
work, and its thread ends once the queue is empty.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from ptxport.errors import InvalidValueError
from ptxport.runtime.event import Event, EventOptions, _Marker

if TYPE_CHECKING:
    from ptxport.runtime.device import Device

__all__ = ["Stream"]


class _Worker:
    """A thread running queued work in order, and what went wrong."""

    def __init__(self, label: str):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._state = threading.Condition()
        self._pending = 0
        self._error: BaseException | None = None
        self._skipped = 0
        # kernels whose first launch, queued here, compiled them (in stream order; Events
        # recorded here say when their time includes one)
        self.compiled: list[str] = []
        self._thread = threading.Thread(target=self._run, name=f"ptxport {label}", daemon=True)
        self._thread.start()

    @property
    def error(self) -> BaseException | None:
        return self._error

    def submit(self, work: Callable[[], None], skippable: bool) -> None:
        with self._state:
            self._pending += 1
        self._queue.put((work, skippable))

    def stop(self) -> None:
        self._queue.put(None)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            work, skippable = item
            failure = None
            if skippable and self._error is not None:
                with self._state:
                    self._skipped += 1
            else:
                try:
                    work()
                except BaseException as e:  # kept and raised by sync() on the user's thread
                    failure = e
            with self._state:
                if failure is not None and self._error is None:
                    self._error = failure
                self._pending -= 1
                self._state.notify_all()

    def wait_idle(self) -> None:
        with self._state:
            self._state.wait_for(lambda: self._pending == 0)

    def take_error(self) -> BaseException | None:
        """The kept error, if any, forgotten so that the stream is usable again."""
        with self._state:
            error, skipped = self._error, self._skipped
            self._error, self._skipped = None, 0
        if error is not None and skipped and hasattr(error, "add_note"):
            error.add_note(f"({skipped} later operation(s) on the same stream were skipped)")
        return error


class Stream:
    """An ordered queue of work on one device; made by Device.create_stream."""

    def __init__(self, device: Device):
        self._device = device
        self._worker = _Worker(f"stream on {device}")
        device._streams_started(self._worker)
        self._close = weakref.finalize(self, self._worker.stop)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def handle(self) -> int:
        return id(self._worker)

    def _submit(self, work: Callable[[], None], skippable: bool = True) -> None:
        """Queue `work` (a callable that must keep alive whatever it uses). Copies, fills
        and launches are skippable after a failure; records and waits are not."""
        if not self._close.alive:
            raise InvalidValueError(f"{self!r} is closed: create a new stream")
        self._worker.submit(work, skippable)

    def sync(self) -> None:
        """Wait until all work queued so far has run; raise the first failure among it (once:
        the stream is usable afterwards)."""
        self._worker.wait_idle()
        error = self._worker.take_error()
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
        marker = _Marker()
        event._marker = marker
        worker = self._worker
        self._submit(lambda: marker.complete(worker.error, worker.compiled), skippable=False)
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

        self._submit(wait_for_marker, skippable=False)

    def close(self) -> None:
        """Let queued work finish, then end the worker thread; the stream takes no more."""
        self._close()

    def __repr__(self) -> str:
        return f"<Stream {self.handle:#x} on {self._device}>"
