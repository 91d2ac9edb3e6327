"""Events: points in a stream's work, to wait for, to order other streams by, and to time.

An event is recorded on a stream (Stream.record); it completes when the stream's worker
reaches that point, which also stamps the time. Recording again moves the event to the new
point; waits already queued keep the point they were given, as in CUDA. An event never
recorded counts as done.
"""

from __future__ import annotations

import threading
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptxport.errors import InvalidValueError, TimingIncludesCompileWarning

if TYPE_CHECKING:
    from ptxport.runtime.device import Device

__all__ = ["Event", "EventOptions"]


@dataclass(frozen=True)
class EventOptions:
    """How an event behaves.

    Parameters
    ----------
    enable_timing : bool
        Stamp the time at which the event completes, so that `end - start` gives the
        milliseconds between two events. Off by default, as in CUDA.
    """

    enable_timing: bool = False


def as_event_options(options: EventOptions | dict | None) -> EventOptions:
    if options is None:
        return EventOptions()
    if isinstance(options, EventOptions):
        return options
    if isinstance(options, dict):
        try:
            return EventOptions(**options)
        except TypeError as e:
            raise InvalidValueError(f"bad event options {options!r}: {e}") from None
    raise InvalidValueError(
        f"event options must be an EventOptions or a dict, not {type(options).__name__}")


def timeout_seconds(timeout: float | None) -> float | None:
    """A sync's timeout, checked: None or a number of seconds, not negative."""
    if timeout is None:
        return None
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        raise InvalidValueError(f"timeout= takes seconds (a number) or None, not "
                                f"{timeout!r}") from None
    if not seconds >= 0:    # (NaN too)
        raise InvalidValueError(f"timeout= must not be negative, not {timeout!r}")
    return seconds


class _Marker:
    """One recorded point of a stream: set when the stream's worker (`worker`; None for an
    event never recorded) reaches it. `error` is the failure of earlier work on that
    stream, if any, so that waiting on it reports it."""

    __slots__ = ("done", "time", "error", "worker", "compiled", "compiled_count")

    def __init__(self, worker=None):
        self.done = threading.Event()
        self.time: float | None = None
        self.error: BaseException | None = None
        self.worker = worker
        self.compiled: list[str] = []      # the stream's kernels compiled at first launch
        self.compiled_count = 0            # how many of them were before this point

    def complete(self, error: BaseException | None, compiled: list[str] | None = None) -> None:
        self.time = time.perf_counter()
        self.error = error
        if compiled is not None:
            self.compiled, self.compiled_count = compiled, len(compiled)
        self.done.set()


def _compiled_between(start: _Marker, end: _Marker) -> list[str]:
    """The kernels compiled by launches queued between two points of one stream."""
    if start.compiled is not end.compiled or not start.compiled:
        return []
    return end.compiled[start.compiled_count:end.compiled_count]


def _completed_marker() -> _Marker:
    marker = _Marker()
    marker.complete(None)
    return marker


class Event:
    """A point in a stream's work; made by Device.create_event or Stream.record."""

    def __init__(self, device: Device, options: EventOptions | dict | None = None):
        self._device = device
        self._options = as_event_options(options)
        self._marker = _completed_marker()

    @property
    def device(self) -> Device:
        return self._device

    @property
    def handle(self) -> int:
        return id(self)

    @property
    def is_timing_disabled(self) -> bool:
        return not self._options.enable_timing

    @property
    def is_done(self) -> bool:
        """Whether the work before the event's latest record has all run."""
        return self._marker.done.is_set()

    def sync(self, timeout: float | None = None) -> None:
        """Wait until the event completes; raise the failure of work before it, if any.

        Parameters
        ----------
        timeout : float, optional
            Give up after this many seconds and raise KernelTimeoutError naming the kernels
            still running before the event (they go on running). None: wait as long as it
            takes.
        """
        marker, seconds = self._marker, timeout_seconds(timeout)
        if not marker.done.wait(seconds):
            raise marker.worker.timeout_error(f"{self!r}.sync(timeout={seconds:g})", seconds,
                                              self._device)
        if marker.error is not None:
            raise marker.error

    def __sub__(self, other: Event) -> float:
        """Milliseconds from `other` to this event (`end - start`), both timed and done."""
        if not isinstance(other, Event):
            return NotImplemented
        for event in (other, self):
            if event.is_timing_disabled:
                raise InvalidValueError(
                    "an event created without timing cannot be timed: create both with "
                    "options={'enable_timing': True}")
            if not event.is_done:
                raise InvalidValueError(
                    "an event has not completed yet: call sync() on the later event first")
        compiled = _compiled_between(other._marker, self._marker)
        if compiled:
            warnings.warn(
                f"the time between these events includes compiling {', '.join(compiled)} "
                f"for {self._device} at its first launch: launch once before timing",
                TimingIncludesCompileWarning, stacklevel=2)
        return (self._marker.time - other._marker.time) * 1000.0

    def __repr__(self) -> str:
        state = "done" if self.is_done else "pending"
        return f"<Event on {self._device} {state}>"
