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
The same Starter also runs such a kernel's other launches whole (Starter.run: a small grid
launch() runs at once, or one queued), reusing the last launch's setup as an early start does.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

from ptxport.errors import KernelExecutionError, PtxportError
from ptxport.runtime.backends.cpu import entry
from ptxport.runtime.backends.cpu import pool as pool_threads
from ptxport.runtime.backends.cpu.executor import Grid, schedule, worker_count
from ptxport.runtime.backends.cpu.launch_words import (
    exiting_error,
    give_param_buffer,
    running,
    take_param_buffer,
    take_stop,
)

__all__ = ["Starter"]


class Starter:
    """Begins the launches of one binary (its code for one block shape) early: what the
    backend's `starter` gives launch.py, once per kernel, device and block shape. `binary`
    may be begun early (no printf, no grids launched, no stack or device heap set up for a
    launch: jit.py asks); `live_ranges()` gives the live allocations' (address, size)
    ranges, `heap_range()` the device heap's or None, `with_heap(live, heap)` both as one
    tuple (the same object for the same ones).

    A launch like the last one begun here that succeeded (the same pool, stop word,
    parameter buffer and allocations object, grid, worker count and schedule: a program
    launching a kernel over and over) reuses its Grid and team as they are: their words are
    already set, so nothing of the executor's setup runs again. The starter keeps its stop
    word and parameter buffer between its launches (launch_words' pools lend others)."""

    __slots__ = ("binary", "live_ranges", "heap_range", "with_heap", "last", "spare",
                 "ready")

    def __init__(self, binary, live_ranges: Callable[[], tuple | None],
                 heap_range: Callable[[], tuple | None], with_heap: Callable):
        self.binary, self.live_ranges = binary, live_ranges
        self.heap_range, self.with_heap = heap_range, with_heap
        # (pool, what else the launch had, its Grid, its team) of the last launch begun
        self.last: tuple | None = None
        # the (stop word, parameter buffer) of its launches that ended, for the next
        # (a list: pop and append are atomic, should two streams launch it at once)
        self.spare: list[tuple] = []
        # the (Grid, team, pool, stop word, parameter buffer) of the last launch begun
        # early that succeeded, for a launch like it (__call__'s reopen): a list, popped
        # by the next launch (atomic, as `spare`), which gives the words to `spare` where
        # it is not like it
        self.ready: list[tuple] = []

    def __call__(self, grid: tuple, block: tuple, dynamic_shared: int, params: bytes,
                 keep, what: Callable[[], str]) -> Callable[[], None] | None:
        """Open the grid's blocks to the worker pool's threads now and return the function
        that finishes the launch on the thread that calls it (worker 0's share of the
        blocks left, the wait for the others, and the first failure raised, as run_grid
        raises it; another exception than a ptxport error as KernelExecutionError, `what`
        naming the launch); None, having done nothing, for a launch run_grid must run whole
        (one block, one worker, or waits only the Python resolver completes). `keep` (the
        memory the kernel uses) is kept alive until the launch is finished."""
        binary, smids = self.binary, worker_count()
        if smids < 2:   # (one worker: the sync runs it whole, Starter.run; no pool taken)
            return None
        pool = pool_threads.take()
        try:
            ready = self.ready.pop()    # (atomic: one launch's at a time)
        except IndexError:
            ready = None
        try:
            if ready is not None:
                # (a reopen of the last launch begun here, which succeeded, on the pool it
                # gave back: like it, its Grid and team run again as they are; the checks
                # below passed for it)
                launch, team, last_pool, stop, param_buffer = ready
                last = self.last
                # (the team's last launch was this one, which succeeded: Grid.finish)
                if last_pool is pool and team.last_launch is launch.done \
                        and last[2] is launch and last[1] == self._like(
                            stop, param_buffer, grid, dynamic_shared, len(params), smids):
                    if params:
                        param_buffer.raw = params
                    team.last_launch = None     # (set again when this one succeeds)
                else:
                    self.spare.append((stop, param_buffer))
                    ready = None
            if ready is None:
                if grid[0] * grid[1] * grid[2] < 2 \
                        or (binary.plan.sync_points and not binary.native_waits):
                    pool_threads.give(pool)
                    return None
                launch, team, stop, param_buffer = self._begin(grid, block, dynamic_shared,
                                                               params, smids, pool)
        except Exception:
            pool_threads.give(pool)
            return None     # (run_grid, which the caller calls now, raises it)
        if launch.layout is entry.CLAIMED_WAITING:
            team.grid = launch      # (a worker's `finish` callback finds the launch there)
        pool.open(team.job)
        # (after the opening: every bytecode before it delays all the workers, and this
        # thread holds the launch until _finish either way)
        running(stop, True)
        return functools.partial(_finish, self, launch, team, pool, stop, param_buffer,
                                 keep, what)

    def expect(self, blocks: int) -> None:
        """The backend's expect_launch for a launch of `blocks` blocks (more than one) of
        this binary, without its look-ups (launch.py's launch like the last one calls it
        before its comparisons): wake the parked pool threads it will run on."""
        if pool_threads.parked():   # (the usual case, launches in a row: none)
            pool_threads.prewake(min(worker_count(), blocks) - 1)

    def run(self, grid: tuple, block: tuple, dynamic_shared: int, params: bytes) -> None:
        """Run a launch whole on this thread, as run_grid runs it (launch.py's `run`: a
        small grid that launch() runs at once, or a launch queued), reusing the last
        launch's Grid and team where it is like it; raise the first failure (a ptxport
        error, another exception as it came: the caller names the launch)."""
        if self.ready:      # (its words, for _begin)
            try:
                self.spare.append(self.ready.pop()[3:])
            except IndexError:
                pass
        pool = pool_threads.take()
        try:
            launch, team, stop, param_buffer = self._begin(grid, block, dynamic_shared,
                                                           params, worker_count(), pool)
        except BaseException:
            pool_threads.give(pool)
            raise
        running(stop, True)
        _finish(self, launch, team, pool, stop, param_buffer, None, None)

    def _like(self, stop, param_buffer, grid: tuple, dynamic_shared: int, nparams: int,
              smids: int) -> tuple:
        """What a launch shares with the last one begun here where its Grid and team run
        again (__call__'s reopen, _begin): its words, the live allocations (with the device
        heap's), grid, dynamic shared memory, parameter bytes, workers, schedule and native
        waits; read at every launch (the checks that protect users)."""
        allocations = self.live_ranges()
        heap = self.heap_range()
        if allocations is not None and heap is not None:
            allocations = self.with_heap(allocations, heap)
        return (stop, param_buffer, allocations, grid, dynamic_shared, nparams, smids,
                schedule(), self.binary.native_waits)

    def _begin(self, grid: tuple, block: tuple, dynamic_shared: int, params: bytes,
               smids: int, pool) -> tuple:
        """The launch's Grid prepared on `pool`, taken for it (the last one's where the
        launch is like it), with its team, stop word and parameter buffer; on a failure,
        the words given back and the error raised (the caller gives the pool back)."""
        try:
            stop, param_buffer = self.spare.pop()
        except IndexError:
            stop, param_buffer = take_stop(), take_param_buffer(len(params))
        if params:      # (`raw`: one memcpy; a slice assignment copies byte by byte, and
            param_buffer.raw = params    # ctypes.memmove, a foreign call, lets the GIL go)
        like = self._like(stop, param_buffer, grid, dynamic_shared, len(params), smids)
        last = self.last
        # (reused where it was the last launch on its team, which succeeded: the team's
        # words and its workers' contexts are still set for it, Grid.finish)
        if last is not None and last[0] is pool and last[1] == like \
                and last[3].last_launch is not None \
                and last[3].last_launch[2] is last[2].like:
            launch, team = last[2], last[3]
            team.last_launch = None     # (as Grid.prepare: set again when this one succeeds)
            if launch.python_rounds:    # (run(): no pool, whose share zeroes the cache)
                team.workers[0].restart()
            return launch, team, stop, param_buffer
        try:
            launch = Grid(self.binary, grid, block, dynamic_shared,
                          (ctypes.addressof(param_buffer), len(params)), like[2], stop)
            team = launch.prepare(pool)
        except BaseException:
            self.spare.append((stop, param_buffer))
            raise
        self.last = (pool, like, launch, team)
        return launch, team, stop, param_buffer


def _finish(starter: Starter, launch: Grid, team, pool, stop, param_buffer, keep,
            what: Callable[[], str] | None) -> None:
    """A launch begun early, finished on this thread (Starter's): worker 0's share of the
    blocks left, the wait for the other workers, and the first failure raised (another
    exception than a ptxport error as KernelExecutionError, `what` naming the launch; as
    it came where `what` is None, for Starter.run's caller to name it)."""
    failure = None
    try:
        launch.finish(pool, team)
    except PtxportError as e:       # reported below, after the pool is given back
        failure = e
    except Exception as e:
        failure = e
        if what is not None:
            failure = KernelExecutionError(f"{what()} failed: {type(e).__name__}: {e}")
            failure.__cause__ = e
    except BaseException as e:
        failure = e
    finally:
        pool_threads.give(pool)
        running(stop, False)
    if stop.value:      # (no watchdog: only the interpreter's exit sets it)
        give_param_buffer(param_buffer)
        raise exiting_error(starter.binary.plan.name, launch.grid, launch.block)
    if failure is not None:
        starter.spare.append((stop, param_buffer))
        raise failure
    if what is not None:    # (begun early, by __call__: the next may reopen it)
        starter.ready.append((launch, team, pool, stop, param_buffer))
    else:
        starter.spare.append((stop, param_buffer))

