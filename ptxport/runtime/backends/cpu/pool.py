"""Native worker threads that run a launch's blocks on every core, with no Python between
blocks or between workers.

A pool is a set of POSIX threads, started once and kept, each parked on a condition variable
of its own; they never run Python. A launch hands a pool a job (Job): a claiming entry point,
its trampoline (entry.py), one row of argument words per worker and a word for each worker's
result. `run` is ONE ctypes call (the GIL is released for its whole length): it opens the job,
wakes threads 1 to FANOUT (each thread that takes the job wakes FANOUT more), runs worker 0's
share on the calling thread, then closes the job and waits for the threads that took it
(spinning a little first); a thread that wakes after the close leaves it. So a grid that the
launching thread finishes alone wakes a few threads and waits for none, and a long one has
all its workers after two wake-ups (16 workers). A thread that ended its share (or came
too late) watches the generation for the pool's spin time (set_spin) before it parks: a
launch that comes meanwhile, as a program's next kernel does, finds it awake (waking a
parked thread took tens of microseconds in a VM, more than short grids run), and a process
that stops launching has its cores back after that time. Each worker claims chunks of blocks from
the launch's shared counter with atomic adds inside the compiled kernel
(codegen/targets/cpu/entry.py). A worker whose block failed (trap, fault, stop) sets the
counter to the grid's end when the job says so, so that the others stop after their chunk.

A pool runs one launch at a time: a launching thread takes a free pool (or makes one) and
gives it back after, so that launches from several streams at once have threads of their own
(a kernel may wait for a flag another stream's kernel sets, as on a GPU). The pool's code is
LLVM IR built here and compiled once per process; the pthread functions are found by ctypes
in the process, so a missing one is a clear error, not a crash. A forked child makes new
pools (its parent's threads are not in it).

Why native threads: with Python threads as workers, every worker took the GIL to wake, to set
up and to finish, one after another, and on 16 cores the launches of
benchmarks/cpu_kernels.py took at least about 5 ms, barely faster than on one core.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from functools import cache

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR
from ptxport.codegen.targets.cpu.machine import LLVM_LOCK, target_machine
from ptxport.errors import PtxportError

__all__ = ["JOB_WORDS", "Job", "Pool", "give", "last_shares", "set_spin", "take",
           "trace_shares"]

# A pool's memory (bytes): the pthread objects (opaque; 128 bytes is more than any libc's),
# then the generation (bumped for each job: written under the mutex, read by spinning
# threads without it), the job's address (null: none open), how many threads run a share of
# it now, the address of a table of each thread's condition (by worker number; the threads
# park on their own), and how long (ns) a thread that ended its share watches the generation
# before it parks (set_spin).
(_MUTEX, _DONE, _GENERATION, _JOB, _RUNNING, _CONDS, _SPIN_NS,
 _SIZE) = 0, 128, 256, 264, 272, 280, 288, 320
# A thread's words: the pool's address, its worker number, the generation it saw last,
# whether it is parked (or about to be: set under the mutex); its condition (opaque) from
# byte _THREAD_COND on.
_PARKED, _THREAD_COND, _THREAD_SIZE = 3, 64, 256

# A job's words (Job below).
(TRAMPOLINE, ENTRY, ARGS, STRIDE, RESULTS, WORKERS, COUNTER, START, TOTAL, STOP_ON_FAILURE,
 FAULT_FIELD, FAILURES, TRACE, CACHE_FIELD, CACHE_BYTES) = range(15)
JOB_WORDS = 15

# Threads each waking thread wakes; the least time (ns) the launching thread spins for its
# helpers to end before it waits on the condition (the pool's spin time when longer); the
# words of a job's trace before the workers' (Job.trace).
FANOUT = 4
_LAUNCHER_SPIN_NS = 50_000
_TRACE_HEAD = 3

_PTHREADS = ("pthread_mutex_lock", "pthread_mutex_unlock", "pthread_cond_wait",
             "pthread_cond_signal", "clock_gettime")


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
        worker's share, None for a worker that took none]}; None when not tracing."""
        if self._trace is None:
            return None
        words = self._trace.tolist()
        opened = words[0]

        def us(t: int) -> float:
            return (t - opened) / 1000

        shares = [(us(words[i]), us(words[i + 1])) if words[i] >= opened else None
                  for i in range(_TRACE_HEAD, _TRACE_HEAD + 2 * workers, 2)]
        return {"own": us(words[1]), "end": us(words[2]), "shares": shares}


def _declare(module: ll.Module) -> dict[str, ll.Function]:
    """The pthread functions, by their names in the process (pointers as opaque `ptr`)."""
    one, two = ll.FunctionType(I32, [PTR]), ll.FunctionType(I32, [PTR, PTR])
    types = {"pthread_cond_wait": two, "clock_gettime": ll.FunctionType(I32, [I32, PTR])}
    return {name: ll.Function(module, types.get(name, one), f"ptxport.{name}")
            for name in _PTHREADS}


def _now(b: ll.IRBuilder, pthread: dict, spec) -> ll.Value:
    """The monotonic clock in nanoseconds (i64); `spec`: two words of the function's stack
    (a struct timespec)."""
    b.call(pthread["clock_gettime"], [I32(time.CLOCK_MONOTONIC), spec])
    return b.add(b.mul(b.load(_word(b, spec, 0), typ=I64), I64(1_000_000_000)),
                 b.load(_word(b, spec, 1), typ=I64))


def _timespec(b: ll.IRBuilder):
    """Two words at the function's entry for _now."""
    with b.goto_entry_block():
        b.position_at_start(b.function.entry_basic_block)
        spec = b.alloca(ll.ArrayType(I64, 2))
    spec.type = PTR         # (llvmlite's typed alloca, used through untyped pointers)
    return spec


def _trace(b: ll.IRBuilder, job, pthread: dict, slot: ll.Value) -> None:
    """When the job has a trace (Job.trace), store the clock in its word `slot`."""
    trace = b.load(_word(b, job, TRACE), typ=I64)
    with b.if_then(b.icmp_unsigned("!=", trace, I64(0))):
        b.store(_now(b, pthread, _timespec(b)), _word(b, b.inttoptr(trace, PTR), slot))


def _word(b: ll.IRBuilder, base, index: int | ll.Value):
    return b.gep(base, [index if isinstance(index, ll.Value) else I64(index)],
                 source_etype=I64)


def _field(b: ll.IRBuilder, pool, offset: int):
    return b.gep(pool, [I64(offset)], source_etype=ll.IntType(8))


def _build_share(module: ll.Module, pthread: dict) -> ll.Function:
    """i64 share(job, index): worker `index`'s part of the job; 1 if it failed (see Job)."""
    fn = ll.Function(module, ll.FunctionType(I64, [PTR, I64]), "ptxport_pool_share")
    fn.linkage = "internal"
    job, index = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    _trace(b, job, pthread, b.add(I64(_TRACE_HEAD), b.mul(index, I64(2))))
    trampoline = b.inttoptr(b.load(_word(b, job, TRAMPOLINE), typ=I64),
                            ll.FunctionType(I64, [PTR, PTR]).as_pointer())
    entry = b.inttoptr(b.load(_word(b, job, ENTRY), typ=I64), PTR)
    args = b.inttoptr(b.add(b.load(_word(b, job, ARGS), typ=I64),
                            b.mul(b.mul(index, b.load(_word(b, job, STRIDE), typ=I64)), I64(8))),
                      PTR)
    _zero_cache(b, job, b.inttoptr(b.load(args, typ=I64), PTR))
    result = b.call(trampoline, [entry, args])
    results = b.inttoptr(b.load(_word(b, job, RESULTS), typ=I64), PTR)
    b.store(result, _word(b, results, index))
    _trace(b, job, pthread, b.add(I64(_TRACE_HEAD + 1), b.mul(index, I64(2))))
    failed = b.and_(b.icmp_signed(">=", result, I64(0)),
                    b.icmp_unsigned("!=", b.load(_word(b, job, STOP_ON_FAILURE), typ=I64),
                                    I64(0)))
    with b.if_then(failed):
        counter = b.inttoptr(b.load(_word(b, job, COUNTER), typ=I64), PTR)
        b.atomic_rmw("xchg", counter, b.load(_word(b, job, TOTAL), typ=I64), "seq_cst")
    field = b.load(_word(b, job, FAULT_FIELD), typ=I64)
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
    size = b.load(_word(b, job, CACHE_BYTES), typ=I64)
    with b.if_then(b.icmp_unsigned("!=", size, I64(0))):
        field = b.gep(first, [b.sub(b.load(_word(b, job, CACHE_FIELD), typ=I64), I64(1))],
                      source_etype=ll.IntType(8))
        cache = b.inttoptr(b.load(field, typ=I64), PTR)
        memset = b.module.globals.get("llvm.memset.p0.i64") or ll.Function(
            b.module, ll.FunctionType(ll.VoidType(), [PTR, ll.IntType(8), I64, ll.IntType(1)]),
            "llvm.memset.p0.i64")
        b.call(memset, [cache, ll.Constant(ll.IntType(8), 0), size, ll.Constant(ll.IntType(1), 0)])


def _build_wake(module: ll.Module, pthread: dict) -> ll.Function:
    """void wake(pool, job, index), under the pool's mutex: wake the threads of worker numbers
    FANOUT * index + 1 ... FANOUT * index + FANOUT, those the job has. The launching thread
    (worker 0) wakes FANOUT threads, each thread that takes the job FANOUT more: a grid that
    ends before they come wakes few threads, and a long one has all its workers after
    log_FANOUT(workers) wake-ups (two for 16 workers)."""
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [PTR, PTR, I64]), "ptxport_wake")
    fn.linkage = "internal"
    pool, job, index = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    conds = b.inttoptr(b.load(_field(b, pool, _CONDS), typ=I64), PTR)
    workers = b.load(_word(b, job, WORKERS), typ=I64)
    for offset in range(1, FANOUT + 1):
        child = b.add(b.mul(index, I64(FANOUT)), I64(offset))
        with b.if_then(b.icmp_signed("<", child, workers)):
            cond = b.inttoptr(b.load(_word(b, conds, child), typ=I64), PTR)
            b.call(pthread["pthread_cond_signal"], [cond])
    b.ret_void()
    return fn


def _build_thread(module: ll.Module, share: ll.Function, wake: ll.Function,
                  pthread: dict) -> None:
    """void *ptxport_pool_thread(arg): arg: the thread's words (_THREAD_*). A parked thread
    waits on its own condition until the generation changes, then, under the mutex, takes
    the job if it is still open and has that many workers (counted in `running`), wakes
    its FANOUT children (wake) and runs its share. After a share (or a job it came too late
    for) it watches the generation for the pool's spin time; a job that opens meanwhile it
    takes without the mutex (_take_fast), so that 16 threads start within microseconds
    instead of one after another through the mutex. Then it parks again."""
    fn = ll.Function(module, ll.FunctionType(PTR, [PTR]), "ptxport_pool_thread")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    (arg,) = fn.args
    pool = b.inttoptr(b.load(_word(b, arg, 0), typ=I64), PTR)
    index = b.load(_word(b, arg, 1), typ=I64)
    seen = b.alloca(I64)
    b.store(b.load(_word(b, arg, 2), typ=I64), seen)
    mutex = _field(b, pool, _MUTEX)
    generation, job_slot = _field(b, pool, _GENERATION), _field(b, pool, _JOB)
    running, own, parked = _field(b, pool, _RUNNING), _field(b, arg, _THREAD_COND), \
        _word(b, arg, _PARKED)
    park, check, wait, woken, take, spin, spun = (fn.append_basic_block(n) for n in (
        "park", "check", "wait", "woken", "take", "spin", "spun"))
    b.branch(park)
    b.position_at_end(park)
    b.call(pthread["pthread_mutex_lock"], [mutex])
    # (seen by a waking thread, which then signals this one's condition: _wake_parked)
    b.atomic_rmw("xchg", parked, I64(1), "seq_cst")
    b.branch(check)
    b.position_at_end(check)
    now = b.load_atomic(generation, "seq_cst", 8, typ=I64)
    b.cbranch(b.icmp_unsigned("==", now, b.load(seen, typ=I64)), wait, woken)
    b.position_at_end(wait)
    b.call(pthread["pthread_cond_wait"], [own, mutex])
    b.branch(check)
    b.position_at_end(woken)
    b.atomic_rmw("xchg", parked, I64(0), "seq_cst")
    b.store(now, seen)
    job = b.inttoptr(b.load_atomic(job_slot, "seq_cst", 8, typ=I64), PTR)
    # (a closed job, null: the launching thread found every block claimed before this
    # thread came, and waits only for the threads that took it)
    leave, is_open = fn.append_basic_block("leave"), fn.append_basic_block("open")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(job, I64), I64(0)), leave, is_open)
    b.position_at_end(is_open)
    b.cbranch(b.icmp_signed("<", index, b.load(_word(b, job, WORKERS), typ=I64)), take, leave)
    b.position_at_end(leave)
    b.call(pthread["pthread_mutex_unlock"], [mutex])
    b.branch(spin)
    b.position_at_end(take)
    b.atomic_rmw("add", running, I64(1), "seq_cst")
    b.call(wake, [pool, job, index])
    b.call(pthread["pthread_mutex_unlock"], [mutex])
    _run_share(b, pool, share, job, index, pthread)
    b.branch(spin)
    b.position_at_end(spin)
    changed = lambda: b.icmp_unsigned(  # noqa: E731
        "!=", b.load_atomic(generation, "acquire", 8, typ=I64), b.load(seen, typ=I64))
    _spin_until(b, pthread, b.load_atomic(_field(b, pool, _SPIN_NS), "monotonic", 8, typ=I64),
                spun, changed)
    b.position_at_end(spun)
    fast = fn.append_basic_block("fast")
    b.cbranch(changed(), fast, park)
    b.position_at_end(fast)
    _take_fast(b, pool, share, wake, index, seen, pthread)
    b.branch(spin)


def _take_fast(b: ll.IRBuilder, pool, share, wake, index, seen, pthread: dict) -> None:
    """A spinning thread's take of the job it saw open, without the mutex: count itself in
    `running` first, then look at the job; the launching thread closes a job (nulls it)
    first, then looks at `running`, all sequentially consistent, so either this thread
    sees the job closed or the launching thread waits for it. It takes the job only if it
    is the generation it saw (not a later one at the same address) and has its worker
    number; else it counts itself out again."""
    fn = b.function
    generation, running = _field(b, pool, _GENERATION), _field(b, pool, _RUNNING)
    saw = b.load_atomic(generation, "acquire", 8, typ=I64)
    b.store(saw, seen)
    b.atomic_rmw("add", running, I64(1), "seq_cst")
    job = b.inttoptr(b.load_atomic(_field(b, pool, _JOB), "seq_cst", 8, typ=I64), PTR)
    same = b.icmp_unsigned("==", b.load_atomic(generation, "seq_cst", 8, typ=I64), saw)
    is_open, take, out = (fn.append_basic_block(n) for n in ("fast_open", "fast_take",
                                                             "fast_out"))
    b.cbranch(b.and_(same, b.icmp_unsigned("!=", b.ptrtoint(job, I64), I64(0))), is_open, out)
    b.position_at_end(is_open)
    b.cbranch(b.icmp_signed("<", index, b.load(_word(b, job, WORKERS), typ=I64)), take, out)
    b.position_at_end(take)
    _wake_parked(b, pool, job, index, wake, pthread)
    _run_share(b, pool, share, job, index, pthread)
    done = fn.append_basic_block("fast_done")
    b.branch(done)
    b.position_at_end(out)
    _count_out(b, pool, pthread)
    b.branch(done)
    b.position_at_end(done)


def _wake_parked(b: ll.IRBuilder, pool, job, index, wake, pthread: dict) -> None:
    """wake(), under the mutex, when one of the thread's children is parked (a child marks
    itself parked under the mutex, then looks at the generation, so either it sees this
    job or this thread sees it parked)."""
    conds = b.inttoptr(b.load(_field(b, pool, _CONDS), typ=I64), PTR)
    workers = b.load(_word(b, job, WORKERS), typ=I64)
    with b.goto_entry_block():
        b.position_at_start(b.function.entry_basic_block)
        found = b.alloca(I64)
    b.store(I64(0), found)
    for offset in range(1, FANOUT + 1):
        child = b.add(b.mul(index, I64(FANOUT)), I64(offset))
        with b.if_then(b.icmp_signed("<", child, workers)):
            words = b.sub(b.load(_word(b, conds, child), typ=I64), I64(_THREAD_COND))
            flag = b.load_atomic(_word(b, b.inttoptr(words, PTR), _PARKED), "seq_cst", 8,
                                 typ=I64)
            b.store(b.or_(b.load(found, typ=I64), flag), found)
    any_parked = b.icmp_unsigned("!=", b.load(found, typ=I64), I64(0))
    mutex = _field(b, pool, _MUTEX)
    with b.if_then(any_parked):
        b.call(pthread["pthread_mutex_lock"], [mutex])
        b.call(wake, [pool, job, index])
        b.call(pthread["pthread_mutex_unlock"], [mutex])


def _run_share(b: ll.IRBuilder, pool, share, job, index, pthread: dict) -> None:
    """Run worker `index`'s share of the job (counted in `running`), add its failure, and
    count it out."""
    b.atomic_rmw("add", _word(b, job, FAILURES), b.call(share, [job, index]), "seq_cst")
    _count_out(b, pool, pthread)


def _count_out(b: ll.IRBuilder, pool, pthread: dict) -> None:
    """Take this thread out of `running`; the last one out signals the launching thread
    (under the mutex: it looks at `running` under it before it waits)."""
    left = b.sub(b.atomic_rmw("sub", _field(b, pool, _RUNNING), I64(1), "seq_cst"), I64(1))
    with b.if_then(b.icmp_signed("==", left, I64(0))):
        mutex = _field(b, pool, _MUTEX)
        b.call(pthread["pthread_mutex_lock"], [mutex])
        b.call(pthread["pthread_cond_signal"], [_field(b, pool, _DONE)])
        b.call(pthread["pthread_mutex_unlock"], [mutex])


def _spin_until(b: ll.IRBuilder, pthread: dict, spin_ns, out: ll.Block, ready) -> None:
    """Branch to `out` once `ready()` (an i1 made at the builder) holds or `spin_ns`
    nanoseconds (i64) have passed (the clock read every 64 rounds of the processor's
    spin-wait hint); the builder is left with nothing to add."""
    fn = b.function
    head, again, rounds = (fn.append_basic_block(n) for n in ("spin_head", "spin_again",
                                                               "spin_rounds"))
    spec = _timespec(b)
    deadline = b.add(_now(b, pthread, spec), spin_ns)
    b.branch(head)
    b.position_at_end(head)
    with _counting(b, I64(64)) as _:
        looking = fn.append_basic_block("spin_look")
        b.cbranch(ready(), out, looking)
        b.position_at_end(looking)
        _pause(b)
    b.branch(rounds)
    b.position_at_end(rounds)
    b.cbranch(b.icmp_signed(">=", _now(b, pthread, spec), deadline), out, again)
    b.position_at_end(again)
    b.branch(head)


def _build_run(module: ll.Module, share: ll.Function, wake: ll.Function,
               pthread: dict) -> None:
    """i64 ptxport_pool_run(pool, job): start the job's counter, open the job to the pool's
    threads (when it has more than one worker), run worker 0's share, close the job and wait
    for the threads that took it; how many workers failed. Every worker's result is -1 until
    its share stores one."""
    fn = ll.Function(module, ll.FunctionType(I64, [PTR, PTR]), "ptxport_pool_run")
    pool, job = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    mutex, done = _field(b, pool, _MUTEX), _field(b, pool, _DONE)
    job_slot, running = _field(b, pool, _JOB), _field(b, pool, _RUNNING)
    workers = b.load(_word(b, job, WORKERS), typ=I64)
    results = b.inttoptr(b.load(_word(b, job, RESULTS), typ=I64), PTR)
    with _counting(b, workers) as i:
        b.store(I64(-1), _word(b, results, i))
    counter = b.inttoptr(b.load(_word(b, job, COUNTER), typ=I64), PTR)
    b.store(b.load(_word(b, job, START), typ=I64), counter)
    b.store(I64(0), _word(b, job, FAILURES))
    several = b.icmp_signed(">", workers, I64(1))
    _trace(b, job, pthread, I64(0))
    with b.if_then(several):
        b.call(pthread["pthread_mutex_lock"], [mutex])
        b.atomic_rmw("xchg", job_slot, b.ptrtoint(job, I64), "seq_cst")
        generation = _field(b, pool, _GENERATION)
        # (threads that spin read it without the mutex; llvmlite has no untyped atomic store)
        b.atomic_rmw("add", generation, I64(1), "seq_cst")
        b.call(wake, [pool, job, I64(0)])
        b.call(pthread["pthread_mutex_unlock"], [mutex])
    own = b.call(share, [job, I64(0)])
    _trace(b, job, pthread, I64(1))
    check, wait, unlock, out = (fn.append_basic_block(n) for n in ("check", "wait", "unlock",
                                                                   "out"))
    close, slept = fn.append_basic_block("close"), fn.append_basic_block("slept")
    b.cbranch(several, close, out)
    b.position_at_end(close)
    b.call(pthread["pthread_mutex_lock"], [mutex])
    b.atomic_rmw("xchg", job_slot, I64(0), "seq_cst")
    b.call(pthread["pthread_mutex_unlock"], [mutex])
    # (the helpers usually end within microseconds of this thread: waiting for them on the
    # condition would add a wake-up, tens of microseconds, to every launch)
    spin_ns = b.load_atomic(_field(b, pool, _SPIN_NS), "monotonic", 8, typ=I64)
    least = I64(_LAUNCHER_SPIN_NS)
    _spin_until(b, pthread, b.select(b.icmp_signed("<", spin_ns, least), least, spin_ns),
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
    b.ret(b.add(own, b.load_atomic(_word(b, job, FAILURES), "acquire", 8, typ=I64)))


def _pause(b: ll.IRBuilder) -> None:
    """The processor's spin-wait hint (x86's `pause`, AArch64's `yield`), if it has one."""
    machine = llvm.get_process_triple().split("-")[0]
    module = b.module
    if machine in ("x86_64", "i686", "i386"):
        name, args = "llvm.x86.sse2.pause", []
    elif machine in ("aarch64", "arm64"):
        name, args = "llvm.aarch64.hint", [I32(1)]
    else:
        return
    hint = module.globals.get(name) or ll.Function(
        module, ll.FunctionType(ll.VoidType(), [a.type for a in args]), name)
    b.call(hint, args)


class _counting:
    """`with _counting(b, n) as i:` a loop over i in 0..n-1 in b's function."""

    def __init__(self, b: ll.IRBuilder, count: ll.Value):
        self.b, self.count = b, count

    def __enter__(self) -> ll.Value:
        b = self.b
        fn = b.function
        self.head, self.body, self.after = (fn.append_basic_block(n) for n in (
            "count_head", "count_body", "count_after"))
        before = b.block
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(I64)
        self.i.add_incoming(I64(0), before)
        b.cbranch(b.icmp_signed("<", self.i, self.count), self.body, self.after)
        b.position_at_end(self.body)
        return self.i

    def __exit__(self, *exc) -> None:
        b = self.b
        self.i.add_incoming(b.add(self.i, I64(1)), b.block)
        b.branch(self.head)
        b.position_at_end(self.after)


class _Native:
    """The pool's compiled code and the libc functions Python calls to set pools up."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None)
        try:
            functions = {name: getattr(libc, name) for name in (
                *_PTHREADS, "pthread_mutex_init", "pthread_cond_init", "pthread_create",
                "pthread_detach")}
        except AttributeError as e:
            raise PtxportError(
                "the CPU device runs blocks on POSIX threads (pthread_create and friends), "
                f"which this process does not have: {e}") from None
        module = ll.Module("ptxport_pool")
        pthread = _declare(module)
        share, wake = _build_share(module, pthread), _build_wake(module, pthread)
        _build_thread(module, share, wake, pthread)
        _build_run(module, share, wake, pthread)
        with LLVM_LOCK:
            for name in _PTHREADS:
                llvm.add_symbol(f"ptxport.{name}",
                                ctypes.cast(functions[name], ctypes.c_void_p).value)
            parsed = llvm.parse_assembly(str(module))
            parsed.triple = llvm.get_process_triple()
            self._engine = llvm.create_mcjit_compiler(parsed, target_machine())
            self._engine.finalize_object()
            self.thread = self._engine.get_function_address("ptxport_pool_thread")
            # (ctypes releases the GIL for the call)
            self.run = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
                self._engine.get_function_address("ptxport_pool_run"))
        self.init_mutex, self.init_cond = (functions["pthread_mutex_init"],
                                           functions["pthread_cond_init"])
        self.create, self.detach = functions["pthread_create"], functions["pthread_detach"]
        self.detach.argtypes = [ctypes.c_void_p]


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
        if self._native.init_mutex(ctypes.c_void_p(self.address + _MUTEX), None) \
                or self._native.init_cond(ctypes.c_void_p(self.address + _DONE), None):
            raise PtxportError("the CPU device could not set up its worker threads' "
                               "mutex and condition (pthread_*_init failed)")
        self._threads: list[np.ndarray] = []      # each thread's words (it reads them)
        self._conds = np.zeros(1, dtype=np.int64)
        self._memory.view(np.int64)[_SPIN_NS // 8] = _SPIN[0]
        _POOLS.append(self)

    def grow(self, helpers: int) -> None:
        """Have at least `helpers` threads (worker numbers 1..helpers). Only while no job
        runs: the pool's holder calls it before run()."""
        if len(self._threads) >= helpers:
            return
        words = self._memory.view(np.int64)
        conds = np.zeros(helpers + 1, dtype=np.int64)
        conds[:self._conds.size] = self._conds
        self._conds = conds
        words[_CONDS // 8] = conds.ctypes.data
        while len(self._threads) < helpers:
            number = len(self._threads) + 1
            words_of_thread = np.zeros(_THREAD_SIZE // 8, dtype=np.int64)
            words_of_thread[:3] = (self.address, number, words[_GENERATION // 8])
            address = words_of_thread.ctypes.data
            if self._native.init_cond(ctypes.c_void_p(address + _THREAD_COND), None):
                raise PtxportError("the CPU device could not set up a worker thread's "
                                   "condition (pthread_cond_init failed)")
            conds[number] = address + _THREAD_COND
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

    def run(self, job: Job) -> int:
        """Run the job on this pool's threads and the calling thread (which must hold the
        pool, and have grown it to the job's workers - 1); how many workers failed."""
        if job.tracing != _TRACING[0]:
            job.trace(_TRACING[0])
        failed = self._native.run(self.address, job.address)
        if _TRACING[0]:
            _TRACING[1] = job.traced(int(job.words[WORKERS]))
        return failed


# Whether launches record when each worker's share began and ended (trace_shares), and the
# last one's record.
_TRACING: list = [False, None]


def trace_shares(on: bool) -> None:
    """Record, from the next launch on (or no more), when each worker's share of a launch's
    blocks began and ended, for last_shares (benchmarks/cpu_scaling.py: how late the last
    worker starts, how long the first waits for the last)."""
    _TRACING[:] = [bool(on), None]


def last_shares() -> dict | None:
    """While trace_shares is on, the last launch's record (Job.traced: microseconds from
    when the launching thread opened the job), else None."""
    return _TRACING[1]


# How long (ns) a worker thread that ended its share watches for the next job before it
# parks on its condition (set_spin); every pool this process made.
_SPIN = [100_000]
_POOLS: list[Pool] = []


def set_spin(seconds: float) -> None:
    """Have worker threads watch for the next launch for `seconds` after their share of one
    ends before they park (0: park at once). Watching keeps a core busy; a launch that
    comes meanwhile finds its workers awake instead of waking them (tens of microseconds
    each)."""
    if not seconds >= 0:
        raise ValueError("the spin time must be at least 0 seconds")
    _SPIN[0] = int(seconds * 1e9)
    for pool in _POOLS:
        pool._memory.view(np.int64)[_SPIN_NS // 8] = _SPIN[0]


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
