"""The LLVM IR pieces the worker pool's native code (pool.py) is built from: the libc
functions it calls, the clock, words of its memory, a spin-wait with a deadline, loops.
"""

from __future__ import annotations

import time

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR

__all__ = ["PTHREADS", "clamp", "counting", "declare", "field", "now", "pause", "spin_until",
           "timespec", "word"]

# The libc functions the pool's code calls (found by ctypes in the process).
PTHREADS = ("pthread_mutex_lock", "pthread_mutex_unlock", "pthread_cond_wait",
            "pthread_cond_signal", "clock_gettime", "sched_yield", "syscall", "usleep")


def declare(module: ll.Module) -> dict[str, ll.Function]:
    """The pthread functions, by their names in the process (pointers as opaque `ptr`)."""
    one, two = ll.FunctionType(I32, [PTR]), ll.FunctionType(I32, [PTR, PTR])
    types = {"pthread_cond_wait": two, "clock_gettime": ll.FunctionType(I32, [I32, PTR]),
             "sched_yield": ll.FunctionType(I32, []), "usleep": ll.FunctionType(I32, [I32]),
             "syscall": ll.FunctionType(I64, [I64], var_arg=True)}
    return {name: ll.Function(module, types.get(name, one), f"ptxport.{name}")
            for name in PTHREADS}


def now(b: ll.IRBuilder, pthread: dict, spec) -> ll.Value:
    """The monotonic clock in nanoseconds (i64); `spec`: two words of the function's stack
    (a struct timespec)."""
    b.call(pthread["clock_gettime"], [I32(time.CLOCK_MONOTONIC), spec])
    return b.add(b.mul(b.load(word(b, spec, 0), typ=I64), I64(1_000_000_000)),
                 b.load(word(b, spec, 1), typ=I64))


def timespec(b: ll.IRBuilder):
    """Two words at the function's entry for now."""
    with b.goto_entry_block():
        b.position_at_start(b.function.entry_basic_block)
        spec = b.alloca(ll.ArrayType(I64, 2))
    spec.type = PTR         # (llvmlite's typed alloca, used through untyped pointers)
    return spec


def word(b: ll.IRBuilder, base, index: int | ll.Value):
    return b.gep(base, [index if isinstance(index, ll.Value) else I64(index)],
                 source_etype=I64)


def field(b: ll.IRBuilder, pool, offset: int):
    return b.gep(pool, [I64(offset)], source_etype=ll.IntType(8))


def spin_until(b: ll.IRBuilder, pthread: dict, spin_ns, out: ll.Block, ready,
                yield_after=None) -> None:
    """Branch to `out` once `ready()` (an i1 made at the builder) holds or `spin_ns`
    nanoseconds (i64) have passed (the clock read every 64 rounds of the processor's
    spin-wait hint); the builder is left with nothing to add. After `yield_after` ns (i64,
    if given) it also yields the processor (sched_yield) at each reading of the clock, so
    that a thread of another library that waits for a core gets it (a spinning thread
    with nothing to yield to goes on at once)."""
    fn = b.function
    head, again, rounds = (fn.append_basic_block(n) for n in ("spin_head", "spin_again",
                                                               "spin_rounds"))
    spec = timespec(b)
    start = now(b, pthread, spec)
    deadline = b.add(start, spin_ns)
    b.branch(head)
    b.position_at_end(head)
    with counting(b, I64(64)) as _:
        looking = fn.append_basic_block("spin_look")
        b.cbranch(ready(), out, looking)
        b.position_at_end(looking)
        pause(b)
    b.branch(rounds)
    b.position_at_end(rounds)
    clock = now(b, pthread, spec)
    b.cbranch(b.icmp_signed(">=", clock, deadline), out, again)
    b.position_at_end(again)
    if yield_after is not None:
        with b.if_then(b.icmp_signed(">=", b.sub(clock, start), yield_after)):
            b.call(pthread["sched_yield"], [])
    b.branch(head)


def clamp(b: ll.IRBuilder, value, least, most):
    """min(max(value, least), most), signed i64s."""
    value = b.select(b.icmp_signed("<", value, least), least, value)
    return b.select(b.icmp_signed(">", value, most), most, value)


def pause(b: ll.IRBuilder) -> None:
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


class counting:
    """`with counting(b, n) as i:` a loop over i in 0..n-1 in b's function."""

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
