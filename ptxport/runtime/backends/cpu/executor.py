"""Runs a grid of a compiled CPU kernel: blocks on all cores, threads of a block in rounds.

The launching thread sets up one worker per core (its memory and context, kept for later
launches) and hands the grid to a pool of native threads (pool.py) in one call: each worker
claims chunks of blocks from a shared counter with atomic adds and runs them in compiled code,
with no Python between blocks. In a block, `run_threads` runs every runnable thread until it
waits or exits, and native.py completes the common waits; a block whose waits need the
general resolver (warps.py, in Python) is left by its worker and finished here after the
others ran the rest of the grid. A kernel that traps raises KernelTrapError
(KernelAssertError after a failed assert); threads that wait for each other forever raise
KernelExecutionError. Messages name the user's source line first where the PTX has line
information (.loc), then the PTX line.

A launch with a timeout is stopped by a watchdog timer: it sets the launch's stop word, which
compiled kernels look at in every loop and between blocks (codegen/targets/cpu/stop.py), and the
workers leave their blocks as they would for a trap; the launch then raises
KernelTimeoutError. Workers set every block up afresh, so later launches run normally.

A launch's fixed cost is Python under the GIL, which short kernels take longer than their
blocks: what does not change between launches (the workers' memory and contexts, their
allocation tables while the allocations are the same, the pool's job) is kept, per pool,
binary and block shape.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from functools import cache

import numpy as np

from ptxport.codegen.targets.cpu.abi import (
    BLOCKED,
    CALL_FAULT,
    CTX,
    EXITED,
    FAULTED,
    FRAME,
    FREE_FAULT,
    NATIVE_STACK_FAULT,
    RUNNABLE,
    STACK_FAULT,
    TRAPPED,
)
from ptxport.codegen.targets.cpu.gang.lanes import DEADLOCK, NOT_MEMBER
from ptxport.codegen.targets.cpu.local_stack import NATIVE_STACK_BUDGET
from ptxport.codegen.targets.cpu.stop import STOPPED
from ptxport.errors import (
    CooperativeLaunchTooLargeError,
    IllegalAddressError,
    KernelAssertError,
    KernelExecutionError,
    KernelTimeoutError,
    KernelTrapError,
    UnsupportedFeatureError,
)
from ptxport.ir.lines import where
from ptxport.runtime.backends.cpu import device_launch, entry, printf, warps
from ptxport.runtime.backends.cpu import pool as pool_threads
from ptxport.runtime.backends.cpu.cores import usable_cores
from ptxport.runtime.backends.cpu.launch_words import (
    exiting_error,
    give_param_buffer,
    give_stop,
    on_lines,
    running,
    stop_word,
    take_param_buffer,
    take_stop,
)
from ptxport.runtime.backends.cpu.tables import disjoint, worker_tables

__all__ = ["SCHEDULES", "run_grid", "schedule", "set_schedule", "set_workers",
           "worker_count"]


_WORKERS: int | None = None
_FORMATS = {np.uint32: "<I", np.uint64: "<Q", np.int32: "<i", np.int64: "<q"}


def worker_count() -> int:
    """How many host threads run blocks: set_workers' value, else the cores this process may
    use."""
    if _WORKERS is not None:
        return _WORKERS
    return _cores()


@cache
def _cores() -> int:
    # (once: a system call at every launch costs more than an empty kernel runs)
    return usable_cores()


def set_workers(count: int | None) -> None:
    """Run blocks on `count` host threads (None: one per core), e.g. to measure one core."""
    global _WORKERS
    if count is not None and count < 1:
        raise ValueError("the worker count must be at least 1")
    _WORKERS = count


# How workers share a grid's blocks (the first is the default): "guided", decreasing chunks
# (half a worker's share of the blocks left, down to 1/256 of its share of the grid), large
# while many blocks are left and small at the grid's end, so that a worker slowed by a core
# that something else uses holds only a small chunk when the others have finished, and the
# workers end close together (the least chunk was 1/64 of a share until session 16: on the
# GPU host's 16 cores the first worker to end waited 7.6 us for the last on stencil's 16,384
# blocks and 21.8 us on scan_blelloch's 4,096, one least chunk; with 1/256, 2.9 and 6.2 us,
# docs/cpu-target-measurements.md "Session 16: launch19"); "chunks",
# equal chunks of about 1/16 of a worker's share. On the GPU machine's 16 vCPUs
# (benchmarks/cpu_scaling.py: benchmarks/data/cpu_scaling_h100host_2fd2abf.txt) both ran the
# large kernels equally fast on idle cores (guided / chunks 0.97-1.03, geometric mean over 7
# kernels at 8, 12, 15 and 16 workers), and with two cores kept busy by other processes
# guided was faster (0.88-0.94). (For a while the default was "chunks": thrust_cub hung under
# guided claiming until a worker finished a block that needs the Python resolver at once,
# 5178ecc.) Large first chunks matter to the stencil: "chunks" ran its blocks 1.3x longer
# on the GPU host's 16 cores.
SCHEDULES = ("guided", "chunks")
_SCHEDULE = [SCHEDULES[0]]


def set_schedule(kind: str) -> None:
    """Share blocks among workers by `kind` (one of SCHEDULES) from the next launch on."""
    if kind not in SCHEDULES:
        raise ValueError(f"unknown schedule {kind!r}: one of {', '.join(SCHEDULES)}")
    _SCHEDULE[0] = kind


def schedule() -> str:
    """How workers share a grid's blocks now (set_schedule)."""
    return _SCHEDULE[0]


def _chunk(blocks: int, workers: int) -> int:
    """The claiming entry points' `chunk` word (codegen/targets/cpu/entry.py's
    build_claiming) for the schedule chosen now."""
    if _SCHEDULE[0] == "guided" and workers > 1:
        least = max(1, blocks // (workers * 256))
        return -((2 * workers) << 32 | least)
    return max(1, blocks // (workers * 16))


# bytes each worker allocates past its block's shared memory (never a valid address: the
# table and the fault message use the declared size)
_SHARED_PAD = 16


def _own_ranges(shared: np.ndarray, frames: np.ndarray) -> list[tuple[int, int]]:
    """A worker's own [start, end) ranges that generic addresses may reach: its block's shared
    memory as declared (not the 16 bytes allocated past it, which generic accesses once
    reached unreported) and its threads' frames."""
    return [(a, a + n) for a, n in ((shared.ctypes.data, shared.size - _SHARED_PAD),
                                    (frames.ctypes.data, frames.size)) if n > 0]


class _Worker:
    """One worker's memory for running blocks of one launch."""

    def __init__(self, binary, block, dynamic_shared: int):
        plan = binary.plan
        self.binary, self.plan, self.block = binary, plan, tuple(block)
        self.nthreads = block[0] * block[1] * block[2]
        # (warp gangs: a frame of 32 * frame_size bytes per warp, the last one whole too)
        frames = (self.nthreads + 31) // 32 * 32 if plan.gang else self.nthreads
        # 128-byte aligned: warp gangs keep vector registers in their frames; device
        # functions' local stack follows (near: local addresses are offsets from a frame)
        frames_bytes = frames * plan.frame_size + 64
        raw = np.zeros(frames_bytes + plan.local_stack + 128, dtype=np.uint8)
        start = (-raw.ctypes.data) % 128
        self.frames = raw[start:start + frames_bytes]
        self.local_stack = raw[start + frames_bytes:start + frames_bytes + plan.local_stack]
        # (each on cache lines of its own: the workers write theirs at once)
        self.shared = on_lines(plan.static_shared + dynamic_shared + _SHARED_PAD, np.uint8)
        self.ctx = on_lines(CTX.size, np.uint8)
        self.points = on_lines(self.nthreads, np.int32)
        self.statuses = on_lines(self.nthreads, np.int32)
        fields = CTX.fields
        self._put(self.ctx, fields["shared"], np.uint64, self.shared.ctypes.data)
        for axis in range(3):
            self._put(self.ctx, fields["ntid"] + 4 * axis, np.uint32, block[axis])
        self._put(self.ctx, fields["nwarpid"], np.uint32, (self.nthreads + 31) // 32)
        self._put(self.ctx, fields["dynamic_smem"], np.uint32, dynamic_shared)
        self._put(self.ctx, fields["total_smem"], np.uint32, plan.static_shared + dynamic_shared)
        if plan.local_stack:
            stack = self.local_stack.ctypes.data
            for name, value in (("local_stack", stack), ("local_stack_start", stack),
                                ("local_stack_end", stack + plan.local_stack)):
                self._put(self.ctx, fields[name], np.uint64, value)
        t = np.arange(self.nthreads)
        header = np.ndarray((self.nthreads, plan.frame_size), np.uint8, self.frames, 0,
                            (plan.frame_size, 1))
        tid = np.stack([t % block[0], (t // block[0]) % block[1],
                        t // (block[0] * block[1]), t % 32, t // 32], axis=1).astype(np.uint32)
        if not plan.gang:
            header[:, FRAME.fields["tid"]:FRAME.fields["tid"] + 20] = tid.view(np.uint8)
        self.slots = warps.Slots(self.frames, plan.frame_size, self.nthreads, FRAME.fields)
        self.site_cache = on_lines(2 * max(plan.check_sites, 1), np.uint64)
        self._site_cache_address = self.site_cache.ctypes.data
        # (zeroed at every checked launch; a kernel without sites has none to zero)
        self.site_cache_bytes = self.site_cache.nbytes if plan.check_sites else 0
        self._put(self.ctx, fields["site_cache"], np.uint64, self._site_cache_address)
        self.own_ranges = _own_ranges(self.shared, self.frames)
        # The fields every launch sets, as ctypes views of the context (cheaper to set than
        # packing bytes, which costs more than an empty kernel runs).
        self._launch_fields = [
            ctype.from_buffer(self.ctx, fields[name] + extra) for name, extra, ctype in (
                ("stop", 0, ctypes.c_uint64), ("params", 0, ctypes.c_uint64),
                ("smid", 0, ctypes.c_uint32),
                ("nctaid", 0, ctypes.c_uint32), ("nctaid", 4, ctypes.c_uint32),
                ("nctaid", 8, ctypes.c_uint32), ("nsmid", 0, ctypes.c_uint32),
                ("fault_address", 0, ctypes.c_uint64), ("fault_info", 0, ctypes.c_uint64),
                ("alloc_table", 0, ctypes.c_uint64), ("alloc_count", 0, ctypes.c_uint32),
                ("checks", 0, ctypes.c_uint32), ("grid_workspace", 0, ctypes.c_uint64))]
        # what the allocation table was made from (the same objects: it is made again
        # only when they change) and the table
        self._table_of: tuple | None = None
        # what prepare() last put in the context's launch fields, and the `_table_of` whose
        # table the context's table fields point at (None: unchecked)
        self._shape: tuple | None = None
        self._table_set: tuple | None = None
        self.table = np.zeros(0, dtype=np.uint64)
        self._table_address = 0
        self._fault_info = self._launch_fields[8]
        # the native entry points' first arguments, and their results' words
        self._block_args = (self.ctx.ctypes.data, self.frames.ctypes.data, plan.frame_size,
                            self.points.ctypes.data, self.statuses.ctypes.data, self.nthreads)
        words = on_lines(2, np.int64)
        self._status = ctypes.c_int32.from_buffer(words, 0)
        self._end = ctypes.c_int64.from_buffer(words, 8)
        # the claiming entry points' arguments before the launch's words (entry.Layout)
        self.claim_words = {
            entry.CLAIMED: (self.ctx.ctypes.data, self.frames.ctypes.data, plan.frame_size,
                            self.nthreads, 0, 0, 0, ctypes.addressof(self._end),
                            ctypes.addressof(self._status)),
            entry.CLAIMED_WAITING: (*self._block_args, 0, 0, 0, ctypes.addressof(self._end),
                                    0)}

    def prepare(self, params: tuple[int, int], grid, allocations, global_ranges,
                stop: ctypes.c_int32, smid: int, smids: int, workspace: int = 0,
                table: np.ndarray | None = None) -> None:
        """Set up a launch: its parameters' (address, size), grid, the (address, size) of
        the memory it may touch besides this worker's own (None: unchecked) and its stop
        word; `smid`: this worker's number (%smid) of `smids`; `workspace`: a cooperative
        launch's grid workspace (%envreg1:%envreg2), else 0; `table`: this worker's
        allocation table if made already (tables.worker_tables). A worker is kept for the
        next launch of the same binary and block shape on the same host thread: allocating
        and filling its memory cost more than short kernels run, under the GIL."""
        self.stop = stop
        (stop_word, params_word, smid_word, nctaid_x, nctaid_y, nctaid_z, nsmid,
         fault_address, fault_info, alloc_table, alloc_count, checks,
         workspace_word) = self._launch_fields
        # (the same stop word, parameter buffer and grid come again launch after launch)
        shape = (ctypes.addressof(stop), params[0], grid, smid, smids, workspace)
        if shape != self._shape:
            stop_word.value, params_word.value = shape[0], params[0]
            nctaid_x.value, nctaid_y.value, nctaid_z.value = grid
            smid_word.value, nsmid.value = smid, smids
            workspace_word.value = workspace
            self._shape = shape
        # A fault belongs to the launch that made it: the worker is kept for later launches.
        fault_address.value = fault_info.value = 0
        # Each checked access site's last allocation [start, end) (without allocations to
        # check against, every site accepts everything), and each warp-gang prefetch site's
        # last address (the first word; zero: none yet).
        if allocations is None:
            self.site_cache[0::2] = 0
            self.site_cache[1::2] = np.iinfo(np.uint64).max
            checks.value = 0
            self._table_set = None
            return
        if self.site_cache_bytes:
            ctypes.memset(self._site_cache_address, 0, self.site_cache_bytes)
        # (a table made for these: the context's table fields still point at it)
        made_of = self._table_of
        if not self.table_made_for(allocations, global_ranges, params):
            if table is None:
                table = np.array(disjoint(_ranges(allocations, global_ranges, params)
                                          + self.own_ranges), dtype=np.uint64).reshape(-1)
            self.table = table
            self._table_address = self.table.ctypes.data
            self._table_of = made_of = (allocations, global_ranges, params)
        if self._table_set is not made_of:
            alloc_table.value, alloc_count.value = self._table_address, self.table.size // 2
            checks.value = 1
            self._table_set = made_of

    def table_made_for(self, allocations, global_ranges, params) -> bool:
        """Whether this worker's allocation table is the one for these (the backend passes
        the same allocations object while none was made or freed)."""
        made_of = self._table_of
        return made_of is not None and made_of[0] is allocations \
            and made_of[1] is global_ranges and made_of[2] == params

    def restart(self) -> None:
        """prepare() again for a launch with what the last one had, which ended without a
        failure (so no fault is recorded): only the access sites' cache starts afresh."""
        if self.site_cache_bytes and self._table_set is not None:
            ctypes.memset(self._site_cache_address, 0, self.site_cache_bytes)

    @staticmethod
    def _put(buffer: np.ndarray, offset: int, dtype, value: int) -> None:
        struct.pack_into(_FORMATS[dtype], buffer, offset, value)

    def _python_block(self, number: int, grid) -> None:
        ctaid = (number % grid[0], (number // grid[0]) % grid[1],
                 number // (grid[0] * grid[1]))
        self.slots.start_block()
        self._finish_block(ctaid, started=True)

    def run_waiting_blocks(self, first: int, count: int, grid) -> None:
        """Blocks first..first+count-1 of a kernel with barriers or warp operations: natively
        while the waits are the common ones, in Python for a block whose waits are not."""
        end = first + count
        while first < end:
            stopped = self.binary.run_waiting_blocks(*self._block_args, first, end - first)
            if stopped < 0:
                return
            self._python_block(stopped, grid)
            first = stopped + 1

    def run_block(self, ctaid: tuple[int, int, int]) -> None:
        fields = CTX.fields
        for axis in range(3):
            self._put(self.ctx, fields["ctaid"] + 4 * axis, np.uint32, ctaid[axis])
        self.points[:] = 0
        self.statuses[:] = RUNNABLE
        self.slots.start_block()
        self._finish_block(ctaid, started=False)

    def _finish_block(self, ctaid, started: bool) -> None:
        """Run the block's threads to the end; `started`: they already ran a first round."""
        args = self._block_args
        native = self.binary.run_block if self.binary.native_waits else None
        while True:
            if self.stop.value:
                raise _Stopped
            if started:
                started = False
            elif native is not None:
                if native(*args) == 0:    # every thread exited
                    self.fault_after_run(ctaid)
                    return
            else:
                self.binary.run_threads(*args)
            if (self.statuses == EXITED).all():
                self.fault_after_run(ctaid)
                return
            trapped = np.nonzero(self.statuses == TRAPPED)[0]
            if trapped.size and int(self.points[trapped[0]]) == STOPPED:
                raise _Stopped
            if trapped.size and int(self.points[trapped[0]]) == FAULTED:
                raise IllegalAddressError(self._fault_message(ctaid, int(trapped[0])))
            if trapped.size:
                t = int(trapped[0])
                raise self._trap_error(ctaid, t, -1 - int(self.points[t]))
            if not warps.resolve(self.plan, self.points, self.statuses, self.slots,
                                    BLOCKED, RUNNABLE, EXITED):
                raise KernelExecutionError(self._deadlock_message(ctaid))

    def _raise_failure(self, failed: int, status, grid) -> None:
        """After run_blocks: the error for the thread that trapped or faulted, if any."""
        if failed >= 0 and status.value == STOPPED:
            raise _Stopped
        if failed >= 0:
            n, t = failed >> 32, failed & 0xFFFFFFFF
            ctaid = (n % grid[0], (n // grid[0]) % grid[1], n // (grid[0] * grid[1]))
            if status.value == FAULTED:
                raise IllegalAddressError(self._fault_message(ctaid, t))
            if status.value in (DEADLOCK, NOT_MEMBER):
                raise KernelExecutionError(
                    f"kernel '{self.plan.name}', block {ctaid}, thread {t}: " + (
                        "it waits at a warp operation for lanes of its member mask that "
                        "never arrive (a GPU would hang)" if status.value == DEADLOCK
                        else "it executes a warp operation whose member mask does not name "
                             "its lane (undefined in PTX)"))
            raise self._trap_error(ctaid, t, -1 - status.value)

    def _where(self, line: int) -> str:
        """`check.cu:5 (PTX line 62)`, or `line 62` without line information."""
        return where(self.plan.source_lines.source_line(line), line)

    def _trap_error(self, ctaid, thread: int, number: int) -> KernelTrapError:
        """The error for `thread` of block `ctaid`, which executed trap number `number`: a
        KernelAssertError with CUDA's text when the trap ended a failed assert."""
        place = self._where(self.plan.trap_lines.get(number, 0))
        x, y = self.block[0], self.block[1]
        tid = (thread % x, thread // x % y, thread // (x * y))
        params = int(self.ctx[CTX.fields["params"]:CTX.fields["params"] + 8].view(np.uint64)[0])
        assertion = printf.assertion_of(params, tuple(ctaid), tid)
        if assertion is not None:
            return KernelAssertError(
                f"kernel '{self.plan.name}' failed a device-side assert at {place}: "
                f"{assertion.text}")
        return KernelTrapError(f"kernel '{self.plan.name}' executed trap at {place} in block "
                               f"{ctaid}, thread {thread}")

    def _fault_message(self, ctaid, thread: int | None) -> str:
        fields = CTX.fields
        address = int(self.ctx[fields["fault_address"]:fields["fault_address"] + 8]
                      .view(np.uint64)[0])
        info = int(self.ctx[fields["fault_info"]:fields["fault_info"] + 8].view(np.uint64)[0])
        line, size, write = info >> 16, (info >> 1) & 0x7FFF, info & 1
        where = (ctaid if isinstance(ctaid, str) else f"block {ctaid}") + (
            "" if thread is None else f", thread {thread}")
        if size == CALL_FAULT:
            return (f"kernel '{self.plan.name}' called address {address:#x}, which is no "
                    f"function of the module, at {self._where(line)} in {where}; nothing "
                    "was run there and the device is still usable")
        if size == FREE_FAULT:
            return (f"kernel '{self.plan.name}' freed address {address:#x}, which device "
                    f"malloc did not return or which was freed before, at {self._where(line)} "
                    f"in {where}; nothing was freed and the device is still usable")
        if size == STACK_FAULT:
            limit = " (cudaLimitStackSize: raise it with cudaDeviceSetLimit)" \
                if self.plan.stack_from_limit else ""
            return (f"kernel '{self.plan.name}' ran out of stack for local memory (device "
                    f"functions' frames, alloca; {self.plan.local_stack} bytes per "
                    f"thread{limit}: a recursion too deep?) at {self._where(line)} in {where}; "
                    "that call or alloca was not made and the device is still usable")
        if size == NATIVE_STACK_FAULT:
            return (f"kernel '{self.plan.name}' ran out of native stack for recursive calls "
                    f"(the cpu device's budget of {NATIVE_STACK_BUDGET >> 20} MiB per worker, "
                    f"whatever cudaLimitStackSize is) at {self._where(line)} in {where}: a "
                    "recursion too deep; that call was not made and the device is still usable")
        return (f"kernel '{self.plan.name}' {'wrote' if write else 'read'} {size} bytes at "
                f"address {address:#x}, outside every allocation, at {self._where(line)} in "
                f"{where}; nothing was {'written' if write else 'read'} there and the device is "
                f"still usable{self._near_shared(address)}")

    def _near_shared(self, address: int) -> str:
        """Where a bad address lies within 256 bytes of the block's shared memory (a generic
        access past a __shared__ array): how far, for the fault's message."""
        start, declared = self.shared.ctypes.data, self.shared.size - _SHARED_PAD
        if start + declared <= address < start + declared + 256:
            return (f" (the address is {address - start - declared} bytes past the end of "
                    f"the block's {declared} bytes of shared memory)")
        if start - 256 <= address < start:
            return f" (the address is {start - address} bytes before the block's shared memory)"
        return ""

    def fault_after_run(self, ctaid) -> None:
        """Device functions record a bad access and go on; report it after the block (which
        thread made it is not recorded)."""
        if self._fault_info.value:
            raise IllegalAddressError(self._fault_message(ctaid, None))

    def _deadlock_message(self, ctaid) -> str:
        waiting = {}
        for t in np.nonzero(self.statuses == BLOCKED)[0]:
            point = self.plan.sync_points[int(self.points[t])]
            waiting.setdefault((point.line, point.inst.spec.text), []).append(int(t))
        waits = "; ".join(f"{len(ts)} thread(s) at {self._where(line)} ('{text}'), e.g. "
                          f"thread {ts[0]}" for (line, text), ts in sorted(waiting.items()))
        return (f"kernel '{self.plan.name}', block {ctaid}: threads wait for each other "
                f"forever (a GPU would hang): {waits}")


def _ranges(allocations, global_ranges, params) -> list[tuple[int, int]]:
    """The [start, end) ranges every worker of a launch may touch (besides its own)."""
    return [(a, a + n) for a, n in (*allocations, *global_ranges, params) if n > 0]


class _Stopped(Exception):
    """A worker left its blocks because the launch was asked to stop (run_grid reports it)."""


class _Team:
    """The workers that run one binary's blocks of one shape on one pool's threads, and what
    the pool runs for them (pool.Job): one row of the claiming entry point's arguments per
    worker, a result word per worker, and the shared block counter. Kept on the binary for
    later launches: the pool is one launch's at a time, so its team is too."""

    def __init__(self, binary, block, dynamic_shared: int, layout: entry.Layout):
        self.binary, self.block, self.dynamic_shared = binary, block, dynamic_shared
        self.layout = layout
        self.workers: list[_Worker] = []
        # (the counter alone on its cache line: the workers add to it)
        self.counter = on_lines(1, np.int64)
        self.counter_address = self.counter.ctypes.data
        self.job = pool_threads.Job()
        words = self.job.words
        words[pool_threads.TRAMPOLINE] = entry.trampoline_address(layout)
        words[pool_threads.ENTRY] = (binary.run_claimed_waiting_blocks_address
                                     if layout is entry.CLAIMED_WAITING
                                     else binary.run_claimed_blocks_address)
        words[pool_threads.STRIDE] = layout.words
        words[pool_threads.COUNTER] = self.counter_address
        # (a trap ends the grid; a waiting block the native code cannot complete ends only
        # its worker's claiming: Python goes on with it after)
        words[pool_threads.STOP_ON_FAILURE] = layout is entry.CLAIMED
        # (kernels without waits: a fault a device function recorded fails the launch after
        # it; with waits, Python looks at the blocks it finishes)
        words[pool_threads.FAULT_FIELD] = \
            CTX.fields["fault_info"] + 1 if layout is entry.CLAIMED else 0
        # (each worker zeroes its own access sites' cache for a checked launch: 16 calls
        # from Python each let the GIL go, and a woken stream thread take it)
        words[pool_threads.CACHE_FIELD] = CTX.fields["site_cache"] + 1
        self.args = self.results = np.zeros(0, dtype=np.int64)
        self._last: tuple[int, int, int] | None = None     # what run() last set
        # (waiting blocks the native code cannot complete: the worker finishes them itself
        # through this, for the launch that runs now)
        self.grid: Grid | None = None
        self._finish = _Finish(self._finish_block) if layout is entry.CLAIMED_WAITING else None
        # what the workers were prepared for at the last launch, if it succeeded
        self.last_launch: tuple | None = None

    def size_for(self, count: int) -> None:
        """Have at least `count` workers."""
        if len(self.workers) >= count:
            return
        while len(self.workers) < count:
            self.workers.append(_Worker(self.binary, self.block, self.dynamic_shared))
        self.args = np.array([w.claim_words[self.layout] for w in self.workers], np.int64)
        self.args[:, self.layout.counter] = self.counter_address
        if self._finish is not None:
            self.args[:, self.layout.counter + 4] = ctypes.cast(self._finish, ctypes.c_void_p).value
        self._by_context = {w.ctx.ctypes.data: w for w in self.workers}
        self.results = on_lines(count, np.int64)
        self._last = None
        words = self.job.words
        words[pool_threads.ARGS] = self.args.ctypes.data
        words[pool_threads.RESULTS] = self.results.ctypes.data

    def _finish_block(self, context: int, number: int, end: int) -> int:
        """Called by a worker (build_claiming's `finish`) for block `number` of its chunk,
        which ends at `end`, whose waits the native code cannot complete: finish it and the
        rest of the chunk here; -1, or `number` after a failure (kept for the launch, which
        stops: others may wait for this block)."""
        grid = self.grid
        try:
            worker = self._by_context[context]
            worker._python_block(number, grid.grid)
            worker.run_waiting_blocks(number + 1, end - number - 1, grid.grid)
            return -1
        except BaseException as e:     # (nothing may leave a callback)
            grid.failures.append(e)
            grid.stop.value = 1
            return number

    def set_grid(self, count: int, total: int, chunk: int) -> None:
        """The job's words for `total` blocks on `count` workers, `chunk` at a time."""
        # (the same grid comes again launch after launch: numpy's stores cost more than
        # an empty kernel runs)
        if (count, total, chunk) != self._last:
            self.args[:count, self.layout.total] = total
            self.args[:count, self.layout.chunk] = chunk
            words = self.job.words
            words[pool_threads.WORKERS], words[pool_threads.TOTAL] = count, total
            self._last = (count, total, chunk)


# build_claiming's `finish`: i64 finish(ctx, block, end)
_Finish = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64)


def _team(binary, pool, block, dynamic_shared: int, layout: entry.Layout) -> _Team:
    """The pool's team for the binary and block shape, kept on the binary (so that it goes
    with it) for the next launch."""
    kept = binary.__dict__.get("_teams")
    if kept is None:
        kept = binary.__dict__.setdefault("_teams", {})     # (one dict call: atomic)
    key = (pool.number, block, dynamic_shared)
    team = kept.get(key)
    if team is None:
        team = _Team(binary, block, dynamic_shared, layout)
        if len(kept) < 16:      # (more: pools of many streams at once, or many shapes)
            kept[key] = team
    return team


def run_grid(binary, grid, block, dynamic_shared: int, params: bytes,
             allocations=None, timeout: float | None = None, cooperative: bool = False) -> None:
    """Run every block of the grid on the workers; raise the first failure, or
    KernelTimeoutError when the launch ran longer than `timeout` seconds and was stopped.
    `cooperative`: a cooperative launch, whose blocks may wait for each other (grid.sync()):
    every block runs at once, one per worker, and the kernel finds a zeroed grid workspace
    in %envreg1:%envreg2 as on NVIDIA's driver."""
    workspace = None
    if cooperative:
        workspace = _cooperative_workspace(binary, grid)
        if allocations is not None:
            allocations = (*allocations, (workspace.ctypes.data, workspace.nbytes))
    # The stop word compiled code looks at; the watchdog sets it. (Kept for later launches
    # when no watchdog had it: workers then keep its address in their context.)
    stop = take_stop() if timeout is None else stop_word()
    watchdog = None if timeout is None else threading.Timer(timeout, setattr,
                                                            (stop, "value", 1))
    if watchdog is not None:
        watchdog.daemon = True
        watchdog.start()
    running(stop, True)
    try:
        _run_grid(binary, grid, block, dynamic_shared, params, allocations, stop,
                  0 if workspace is None else workspace.ctypes.data)
    finally:
        running(stop, False)
        if watchdog is not None:
            watchdog.cancel()
    if stop.value and watchdog is None:
        raise exiting_error(binary.plan.name, grid, block)
    if stop.value:
        raise KernelTimeoutError(
            f"kernel '{binary.plan.name}' (grid {grid}, block {block}) ran longer than its "
            f"timeout of {timeout:g} s and was stopped; what it wrote is undefined, and the "
            "device is usable: fix the kernel (a loop that never ends, a flag no one sets) "
            "or give it a longer LaunchConfig(timeout=...)",
            kernels=(binary.plan.name,), stopped=True)
    if watchdog is None:
        give_stop(stop)


def _cooperative_workspace(binary, grid) -> np.ndarray:
    """A zeroed grid workspace for a cooperative launch of `binary` on `grid`, after checking
    that all its blocks can run at once: a worker runs its block to the end, so blocks that
    wait for each other must each have a worker of their own."""
    blocks, workers = grid[0] * grid[1] * grid[2], worker_count()
    if blocks > workers:
        raise CooperativeLaunchTooLargeError(
            f"a cooperative launch of kernel '{binary.plan.name}' with {blocks} blocks: the cpu "
            f"device runs at most {workers} blocks at once (one per worker; "
            "multiProcessorCount x 1 resident block, as the occupancy API reports)")
    if binary.plan.sync_points and not binary.native_waits:
        raise UnsupportedFeatureError(
            "a cooperative launch", "cpu", reason=(
                f"kernel '{binary.plan.name}' has waits only the Python resolver completes, "
                "which runs its blocks one after another: they could not wait for each other"))
    return on_lines(4, np.uint64)


def _run_grid(binary, grid, block, dynamic_shared: int, params: bytes, allocations,
              stop: ctypes.c_int32, workspace: int) -> None:
    param_buffer = take_param_buffer(len(params))
    if params:      # (`raw`: one memcpy; a slice assignment copies byte by byte, and
        param_buffer.raw = params    # ctypes.memmove, a foreign call, lets the GIL go)
    params_address = ctypes.addressof(param_buffer)
    # (only kernels that call printf or assert have a log to collect and print)
    printf_log = printf.open_log(params_address) if binary.calls_printf else None
    # (only kernels that launch grids: their threads' launches are collected by address)
    launching = getattr(binary, "launches_grids", False) and device_launch.attach(params_address)
    # (a tuple: workers keep their allocation table while the same one comes again)
    if allocations is not None and not isinstance(allocations, tuple):
        allocations = tuple(allocations)
    errors: list[BaseException] = []
    pool = pool_threads.take()
    try:
        Grid(binary, grid, block, dynamic_shared, (params_address, len(params)),
              allocations, stop, workspace).run(pool)
    except BaseException as e:      # reported after the printf log is printed
        errors.append(e)
    finally:
        pool_threads.give(pool)
        if launching:
            device_launch.detach(params_address)
    if printf_log is not None:      # printed after the launch
        errors += printf.close_log(params_address, printf_log)
    give_param_buffer(param_buffer)
    if stop.value:
        return          # the workers' errors come of the stop: run_grid reports that
    if errors:
        raise errors[0]


def _grid_shape(binary, grid, smids: int) -> tuple:
    """Grid's split of `grid` on `smids` workers: (blocks, python_rounds, workers, chunk,
    layout)."""
    blocks = grid[0] * grid[1] * grid[2]
    waits = bool(binary.plan.sync_points)
    # the general resolver (tests compare it with the native one) runs in Python, under
    # the GIL: on the launching thread alone
    python_rounds = waits and not binary.native_waits
    workers = 1 if python_rounds else min(smids, blocks)
    return (blocks, python_rounds, workers, _chunk(blocks, workers),
            entry.CLAIMED_WAITING if waits else entry.CLAIMED)


class Grid:
    """One launch: its workers (a team of the pool it runs on) and how they share the
    blocks."""

    def __init__(self, binary, grid, block, dynamic_shared: int, params: tuple[int, int],
                 allocations, stop: ctypes.c_int32, workspace: int = 0):
        self.binary, self.grid, self.block, self.dynamic_shared = \
            binary, grid, block, dynamic_shared
        self.params, self.allocations, self.stop = params, allocations, stop
        self.workspace = workspace
        self.smids = smids = worker_count()
        # (the same grid comes again launch after launch: its split is kept on the binary)
        shapes = binary.__dict__.get("_grid_shapes")
        if shapes is None:
            shapes = binary.__dict__.setdefault("_grid_shapes", {})   # (atomic)
        key = (grid, smids, _SCHEDULE[0], binary.native_waits)   # (tests change the last)
        shape = shapes.get(key)
        if shape is None:
            shape = _grid_shape(binary, grid, smids)
            if len(shapes) >= 64:     # (a program sweeping over grids: keep the newest)
                shapes.clear()
            shapes[key] = shape
        self.blocks, self.python_rounds, self.workers, self.chunk, self.layout = shape
        # what failed in a block a worker finished in Python (_Team._finish_block); the
        # first one set the stop word, so that blocks waiting for it end too
        self.failures: list[BaseException] = []

    def run(self, pool) -> None:
        """Run every block (raise the first failure)."""
        self.finish(pool, self.prepare(pool))

    def prepare(self, pool) -> _Team:
        """The pool's team for this launch, its workers set up for it."""
        team = _team(self.binary, pool, self.block, self.dynamic_shared, self.layout)
        if len(team.workers) < self.workers:
            team.size_for(self.workers)
        pool.grow(self.workers - 1)
        # (a launch like the team's last, which succeeded, finds every worker's context
        # set: preparing 16 workers costs more than an empty grid runs)
        self.like = like = (self.params, self.grid, self.smids, self.workers, self.workspace)
        # (the team's last_launch once this one succeeds: one tuple, made here)
        self.done = (self.allocations, self.stop, like)
        last = team.last_launch
        if last is not None and last[0] is self.allocations and last[1] is self.stop \
                and last[2] == like:
            if self.python_rounds:      # (no pool: its share would zero the cache)
                team.workers[0].restart()
            # (the job's CACHE_BYTES word is the last launch's, which had these allocations)
        else:
            tables = self._tables(team.workers[:self.workers])
            for smid, worker in enumerate(team.workers[:self.workers]):
                worker.prepare(self.params, self.grid, self.allocations,
                               self.binary.global_ranges, self.stop, smid, self.smids,
                               self.workspace, None if tables is None else tables[smid])
            team.job.words[pool_threads.CACHE_BYTES] = 0 if self.allocations is None \
                else team.workers[0].site_cache_bytes
        team.set_grid(self.workers, self.blocks, self.chunk)
        team.last_launch = None
        return team

    def finish(self, pool, team: _Team) -> None:
        """Run the blocks on the prepared team (those the pool's threads left, when
        an early.Starter opened its job already); raise the first failure. (The team's
        last_launch says, once it is set again, that it succeeded.)"""
        if self.python_rounds:
            self._python_rounds(team.workers[0])
        elif self.layout is entry.CLAIMED_WAITING:
            self._run_waiting(pool, team)
        elif pool.run(team.job):    # (kernels without waits: every block natively)
            self._claimed_failures(team)    # (a worker failed or recorded a fault)
        if not self.stop.value:
            team.last_launch = self.done

    def _tables(self, workers: list[_Worker]) -> np.ndarray | None:
        """Every worker's allocation table at once, when the workers need new ones (the
        launch's allocations changed) and are several; else None (prepare makes or keeps
        its own)."""
        if self.allocations is None or len(workers) < 4 or workers[0].table_made_for(
                self.allocations, self.binary.global_ranges, self.params):
            return None
        return worker_tables(_ranges(self.allocations, self.binary.global_ranges, self.params),
                             [w.own_ranges for w in workers])

    def _claimed_failures(self, team: _Team) -> None:
        """After a run of a kernel without waits in which a worker failed or recorded a
        fault: raise the first failure."""
        results = team.results[:self.workers].tolist()
        for worker, failed in zip(team.workers, results, strict=False):
            if failed >= 0:
                worker._raise_failure(failed, worker._status, self.grid)
        for worker in team.workers[:self.workers]:
            worker.fault_after_run(f"one of blocks 0..{self.blocks - 1}")

    def _run_waiting(self, pool, team: _Team) -> None:
        """Kernels with waits: natively while the waits are the common ones; a worker that
        meets a block whose waits are not finishes it (and the rest of its chunk) in
        Python, through the team's `finish` callback, while the others go on."""
        team.grid = self
        try:
            failed = pool.run(team.job)
        finally:
            team.grid = None
        if self.failures:
            if not isinstance(self.failures[0], _Stopped):
                self.stop.value = 0     # (set by the failure, not by a watchdog or exit)
            raise self.failures[0]
        if failed and self.stop.value:
            raise _Stopped
        if failed:
            raise KernelExecutionError(
                f"kernel '{self.binary.plan.name}': a worker ended without finishing its "
                "blocks (internal error in ptxport's CPU executor)")

    def _python_rounds(self, worker: _Worker) -> None:
        grid = self.grid
        for n in range(self.blocks):
            if self.stop.value:
                return
            worker.run_block((n % grid[0], (n // grid[0]) % grid[1], n // (grid[0] * grid[1])))
