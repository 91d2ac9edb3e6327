"""Timing kernels for the autotuner and the GEMM benchmarks: the median over groups of
launches between events, after a warm-up, and on CUDA devices the launches queued straight
on the device's CUDA stream.

ptxport's runtime waits for each launch to finish before the next one starts (the backend
hooks run synchronously), so the time between two events around several launches also holds
the host's work between them: for kernels of tens of microseconds, a good part of it. On a
cuda device, `direct` queues the kernel's binary itself on the calling thread's CUDA stream
with a packed parameter buffer (the same one ptxport's launch passes), and CUDA events time
the GPU alone; elsewhere the launches go through ptxport's stream and its events.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ptxport.runtime.device import Device
from ptxport.runtime.launch import LaunchConfig, launch, pack_arguments
from ptxport.runtime.program import Kernel
from ptxport.runtime.stream import Stream

__all__ = ["Timed", "direct", "median_ms", "through_stream"]

# (queue one launch, make a (start, stop) pair: stop() waits and returns ms since start())
Timed = tuple[Callable[[], None], Callable[[], tuple[Callable[[], None], Callable[[], float]]]]


def through_stream(stream: Stream, config: LaunchConfig, kernel: Kernel, args: tuple) -> Timed:
    """Launches through ptxport's `stream`, timed by its events (any device)."""
    def record():
        start = []

        def begin() -> None:
            start.append(stream.record(options={"enable_timing": True}))

        def stop() -> float:
            end = stream.record(options={"enable_timing": True})
            end.sync()
            return end - start[0]
        return begin, stop
    return (lambda: launch(stream, config, kernel, *args)), record


def direct(device: Device, config: LaunchConfig, kernel: Kernel, args: tuple) -> Timed | None:
    """Launches queued straight on `device`'s CUDA stream, timed by CUDA events; None where
    the device is not a cuda one. The kernel must have been launched once through ptxport
    (compiled, loaded, its configuration checked)."""
    if device.backend != "cuda":
        return None
    from ptxport.runtime.backends.cuda import _check, _driver

    driver = _driver()
    backend, ordinal = device._backend, device.device_id
    binary = kernel._binary(device)
    params, keep = pack_arguments(kernel, args, device)
    stream = backend.stream(ordinal)
    grid, block, shared = config.grid, config.block, config.shmem_size
    events = [_check(driver.cuEventCreate(0), "cuEventCreate") for _ in range(2)]

    def run(keep=keep) -> None:   # (`keep`: the buffers stay alive while this can launch)
        binary.launch(ordinal, grid, block, shared, params, stream)

    def record():
        def begin() -> None:
            _check(driver.cuEventRecord(events[0], stream), "cuEventRecord")

        def stop() -> float:
            _check(driver.cuEventRecord(events[1], stream), "cuEventRecord")
            _check(driver.cuEventSynchronize(events[1]), "cuEventSynchronize")
            return _check(driver.cuEventElapsedTime(*events), "cuEventElapsedTime")
        return begin, stop
    return run, record


def median_ms(timed: Timed, warm_ms: float, group_ms: float, groups: int) -> tuple[float, float]:
    """(ms, host ms) of one launch: the median over `groups` groups of about `group_ms` each
    after about `warm_ms` of launches (clocks up, caches warm), and the host's median time to
    queue one launch (near the first: the GPU may have waited for the host)."""
    run, record = timed
    host: list[float] = []

    def group(count: int) -> float:
        begin, stop = record()
        begin()
        started = time.perf_counter()
        for _ in range(count):
            run()
        host.append((time.perf_counter() - started) * 1e3 / count)
        return stop() / count

    once = max(group(1), 1e-3)
    count = max(1, round(group_ms / once))
    for _ in range(max(1, round(warm_ms / (count * once)))):
        group(count)
    host.clear()
    ms = float(np.median([group(count) for _ in range(groups)]))
    return ms, float(np.median(host))
