"""Large copies on the CPU device on the worker pool's threads, as a GPU's copies run at the
device's memory bandwidth rather than one host thread's.

On the CPU device a copy (cudaMemcpy, Buffer.copy_from/copy_to) is a memcpy. One thread
moves about 10 GB/s on the GPU machine's Sapphire Rapids vCPUs, which is far from what the
memory system gives all cores together (benchmarks/cpu_limits.py), so a copy of at least
PARALLEL_BYTES is split into CHUNK_BYTES pieces that the pool's threads (pool.py) claim with
an atomic add, the calling thread being one of them, as a launch's blocks are claimed: a
worker that starts late (parked threads take tens of microseconds to wake) takes fewer
pieces. Smaller copies, copies whose two ranges overlap (memmove's order matters then) and
a process with one worker copy on the calling thread.
"""

from __future__ import annotations

import ctypes
from functools import cache

import numpy as np
from llvmlite import ir as ll

from ptxport.codegen.lower import I64, PTR
from ptxport.codegen.targets.cpu.machine import LLVM_LOCK, jit_engine
from ptxport.runtime.backends.cpu import pool as pool_threads

__all__ = ["CHUNK_BYTES", "PARALLEL_BYTES", "copy"]

# The least size copied on several threads, and the pieces they claim (a worker per MiB at
# most: waking one costs about as much as copying half a MiB).
PARALLEL_BYTES = 4 << 20
CHUNK_BYTES = 256 << 10
_BYTES_PER_WORKER = 1 << 20

# The words of a copy (each worker's row is the same: stride 0): destination, source, size,
# the counter's address (the next piece), how many pieces.
_DST, _SRC, _SIZE, _COUNTER, _PIECES, _WORDS = range(6)


def _build(module: ll.Module) -> None:
    """i64 ptxport_copy_share(entry, args): claim pieces of the copy until none is left;
    -1 (the pool's trampoline signature: `entry` is unused)."""
    fn = ll.Function(module, ll.FunctionType(I64, [PTR, PTR]), "ptxport_copy_share")
    _, args = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    loop, body, done = (fn.append_basic_block(n) for n in ("loop", "body", "done"))

    def word(index: int):
        return b.load(b.gep(args, [I64(index)], source_etype=I64), typ=I64)

    dst, src, size, pieces = (b.inttoptr(word(i), PTR) if i < _SIZE else word(i)
                              for i in (_DST, _SRC, _SIZE, _PIECES))
    counter = b.inttoptr(word(_COUNTER), PTR)
    b.branch(loop)
    b.position_at_end(loop)
    piece = b.atomic_rmw("add", counter, I64(1), "monotonic")
    b.cbranch(b.icmp_unsigned("<", piece, pieces), body, done)
    b.position_at_end(body)
    offset = b.mul(piece, I64(CHUNK_BYTES))
    left = b.sub(size, offset)
    length = b.select(b.icmp_unsigned("<", left, I64(CHUNK_BYTES)), left, I64(CHUNK_BYTES))
    memcpy = ll.Function(module, ll.FunctionType(ll.VoidType(), [PTR, PTR, I64, ll.IntType(1)]),
                         "llvm.memcpy.p0.p0.i64")
    b.call(memcpy, [b.gep(dst, [offset], source_etype=ll.IntType(8)),
                    b.gep(src, [offset], source_etype=ll.IntType(8)), length,
                    ll.Constant(ll.IntType(1), 0)])
    b.branch(loop)
    b.position_at_end(done)
    b.ret(I64(-1))


class _Native:
    def __init__(self) -> None:
        module = ll.Module("ptxport_copies")
        _build(module)
        with LLVM_LOCK:
            self._engine = jit_engine(str(module))
            self.share = self._engine.get_function_address("ptxport_copy_share")


@cache
def _native() -> _Native:
    return _Native()


def copy(dst: int, src: int, nbytes: int, workers: int) -> None:
    """Copy `nbytes` from address `src` to `dst` on up to `workers` threads (see the
    module's note)."""
    workers = min(workers, nbytes // _BYTES_PER_WORKER)
    if nbytes < PARALLEL_BYTES or workers < 2 or (dst < src + nbytes and src < dst + nbytes):
        ctypes.memmove(dst, src, nbytes)
        return
    # (the counter on a cache line of its own, apart from the words every worker reads)
    memory = np.zeros(8 + _WORDS + 8, dtype=np.int64)
    counter = memory[:8]
    words = memory[8:8 + _WORDS]
    words[_DST], words[_SRC], words[_SIZE] = dst, src, nbytes
    words[_COUNTER] = counter.ctypes.data
    words[_PIECES] = -(-nbytes // CHUNK_BYTES)
    results = np.zeros(workers, dtype=np.int64)
    job = pool_threads.Job()
    job.words[[pool_threads.TRAMPOLINE, pool_threads.ARGS, pool_threads.STRIDE,
               pool_threads.RESULTS, pool_threads.WORKERS, pool_threads.COUNTER,
               pool_threads.TOTAL]] = (_native().share, words.ctypes.data, 0,
                                       results.ctypes.data, workers, counter.ctypes.data,
                                       words[_PIECES])
    pool = pool_threads.take()
    try:
        pool.grow(workers - 1)
        pool.run(job, traced=False)
    finally:
        pool_threads.give(pool)
