"""Launches whose blocks start before launch() returns: the pool's threads take them while
the launching thread goes on, and the thread that later runs the launch from the stream's
queue (a sync, or the stream's own thread) joins as worker 0 for the blocks left.

A large grid (or a kernel with loops) queued on an idle stream waited until a sync, or the
stream's thread at its next look at the queue (every 2 ms), took it: a caller's host work
between the launch and the sync did not overlap the kernel, and the sync's Python up to the
pool's job (the stream's bookkeeping, the executor's setup: 25-50 us of a 0.6-0.7 ms run
of reduce_shared or scan_warp on the GPU machine's 16 vCPUs, session 9) ran while every
worker waited. Opening the job at the launch (launch.py asks the stream to start it when
the stream is idle, _Worker.start_now) starts the blocks at once, as a GPU starts a kernel
launched on an idle stream (docs/cpu-target-measurements.md, "What a launch costs", has
the figures).

Only launches that run_grid would run on several workers, natively, with nothing to set up
or collect around the run: no printf log, no grids launched by the kernel, no timeout, not
cooperative, no device heap or stack sized for the launch; others are queued as before.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from ptxport.runtime.backends.cpu import entry
from ptxport.runtime.backends.cpu import pool as pool_threads
from ptxport.runtime.backends.cpu.executor import Grid, worker_count
from ptxport.runtime.backends.cpu.launch_words import (
    exiting_error,
    give_param_buffer,
    give_stop,
    running,
    take_param_buffer,
    take_stop,
)

__all__ = ["start_grid"]


def start_grid(binary, grid: tuple, block: tuple, dynamic_shared: int, params: bytes,
               allocations) -> Callable[[], None] | None:
    """Open the grid's blocks to the worker pool's threads now and return the function that
    finishes the launch on the thread that calls it (worker 0's share of the blocks left,
    the wait for the others, and the first failure raised, as run_grid raises it); None,
    having done nothing, for a launch run_grid must run whole (see the module's note)."""
    if binary.calls_printf or getattr(binary, "launches_grids", False) \
            or (binary.plan.sync_points and not binary.native_waits) \
            or min(worker_count(), grid[0] * grid[1] * grid[2]) < 2:
        return None
    if allocations is not None and not isinstance(allocations, tuple):
        allocations = tuple(allocations)
    stop = take_stop()
    param_buffer = take_param_buffer(len(params))
    if params:      # (`raw`: one memcpy; a slice assignment copies byte by byte, and
        param_buffer.raw = params    # ctypes.memmove, a foreign call, lets the GIL go)
    pool = pool_threads.take()
    try:
        launch = Grid(binary, grid, block, dynamic_shared,
                          (ctypes.addressof(param_buffer), len(params)), allocations, stop)
        team = launch.prepare(pool)
        team.set_grid(launch.workers, launch.blocks, launch.chunk)
    except Exception:
        pool_threads.give(pool)     # (run_grid, which the caller calls now, raises it)
        give_stop(stop)
        return None
    if launch.layout is entry.CLAIMED_WAITING:
        team.grid = launch      # (a worker's `finish` callback finds the launch there)
    running(stop, True)
    pool.open(team.job)

    def finish() -> None:
        failure = None
        try:
            launch.finish(pool, team)
        except BaseException as e:      # reported below, after the pool is given back
            failure = e
        finally:
            pool_threads.give(pool)
            running(stop, False)
        give_param_buffer(param_buffer)
        if stop.value:      # (no watchdog: only the interpreter's exit sets it)
            raise exiting_error(binary.plan.name, grid, block)
        give_stop(stop)
        if failure is not None:
            raise failure

    return finish
