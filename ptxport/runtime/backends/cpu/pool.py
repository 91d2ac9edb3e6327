"""Native worker threads that run a launch's blocks on every core, with no Python between
blocks or between workers.

A pool is a set of POSIX threads, started once and kept; they never run Python. A launch
hands a pool a job (Job): a claiming entry point, its trampoline (entry.py), one row of
argument words per worker and a word for each worker's result. `run` is ONE native call (a
builtin, pool_calls.py; the GIL is released for its whole length): it opens the job (bumps
the pool's generation), wakes parked threads if any, runs worker 0's share on the calling
thread, then closes the job and waits for the threads that took it (spinning a little
first); a thread that comes after the close leaves it. A parked thread sleeps on a futex
of its own (where the system has none, as macOS, it polls a flag every 0.2 ms) and takes
a job without a lock, as spinning ones do; the launching thread wakes each parked thread
the job has a worker number for, one system call each, before its own share. On the GPU machine's VM
waking an idle virtual CPU takes about 50 us, whatever wakes it, so a thread woken by a
woken thread (a tree) starts 100 us late, and 16 threads woken in turn through one mutex
(before: a condition each, the job taken under the pool's mutex) began their shares up to
about 125 us after the launch opened. A thread that ended its share (or came too late)
watches the generation for the pool's spin time before it parks: a launch that
comes meanwhile, as a program's next kernel does, finds it awake (waking a parked thread
took tens of microseconds in a VM, more than short grids run), and a process that stops
launching has its cores back after that time. The spin time adapts (set_spin): the
launching thread sets it at each opening to twice the longer of the last two gaps between
a job's close and the next one's open, between 0.1 ms and a cap (2 ms), or 0.1 ms when
that gap was longer than the cap, so launches that come often find the threads awake and a
process that launches rarely (between long stretches of numpy or torch on every core)
loses no more than 0.1 ms of its cores per launch; after 0.1 ms of it a spinning thread
yields the processor at each look at the clock, so that another library's thread that waits
for a core gets it. Each worker claims chunks of blocks from
the launch's shared counter with atomic adds inside the compiled kernel
(codegen/targets/cpu/entry.py). A worker whose block failed (trap, fault, stop) sets the
counter to the grid's end when the job says so, so that the others stop after their chunk.

A pool runs one launch at a time: a launching thread takes a free pool (or makes one) and
gives it back after, so that launches from several streams at once have threads of their own
(a kernel may wait for a flag another stream's kernel sets, as on a GPU). The pool's code is
LLVM IR built here and compiled once per process; the pthread functions (and `syscall`, for
Linux's futex) are found by ctypes in the process, so a missing one is a clear error, not a
crash. A forked child makes new
pools (its parent's threads are not in it).

Why native threads: with Python threads as workers, every worker took the GIL to wake, to set
up and to finish, one after another, and on 16 cores the launches of
benchmarks/cpu_kernels.py took at least about 5 ms, barely faster than on one core.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from functools import cache, partial

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR
from ptxport.codegen.targets.cpu.machine import LLVM_LOCK, jit_engine
from ptxport.errors import PtxportError
from ptxport.runtime.backends.cpu import pool_calls as calls
from ptxport.runtime.backends.cpu import pool_ir as pir

__all__ = ["JOB_WORDS", "SPIN_CAP_NS", "SPIN_FLOOR_NS", "Job", "Pool", "give", "last_shares",
           "parked", "prewake", "set_spin", "spin_policy", "take", "trace_shares"]

# A pool's memory (bytes), by cache line: the pthread objects (opaque; 128 bytes is more
# than any libc's); what threads read while they watch for a job: the generation (bumped
# for each job), the job's address (null: none open), how long (ns) a thread that ended
# its share watches the generation before it parks (set by the launching thread when it
# opens a job: _plan_spin), the spin policy (set_spin: the fixed spin, -1 for the adaptive
# one; its cap and floor) and the address of the table of each thread's words (by worker
# number); what the adaptive spin looks at (the launching thread's alone): when the last
# job closed and the last two gaps between a job's close and the next one's open (ns);
# and, on a line of their own (each thread adds to them, which would take the line from
# threads watching the generation), how many threads run a share of the job now and how
# many are parked (or about to be); how many threads the pool has (grow).
(_MUTEX, _DONE, _GENERATION, _JOB, _SPIN_NS, _FIXED_NS, _CAP_NS, _FLOOR_NS, _THREADS,
 _COUNT, _CLOSED_AT, _GAP, _GAP_BEFORE, _RUNNING, _SLEEPERS, _SIZE) = (
    0, 128, 256, 264, 272, 280, 288, 296, 304, 312, 320, 328, 336, 384, 392, 448)
_SLEEPERS_WORD = _SLEEPERS // 8     # (read at launches)
# A thread's words (a cache line of its own): the pool's address, its worker number, the
# generation it saw last, whether it is parked (or about to be), and the futex it sleeps
# on then (32 bits; the launching thread sets it to 1 to wake it).
_PARKED, _WAKE_FLAG, _THREAD_SIZE = 3, 4, 64

# A job's words (Job below).
(TRAMPOLINE, ENTRY, ARGS, STRIDE, RESULTS, WORKERS, COUNTER, START, TOTAL, STOP_ON_FAILURE,
 FAULT_FIELD, FAILURES, TRACE, CACHE_FIELD, CACHE_BYTES, OPENED) = range(16)
JOB_WORDS = 16

# The least and the most time (ns) the launching thread spins for its helpers to end
# before it waits on the condition (the pool's spin time when between the two; helpers
# that end later than that are not worth a core); the words of a job's trace before the
# workers' (Job.trace).
_LAUNCHER_SPIN_NS, _LAUNCHER_SPIN_MAX_NS = 50_000, 200_000
_TRACE_HEAD = 3
# The least time (ns) a thread woken before a job opened watches for it (prewake).
_PREWAKE_SPIN_NS = 1_000_000


# Linux's futex system call: its number by machine (the process's triple's first part) and
# the two operations used (private: the pool's threads are one process's).
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98, "arm64": 98, "riscv64": 98, "ppc64le": 221,
              "ppc64": 221, "s390x": 238, "loongarch64": 98}
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129
# Where there are no futexes: how often (us) a parked thread looks for a job.
_POLL_US = 200

class Job:
    """What a pool runs: the counter starts at START; worker i calls trampoline(entry, args +
    i * stride words) and stores the result in results[i]. A worker failed when its result is
    not negative, or (FAULT_FIELD: 1 + the offset of a word in the memory its first argument
    points at, 0 for none) when that word is not 0 (a fault it recorded and went on); run()
    returns how many failed. Before its share a worker zeroes CACHE_BYTES bytes at the
    address in the word at offset CACHE_FIELD - 1 of that memory (0: nothing), its access
    sites' cache, which a checked launch starts afresh. The words live in a numpy array so
    that a launch sets the few that change (the grid's block count) without rebuilding
    anything."""

    def __init__(self) -> None:
        self.words = np.zeros(JOB_WORDS, dtype=np.int64)
        self.address = self.words.ctypes.data
        # (the words a launch reads or writes itself, as a memoryview: numpy's indexing
        # touches far more code, which a launch after other work finds out of the caches)
        self.view = memoryview(self.words)
        self._trace: np.ndarray | None = None

    def trace(self, on: bool) -> None:
        """Record the clock (monotonic, ns) at the job's runs from now on (or stop): when the
        launching thread opened it, ended its own share and saw every share end, and when
        each worker's share began and ended (traced())."""
        self._trace = np.zeros(_TRACE_HEAD + 2 * 1024, dtype=np.int64) if on else None
        self.words[TRACE] = 0 if self._trace is None else self._trace.ctypes.data

    @property
    def tracing(self) -> bool:
        return self._trace is not None

    def traced(self, workers: int) -> dict | None:
        """The last traced run, in microseconds from its opening: {"own": the launching
        thread's share ended, "end": every share ended, "shares": [(begin, end) of each
        worker's share, None for a worker that took none], "opened_ns": when it opened (the
        monotonic clock, time.monotonic_ns())}; None when not tracing."""
        if self._trace is None:
            return None
        return _record(self._trace[:_TRACE_HEAD + 2 * workers].tolist(), workers)

    def snapshot(self, workers: int) -> np.ndarray | None:
        """The last traced run's words of `workers` workers, copied (traced() reads them as
        a record): a launch's time after its pool run includes this, not the record's
        making (14 us for 16 workers on the 2-core development machine, a tenth of a short
        launch there)."""
        return None if self._trace is None else self._trace[:_TRACE_HEAD + 2 * workers].copy()


def _record(words: list[int], workers: int) -> dict:
    """Job.traced's record of a trace's words."""
    opened = words[0]

    def us(t: int) -> float:
        return (t - opened) / 1000

    shares = [(us(words[i]), us(words[i + 1])) if words[i] >= opened else None
              for i in range(_TRACE_HEAD, _TRACE_HEAD + 2 * workers, 2)]
    return {"own": us(words[1]), "end": us(words[2]), "shares": shares, "opened_ns": opened}


def _trace(b: ll.IRBuilder, job, pthread: dict, slot: ll.Value) -> None:
    """When the job has a trace (Job.trace), store the clock in its word `slot`."""
    trace = b.load(pir.word(b, job, TRACE), typ=I64)
    with b.if_then(b.icmp_unsigned("!=", trace, I64(0))):
        b.store(pir.now(b, pthread, pir.timespec(b)), pir.word(b, b.inttoptr(trace, PTR), slot))


def _build_share(module: ll.Module, pthread: dict) -> ll.Function:
    """i64 share(job, index): worker `index`'s part of the job; 1 if it failed (see Job)."""
    fn = ll.Function(module, ll.FunctionType(I64, [PTR, I64]), "ptxport_pool_share")
    fn.linkage = "internal"
    job, index = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    _trace(b, job, pthread, b.add(I64(_TRACE_HEAD), b.mul(index, I64(2))))
    trampoline = b.inttoptr(b.load(pir.word(b, job, TRAMPOLINE), typ=I64),
                            ll.FunctionType(I64, [PTR, PTR]).as_pointer())
    entry = b.inttoptr(b.load(pir.word(b, job, ENTRY), typ=I64), PTR)
    args = b.inttoptr(b.add(b.load(pir.word(b, job, ARGS), typ=I64),
                            b.mul(b.mul(index, b.load(pir.word(b, job, STRIDE), typ=I64)), I64(8))),
                      PTR)
    _zero_cache(b, job, b.inttoptr(b.load(args, typ=I64), PTR))
    result = b.call(trampoline, [entry, args])
    results = b.inttoptr(b.load(pir.word(b, job, RESULTS), typ=I64), PTR)
    b.store(result, pir.word(b, results, index))
    _trace(b, job, pthread, b.add(I64(_TRACE_HEAD + 1), b.mul(index, I64(2))))
    failed = b.and_(b.icmp_signed(">=", result, I64(0)),
                    b.icmp_unsigned("!=", b.load(pir.word(b, job, STOP_ON_FAILURE), typ=I64),
                                    I64(0)))
    with b.if_then(failed):
        counter = b.inttoptr(b.load(pir.word(b, job, COUNTER), typ=I64), PTR)
        b.atomic_rmw("xchg", counter, b.load(pir.word(b, job, TOTAL), typ=I64), "seq_cst")
    field = b.load(pir.word(b, job, FAULT_FIELD), typ=I64)
    faulted = b.alloca(ll.IntType(1))
    b.store(ll.Constant(ll.IntType(1), 0), faulted)
    with b.if_then(b.icmp_unsigned("!=", field, I64(0))):
        first = b.inttoptr(b.load(args, typ=I64), PTR)
        word = b.gep(first, [b.sub(field, I64(1))], source_etype=ll.IntType(8))
        b.store(b.icmp_unsigned("!=", b.load(word, typ=I64), I64(0)), faulted)
    b.ret(b.zext(b.or_(b.icmp_signed(">=", result, I64(0)), b.load(faulted, typ=ll.IntType(1))),
                 I64))
    return fn


def _zero_cache(b: ll.IRBuilder, job, first) -> None:
    """share(): zero the worker's access-site cache when the job says so (Job)."""
    size = b.load(pir.word(b, job, CACHE_BYTES), typ=I64)
    with b.if_then(b.icmp_unsigned("!=", size, I64(0))):
        field = b.gep(first, [b.sub(b.load(pir.word(b, job, CACHE_FIELD), typ=I64), I64(1))],
                      source_etype=ll.IntType(8))
        cache = b.inttoptr(b.load(field, typ=I64), PTR)
        memset = b.module.globals.get("llvm.memset.p0.i64") or ll.Function(
            b.module, ll.FunctionType(ll.VoidType(), [PTR, ll.IntType(8), I64, ll.IntType(1)]),
            "llvm.memset.p0.i64")
        b.call(memset, [cache, ll.Constant(ll.IntType(8), 0), size, ll.Constant(ll.IntType(1), 0)])


def _futex(b: ll.IRBuilder, pthread: dict, word, op: int, value: int) -> None:
    """futex(op) on the 32-bit word at `word`: wait while it is `value`, or wake `value`
    threads sleeping on it. Without futexes (macOS, other systems) a wait is a sleep of
    _POLL_US microseconds, after which the caller looks again, and a wake is nothing (the
    flag the waker set is what the sleeper looks at): a parked thread then starts a launch
    up to that much later, and costs its core a short wake-up that often while parked."""
    number = _futex_number()
    if number is None:
        if op == _FUTEX_WAIT:
            b.call(pthread["usleep"], [ll.Constant(I32, _POLL_US)])
        return
    b.call(pthread["syscall"], [I64(number), b.ptrtoint(word, I64), I64(op),
                                I64(value), I64(0), I64(0), I64(0)])


def _flag_futex(b: ll.IRBuilder, words):
    """The futex of a thread's wake flag (a word): its low 32 bits, by the byte order."""
    return b.gep(pir.word(b, words, _WAKE_FLAG), [I64(0 if sys.byteorder == "little" else 4)],
                 source_etype=ll.IntType(8))


def _wake(b: ll.IRBuilder, pthread: dict, pool, count) -> None:
    """Wake each parked thread of worker numbers 1..count (i64), one system call each, all
    from this thread (waking an idle virtual CPU took about 50 us on the GPU machine's VM,
    and a thread woken by a woken thread starts that much later again). After the
    generation changed (a job opened): a thread marks itself parked before it looks at the
    generation a last time and sleeps, and this thread changed the generation before it
    looks at the marks (both sequentially consistent), so either the sleeper sees the new
    generation or this thread sees it parked; the futex sleeps only while the thread's flag
    is 0. Before a job opens (prewake): a thread woken with its flag set and the generation
    unchanged watches the generation as after a share (_build_thread)."""
    sleepers = b.load_atomic(pir.field(b, pool, _SLEEPERS), "seq_cst", 8, typ=I64)
    with b.if_then(b.icmp_signed(">", sleepers, I64(0))):
        table = b.inttoptr(b.load(pir.field(b, pool, _THREADS), typ=I64), PTR)
        with pir.counting(b, count) as i:
            words = b.inttoptr(b.load(pir.word(b, table, b.add(i, I64(1))), typ=I64), PTR)
            parked = b.load_atomic(pir.word(b, words, _PARKED), "seq_cst", 8, typ=I64)
            with b.if_then(b.icmp_unsigned("!=", parked, I64(0))):
                b.atomic_rmw("xchg", pir.word(b, words, _WAKE_FLAG), I64(1), "seq_cst")
                _futex(b, pthread, _flag_futex(b, words), _FUTEX_WAKE, 1)


def _build_prewake(module: ll.Module, pthread: dict) -> None:
    """void ptxport_pool_prewake(pool, count): wake the parked threads of worker numbers
    1..count (at most the pool's) before a job opens (prewake()), so that the system calls
    and the virtual CPUs' wake-ups overlap the launch's setup in Python; the woken threads
    watch for the job for the pool's spin time and park again if none comes."""
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [PTR, I64]),
                     "ptxport_pool_prewake")
    pool, count = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    _wake(b, pthread, pool, pir.clamp(b, count, I64(0),
                                      b.load(pir.field(b, pool, _COUNT), typ=I64)))
    b.ret_void()


def _build_thread(module: ll.Module, share: ll.Function, pthread: dict) -> None:
    """void *ptxport_pool_thread(arg): arg: the thread's words (_THREAD_*). A parked thread
    sleeps on its own futex until the generation changes, then takes the job like a
    spinning one (_take_fast): no mutex, so that woken threads do not queue behind each
    other for it. After a share (or a job it came too late for) it watches the generation
    for the pool's spin time, taking a job that opens meanwhile; then it parks again. A
    thread woken before a job opened (prewake) watches for at least _PREWAKE_SPIN_NS: the
    launch's Python before the job opens took up to about 0.25 ms with cold caches, more
    than the adaptive spin's floor."""
    fn = ll.Function(module, ll.FunctionType(PTR, [PTR]), "ptxport_pool_thread")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    (arg,) = fn.args
    pool = b.inttoptr(b.load(pir.word(b, arg, 0), typ=I64), PTR)
    index = b.load(pir.word(b, arg, 1), typ=I64)
    seen, least = b.alloca(I64), b.alloca(I64)
    b.store(b.load(pir.word(b, arg, 2), typ=I64), seen)
    b.store(I64(0), least)
    generation, sleepers = pir.field(b, pool, _GENERATION), pir.field(b, pool, _SLEEPERS)
    parked, flag = pir.word(b, arg, _PARKED), pir.word(b, arg, _WAKE_FLAG)
    park, check, asleep, sleep, early, woken, spin, spun = (fn.append_basic_block(n) for n in (
        "park", "check", "asleep", "sleep", "early", "woken", "spin", "spun"))
    b.branch(park)
    b.position_at_end(park)
    b.atomic_rmw("xchg", flag, I64(0), "seq_cst")
    b.atomic_rmw("xchg", parked, I64(1), "seq_cst")
    b.atomic_rmw("add", sleepers, I64(1), "seq_cst")
    b.branch(check)
    b.position_at_end(check)
    now = b.load_atomic(generation, "seq_cst", 8, typ=I64)
    b.cbranch(b.icmp_unsigned("==", now, b.load(seen, typ=I64)), asleep, woken)
    # (the flag set while the generation is the one seen: woken early, by prewake)
    b.position_at_end(asleep)
    b.cbranch(b.icmp_unsigned("!=", b.load_atomic(flag, "seq_cst", 8, typ=I64), I64(0)),
              early, sleep)
    b.position_at_end(sleep)
    _futex(b, pthread, _flag_futex(b, arg), _FUTEX_WAIT, 0)
    b.branch(check)
    b.position_at_end(early)
    b.atomic_rmw("sub", sleepers, I64(1), "seq_cst")
    b.atomic_rmw("xchg", parked, I64(0), "seq_cst")
    b.store(I64(_PREWAKE_SPIN_NS), least)
    b.branch(spin)
    b.position_at_end(woken)
    b.atomic_rmw("sub", sleepers, I64(1), "seq_cst")
    b.atomic_rmw("xchg", parked, I64(0), "seq_cst")
    _take_fast(b, pool, share, index, seen, pthread)
    b.branch(spin)
    b.position_at_end(spin)
    changed = lambda: b.icmp_unsigned(  # noqa: E731
        "!=", b.load_atomic(generation, "acquire", 8, typ=I64), b.load(seen, typ=I64))
    spin_ns = b.load_atomic(pir.field(b, pool, _SPIN_NS), "monotonic", 8, typ=I64)
    longer = b.load(least, typ=I64)
    b.store(I64(0), least)
    pir.spin_until(b, pthread, b.select(b.icmp_signed(">", longer, spin_ns), longer, spin_ns),
                   spun, changed, yield_after=b.load(pir.field(b, pool, _FLOOR_NS), typ=I64))
    b.position_at_end(spun)
    fast = fn.append_basic_block("fast")
    b.cbranch(changed(), fast, park)
    b.position_at_end(fast)
    _take_fast(b, pool, share, index, seen, pthread)
    b.branch(spin)


def _take_fast(b: ll.IRBuilder, pool, share, index, seen, pthread: dict) -> None:
    """A thread's take of the job it saw open (woken or spinning), without the mutex: count
    itself in `running` first, then look at the job; the launching thread closes a job
    (nulls it) first, then looks at `running`, all sequentially consistent, so either this
    thread sees the job closed or the launching thread waits for it. It takes the job only
    if it is the generation it saw (not a later one at the same address) and has its
    worker number; else it counts itself out again."""
    fn = b.function
    generation, running = pir.field(b, pool, _GENERATION), pir.field(b, pool, _RUNNING)
    saw = b.load_atomic(generation, "acquire", 8, typ=I64)
    b.store(saw, seen)
    b.atomic_rmw("add", running, I64(1), "seq_cst")
    job = b.inttoptr(b.load_atomic(pir.field(b, pool, _JOB), "seq_cst", 8, typ=I64), PTR)
    same = b.icmp_unsigned("==", b.load_atomic(generation, "seq_cst", 8, typ=I64), saw)
    is_open, take, out = (fn.append_basic_block(n) for n in ("fast_open", "fast_take",
                                                             "fast_out"))
    b.cbranch(b.and_(same, b.icmp_unsigned("!=", b.ptrtoint(job, I64), I64(0))), is_open, out)
    b.position_at_end(is_open)
    b.cbranch(b.icmp_signed("<", index, b.load(pir.word(b, job, WORKERS), typ=I64)), take, out)
    b.position_at_end(take)
    _run_share(b, pool, share, job, index, pthread)
    done = fn.append_basic_block("fast_done")
    b.branch(done)
    b.position_at_end(out)
    _count_out(b, pool, pthread)
    b.branch(done)
    b.position_at_end(done)


def _run_share(b: ll.IRBuilder, pool, share, job, index, pthread: dict) -> None:
    """Run worker `index`'s share of the job (counted in `running`), add its failure, and
    count it out."""
    b.atomic_rmw("add", pir.word(b, job, FAILURES), b.call(share, [job, index]), "seq_cst")
    _count_out(b, pool, pthread)


def _count_out(b: ll.IRBuilder, pool, pthread: dict) -> None:
    """Take this thread out of `running`; the last one out signals the launching thread
    (under the mutex: it looks at `running` under it before it waits)."""
    left = b.sub(b.atomic_rmw("sub", pir.field(b, pool, _RUNNING), I64(1), "seq_cst"), I64(1))
    with b.if_then(b.icmp_signed("==", left, I64(0))):
        mutex = pir.field(b, pool, _MUTEX)
        b.call(pthread["pthread_mutex_lock"], [mutex])
        b.call(pthread["pthread_cond_signal"], [pir.field(b, pool, _DONE)])
        b.call(pthread["pthread_mutex_unlock"], [mutex])


def _build_run(module: ll.Module, share: ll.Function, pthread: dict) -> None:
    """i64 ptxport_pool_run(pool, job): open the job (ptxport_pool_open) unless its OPENED
    word says it was opened already (then cleared), run worker 0's share, close the job and
    wait for the threads that took it; how many workers failed."""
    fn = ll.Function(module, ll.FunctionType(I64, [PTR, PTR]), "ptxport_pool_run")
    pool, job = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    mutex, done = pir.field(b, pool, _MUTEX), pir.field(b, pool, _DONE)
    job_slot, running = pir.field(b, pool, _JOB), pir.field(b, pool, _RUNNING)
    opened = pir.word(b, job, OPENED)
    with b.if_then(b.icmp_unsigned("==", b.load(opened, typ=I64), I64(0))):
        b.call(_build_open(module, pthread), [pool, job])
    b.store(I64(0), opened)
    several = b.icmp_signed(">", b.load(pir.word(b, job, WORKERS), typ=I64), I64(1))
    own = b.call(share, [job, I64(0)])
    _trace(b, job, pthread, I64(1))
    check, wait, unlock, out = (fn.append_basic_block(n) for n in ("check", "wait", "unlock",
                                                                   "out"))
    close, slept = fn.append_basic_block("close"), fn.append_basic_block("slept")
    b.cbranch(several, close, out)
    b.position_at_end(close)
    b.atomic_rmw("xchg", job_slot, I64(0), "seq_cst")
    # (the helpers usually end within microseconds of this thread: waiting for them on the
    # condition would add a wake-up, tens of microseconds, to every launch)
    b.store(pir.now(b, pthread, pir.timespec(b)), pir.field(b, pool, _CLOSED_AT))
    spin_ns = pir.clamp(b, b.load_atomic(pir.field(b, pool, _SPIN_NS), "monotonic", 8, typ=I64),
                     I64(_LAUNCHER_SPIN_NS), I64(_LAUNCHER_SPIN_MAX_NS))
    pir.spin_until(b, pthread, spin_ns,
                slept, lambda: b.icmp_signed("==", b.load_atomic(running, "acquire", 8,
                                                                  typ=I64), I64(0)))
    b.position_at_end(slept)
    b.call(pthread["pthread_mutex_lock"], [mutex])
    b.branch(check)
    b.position_at_end(check)
    left = b.load_atomic(running, "acquire", 8, typ=I64)
    b.cbranch(b.icmp_signed("==", left, I64(0)), unlock, wait)
    b.position_at_end(wait)
    b.call(pthread["pthread_cond_wait"], [done, mutex])
    b.branch(check)
    b.position_at_end(unlock)
    b.call(pthread["pthread_mutex_unlock"], [mutex])
    b.branch(out)
    b.position_at_end(out)
    _trace(b, job, pthread, I64(2))
    # (the helpers' failures: all counted once `running` was 0)
    b.ret(b.add(own, b.load_atomic(pir.word(b, job, FAILURES), "acquire", 8, typ=I64)))


def _build_open(module: ll.Module, pthread: dict) -> ll.Function:
    """void ptxport_pool_open(pool, job): start the job's counter and open the job to the
    pool's threads (when it has more than one worker), waking those parked; every worker's
    result is -1 until its share stores one; its OPENED word is set. ptxport_pool_run calls
    it first, unless the launching thread opened the job earlier (Pool.open) to run other
    code meanwhile."""
    fn = module.globals.get("ptxport_pool_open")
    if fn is not None:
        return fn
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [PTR, PTR]), "ptxport_pool_open")
    pool, job = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    b.store(I64(1), pir.word(b, job, OPENED))   # (here, not in Python: Pool.open is cold)
    workers = b.load(pir.word(b, job, WORKERS), typ=I64)
    results = b.inttoptr(b.load(pir.word(b, job, RESULTS), typ=I64), PTR)
    with pir.counting(b, workers) as i:
        b.store(I64(-1), pir.word(b, results, i))
    counter = b.inttoptr(b.load(pir.word(b, job, COUNTER), typ=I64), PTR)
    b.store(b.load(pir.word(b, job, START), typ=I64), counter)
    b.store(I64(0), pir.word(b, job, FAILURES))
    _trace(b, job, pthread, I64(0))
    with b.if_then(b.icmp_signed(">", workers, I64(1))):
        _plan_spin(b, pool, pthread)
        b.atomic_rmw("xchg", pir.field(b, pool, _JOB), b.ptrtoint(job, I64), "seq_cst")
        # (llvmlite has no untyped atomic store)
        b.atomic_rmw("add", pir.field(b, pool, _GENERATION), I64(1), "seq_cst")
        _wake(b, pthread, pool, b.sub(workers, I64(1)))
    b.ret_void()
    return fn


def _plan_spin(b: ll.IRBuilder, pool, pthread: dict) -> None:
    """At a job's opening, by the launching thread (the pool's only writer of these words
    then): record the gap since the last job closed and set the spin its threads will watch
    for the next job after this one: the fixed spin if set_spin set one, else (adaptive)
    twice the longer of the last two gaps, between the floor and the cap, when that gap was
    at most the cap (launches come often: the next one finds the threads awake), and the
    floor when it was longer (launches are rare: the threads give their cores back)."""
    now = pir.now(b, pthread, pir.timespec(b))
    gap = b.sub(now, b.load(pir.field(b, pool, _CLOSED_AT), typ=I64))
    before = b.load(pir.field(b, pool, _GAP), typ=I64)
    b.store(before, pir.field(b, pool, _GAP_BEFORE))
    b.store(gap, pir.field(b, pool, _GAP))
    longest = b.select(b.icmp_signed(">", gap, before), gap, before)
    cap, floor = (b.load(pir.field(b, pool, field), typ=I64) for field in (_CAP_NS, _FLOOR_NS))
    often = b.icmp_signed("<=", longest, cap)
    adaptive = b.select(often, pir.clamp(b, b.shl(longest, I64(1)), floor, cap), floor)
    fixed = b.load(pir.field(b, pool, _FIXED_NS), typ=I64)
    spin = b.select(b.icmp_signed(">=", fixed, I64(0)), fixed, adaptive)
    # (threads that spin read it without the mutex)
    b.atomic_rmw("xchg", pir.field(b, pool, _SPIN_NS), spin, "seq_cst")


class _Native:
    """The pool's compiled code and the libc functions Python calls to set pools up."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None)
        try:
            functions = {name: getattr(libc, name) for name in (
                *pir.PTHREADS, "pthread_mutex_init", "pthread_cond_init", "pthread_create",
                "pthread_detach")}
        except AttributeError as e:
            raise PtxportError(
                "the CPU device runs blocks on POSIX threads (pthread_create and friends), "
                f"which this process does not have: {e}") from None
        module = ll.Module("ptxport_pool")
        pthread = pir.declare(module)
        share = _build_share(module, pthread)
        _build_thread(module, share, pthread)
        _build_run(module, share, pthread)
        _build_prewake(module, pthread)
        with LLVM_LOCK:
            for name in pir.PTHREADS:
                llvm.add_symbol(f"ptxport.{name}",
                                ctypes.cast(functions[name], ctypes.c_void_p).value)
            # (open, run and prewake as builtins where the C API is there: pool_calls.py)
            methods = calls.register()
            if methods:
                for name, gil in (("ptxport_pool_open", False), ("ptxport_pool_run", True),
                                  ("ptxport_pool_prewake", False)):
                    calls.build_method(module, module.globals[name], f"{name}_py", gil)
            self._engine = engine = jit_engine(str(module))
            self.thread = engine.get_function_address("ptxport_pool_thread")
            self.methods = tuple(engine.get_function_address(f"ptxport_pool_{name}_py")
                                 for name in ("open", "run", "prewake")) if methods else None
            # (ctypes where not; CFUNCTYPE releases the GIL: run's share of blocks may call back
            # into Python, and other threads run meanwhile; prewake and open return at once,
            # and keep it: no turn of the GIL in the middle of a launch)
            self.run = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
                engine.get_function_address("ptxport_pool_run"))
            self.prewake = ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(
                engine.get_function_address("ptxport_pool_prewake"))
            self.open = ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
                engine.get_function_address("ptxport_pool_open"))
        self.init_mutex, self.init_cond = (functions["pthread_mutex_init"],
                                           functions["pthread_cond_init"])
        self.create, self.detach = functions["pthread_create"], functions["pthread_detach"]
        self.detach.argtypes = [ctypes.c_void_p]

    def bound(self, pool: int) -> tuple:
        """open(job), run(job) (a job's address) and prewake(count) of the pool at `pool`."""
        if self.methods is None:
            return partial(self.open, pool), partial(self.run, pool), partial(self.prewake, pool)
        return tuple(calls.bind(address, name, pool) for address, name in zip(
            self.methods, ("open", "run", "prewake"), strict=True))


def _futex_number() -> int | None:
    """The futex system call's number on this machine (parked threads sleep on a futex), or
    None where there is none (not Linux, or a machine not in _SYS_FUTEX): there parked
    threads poll their flag every _POLL_US microseconds instead (_futex)."""
    machine = llvm.get_process_triple().split("-")[0]
    if not sys.platform.startswith("linux"):
        return None
    return _SYS_FUTEX.get(machine)


@cache
def _native() -> _Native:
    return _Native()


class Pool:
    """Threads that run jobs (see the module's note). `number` tells pools apart (the
    executor keeps each pool's workers' memory under it)."""

    def __init__(self, number: int):
        self.number, self.forks = number, _FORKS[0]
        self._native = _native()
        raw = np.zeros(_SIZE + 64, dtype=np.uint8)
        start = (-raw.ctypes.data) % 64
        self._memory = raw[start:start + _SIZE]
        self.address = self._memory.ctypes.data
        self.words = self._memory.view(np.int64)
        self.view = memoryview(self.words)      # (read at every launch: Job.view)
        # (its native open and run of a job (its address), and prewake: pool_calls.py)
        self._open, self._run, self._prewake = self._native.bound(self.address)
        if self._native.init_mutex(ctypes.c_void_p(self.address + _MUTEX), None) \
                or self._native.init_cond(ctypes.c_void_p(self.address + _DONE), None):
            raise PtxportError("the CPU device could not set up its worker threads' "
                               "mutex and condition (pthread_*_init failed)")
        self._threads: list[np.ndarray] = []      # each thread's words (it reads them)
        self._table = np.zeros(1, dtype=np.int64)
        self._set_policy()
        _POOLS.append(self)

    def _set_policy(self) -> None:
        """Write the spin policy (set_spin) into the pool's words (while no job runs, or
        between the words' reads: each is read whole)."""
        words = self._memory.view(np.int64)
        fixed, cap = _SPIN
        words[_FIXED_NS // 8] = -1 if fixed is None else fixed
        words[_CAP_NS // 8], words[_FLOOR_NS // 8] = cap, min(SPIN_FLOOR_NS, cap)
        words[_SPIN_NS // 8] = min(SPIN_FLOOR_NS, cap) if fixed is None else fixed

    def spin_state(self) -> dict:
        """The spin the pool's threads watch for the next job after the last one (seconds)
        and the last two gaps between a job's close and the next one's open (seconds, the
        latest first; a pool's first job counts the time since the clock's start)."""
        words = self._memory.view(np.int64)
        return {"spin": int(words[_SPIN_NS // 8]) / 1e9,
                "gaps": (int(words[_GAP // 8]) / 1e9, int(words[_GAP_BEFORE // 8]) / 1e9)}

    def grow(self, helpers: int) -> None:
        """Have at least `helpers` threads (worker numbers 1..helpers). Only while no job
        runs: the pool's holder calls it before run()."""
        if len(self._threads) >= helpers:
            return
        words = self._memory.view(np.int64)
        table = np.zeros(helpers + 1, dtype=np.int64)
        table[:self._table.size] = self._table
        self._table = table
        words[_THREADS // 8] = table.ctypes.data
        while len(self._threads) < helpers:
            number = len(self._threads) + 1
            raw = np.zeros(2 * _THREAD_SIZE // 8, dtype=np.int64)
            start = (-raw.ctypes.data) % _THREAD_SIZE // 8
            words_of_thread = raw[start:start + _THREAD_SIZE // 8]
            words_of_thread[:3] = (self.address, number, words[_GENERATION // 8])
            address = words_of_thread.ctypes.data
            table[number] = address
            handle = ctypes.c_uint64(0)
            failed = self._native.create(ctypes.byref(handle), None,
                                         ctypes.c_void_p(self._native.thread),
                                         ctypes.c_void_p(address))
            if failed:
                raise PtxportError(
                    f"the CPU device could not start worker thread {number} (pthread_create "
                    f"returned {os.strerror(failed)}); use set_workers() with fewer workers")
            self._native.detach(ctypes.c_void_p(handle.value))
            self._threads.append(words_of_thread)
            words[_COUNT // 8] = len(self._threads)

    def open(self, job: Job) -> None:
        """Open the job to this pool's threads now (its counter started, parked threads
        woken) and return: the calling thread may run other code while they take blocks,
        then calls run(job), which runs worker 0's share (the blocks left), closes the job
        and waits for the threads, as for a job it opened itself. Only for a job of more
        than one worker; the caller holds the pool until that run."""
        if _TRACING[0] or job._trace is not None:    # (tracing, or it was: few bytecodes
            _trace_before(job)                       # before the opening otherwise)
        self._open(job.address)

    def run(self, job: Job, traced: bool = True) -> int:
        """Run the job on this pool's threads and the calling thread (which must hold the
        pool, and have grown it to the job's workers - 1); how many workers failed.
        `traced`: recorded for last_shares while trace_shares is on (a launch's; not a
        copy's, copies.py)."""
        if not traced:
            return self._run(job.address)
        # (not while it runs)
        if not job.view[OPENED] and (_TRACING[0] or job._trace is not None):
            _trace_before(job)
        failed = self._run(job.address)
        if _TRACING[0]:
            # (the job itself: last_shares() copies its trace's words, or the job's next
            # opening does; numpy's copy here took 15-40 us of the launch's time on the
            # development machine, its code and the words out of the caches by then)
            _TRACING[1] = job
        return failed


# Whether launches record when each worker's share began and ended (trace_shares), and the
# last one's record.
_TRACING: list = [False, None]


def _trace_before(job: Job) -> None:
    """Before a job opens, while tracing or after it: its trace made or dropped as
    trace_shares says now, or its last run's record kept before this run overwrites it."""
    if (job._trace is not None) is not _TRACING[0]:
        job.trace(_TRACING[0])
    elif _TRACING[1] is job:
        _keep_record(job)


def trace_shares(on: bool) -> None:
    """Record, from the next launch on (or no more), when each worker's share of a launch's
    blocks began and ended, for last_shares (benchmarks/cpu_scaling.py: how late the last
    worker starts, how long the first waits for the last)."""
    _TRACING[:] = [bool(on), None]


def last_shares() -> dict | None:
    """While trace_shares is on, the last launch's record (Job.traced: microseconds from
    when the launching thread opened the job), else None."""
    if isinstance(_TRACING[1], Job):
        _keep_record(_TRACING[1])
    words = _TRACING[1]
    if isinstance(words, np.ndarray):
        # (made here, not at the launch: run() keeps the job, or a copy of its trace's words)
        _TRACING[1] = _record(words.tolist(), (len(words) - _TRACE_HEAD) // 2)
    return _TRACING[1]


def _keep_record(job: Job) -> None:
    """Copy the trace's words of `job`, the last traced launch's (run() keeps the job), for
    last_shares: before the job runs again, or when last_shares() is asked."""
    _TRACING[1] = job.snapshot(int(job.words[WORKERS]))


# The adaptive spin's cap by default and its floor (ns): a worker thread that ended its
# share watches for the next job for twice the recent gap between launches, at least the
# floor and at most the cap, or the floor when the gap was longer than the cap (set_spin).
SPIN_CAP_NS, SPIN_FLOOR_NS = 2_000_000, 100_000
# The spin policy (set_spin): the fixed spin (ns; None: adaptive) and the cap (ns); every
# pool this process made.
_SPIN: list = [None, SPIN_CAP_NS]
_POOLS: list[Pool] = []


def set_spin(seconds: float | None = None, cap: float = SPIN_CAP_NS / 1e9) -> None:
    """How long worker threads watch for the next launch after their share of one ends
    before they park (on a futex). Watching keeps a core busy; a launch that comes
    meanwhile finds its workers awake instead of waking them (tens of microseconds each).
    `seconds`: a fixed time (0: park at once); None (the default): adaptive, twice the
    longer of the last two gaps between a launch's end and the next one's start, at least
    0.1 ms and at most `cap` seconds (2 ms by default), or 0.1 ms when that gap was longer
    than the cap: a program launching kernel after kernel finds its workers awake, while
    one that launches rarely has its cores back after 0.1 ms, for its other libraries'
    threads (a fixed 2 ms spin slowed torch's matmul in the same process 80-fold)."""
    if seconds is not None and not seconds >= 0:
        raise ValueError("the spin time must be at least 0 seconds")
    if not cap >= 0:
        raise ValueError("the spin's cap must be at least 0 seconds")
    _SPIN[:] = [None if seconds is None else int(seconds * 1e9), int(cap * 1e9)]
    for pool in _POOLS:
        pool._set_policy()


def spin_policy() -> str:
    """The spin policy in words (set_spin), for benchmarks' headers."""
    fixed, cap = _SPIN
    if fixed is not None:
        return f"spin fixed {fixed / 1e6:g} ms"
    floor = min(SPIN_FLOOR_NS, cap) / 1e6
    return (f"spin adaptive (2x the longer of the last 2 gaps between launches, "
            f"{floor:g} to {cap / 1e6:g} ms; {floor:g} ms after a gap over {cap / 1e6:g} ms)")


# Pools no launch holds now; the count ever made (pools are numbered from 0, in a forked
# child on from its parent's count); how many forks this process is from the first one.
_FREE: list[Pool] = []
_MADE = [0]
_FORKS = [0]
_LOCK = threading.Lock()


def take() -> Pool:
    """A pool for one launch, that no other launch uses until it is given back."""
    try:
        return _FREE.pop()
    except IndexError:
        with _LOCK:
            number, _MADE[0] = _MADE[0], _MADE[0] + 1
        return Pool(number)


def prewake(helpers: int) -> None:
    """A launch that will run on `helpers` threads besides the launching one is coming
    (launch.py calls this before it checks and packs the arguments): wake those of them
    that parked, in the pool the next take() returns, so that they are awake when the
    launch opens (waking an idle virtual CPU took about 50 us on the GPU machine, more than
    a launch's setup in Python takes); they watch for it for the pool's spin time and park
    again if it does not come (at least 1 ms: _build_thread). Nothing when no thread is
    parked (the usual case for launches that follow each other) or the spin is fixed at 0."""
    if helpers <= 0 or not _FREE:       # (no pool yet, or every pool runs a launch)
        return
    try:
        pool = _FREE[-1]
    except IndexError:      # (taken by another thread meanwhile)
        return
    if pool.view[_SLEEPERS_WORD] > 0 and _SPIN[0] != 0 and pool.forks == _FORKS[0]:
        pool._prewake(helpers)


def parked() -> bool:
    """Whether threads of the pool the next take() returns are parked (prewake would wake
    them): False, at the cost of one look, for launches that follow each other."""
    try:
        return _FREE[-1].view[_SLEEPERS_WORD] > 0
    except IndexError:      # (no pool yet, or every pool runs a launch)
        return False


def give(pool: Pool) -> None:
    """Give back a pool taken for a launch that has ended (one taken before a fork is
    dropped: its threads stayed in the parent)."""
    if pool.forks == _FORKS[0]:
        _FREE.append(pool)


def _forget_after_fork() -> None:
    """A forked child has none of its parent's threads: its pools are new ones."""
    _FREE.clear()
    _POOLS.clear()
    _FORKS[0] += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
