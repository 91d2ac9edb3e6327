"""Native calls into a kernel's claiming entry points with their arguments in memory.

ctypes converts every argument of a call (about 0.1 us each, under the GIL), and the
worker pool's threads (pool.py) are no Python threads at all: so every claiming entry point
(run_claimed_blocks, run_claimed_waiting_blocks) is called through a two-argument
trampoline, `trampoline(fn, args)`, compiled once per process, that loads fn's arguments
from a row of 64-bit words the executor keeps per worker (most of them the same launch after
launch) and calls fn with them.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import cache

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR
from ptxport.codegen.targets.cpu.machine import LLVM_LOCK, jit_engine

__all__ = ["CLAIMED", "CLAIMED_WAITING", "Layout", "Trampoline"]


@dataclass(frozen=True)
class Layout:
    """A claiming entry point's parameters (as codegen/targets/cpu/entry.py's build_claiming
    makes them from run_blocks' and run_waiting_blocks'), each passed in one 64-bit word, and the
    words a launch sets: the shared block counter's address, the grid's block count and the
    chunk a worker claims at a time."""

    name: str
    parameters: tuple[ll.Type, ...]
    counter: int
    total: int
    chunk: int

    @property
    def words(self) -> int:
        return len(self.parameters)


# ctx, frames, frame_size, nthreads, counter*, total, chunk, end*, status*
CLAIMED = Layout("claimed", (PTR, PTR, I64, I32, PTR, I64, I64, PTR, PTR), 4, 5, 6)
# ctx, frames, frame_size, points*, statuses*, nthreads, counter*, total, chunk, end*,
# finish (codegen/targets/cpu/entry.py's build_claiming)
CLAIMED_WAITING = Layout("claimed_waiting",
                         (PTR, PTR, I64, PTR, PTR, I32, PTR, I64, I64, PTR, PTR), 6, 7, 8)

# trampoline(fn, args): fn's result
Trampoline = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_KEPT: list = []     # the engines that hold the trampolines' code, for the process's life


def _build(layout: Layout) -> ll.Module:
    """ptxport_call_<name>(fn, args): load each word of args, narrow or cast it to its
    parameter's type, and call fn with them."""
    module = ll.Module(f"ptxport_call_{layout.name}")
    called = ll.FunctionType(I64, list(layout.parameters))
    fn = ll.Function(module, ll.FunctionType(I64, [called.as_pointer(), PTR]),
                     f"ptxport_call_{layout.name}")
    target, args = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    values = []
    for i, kind in enumerate(layout.parameters):
        word = b.load(b.gep(args, [I64(i)], source_etype=I64), typ=I64)
        values.append(word if kind == I64 else b.trunc(word, kind) if kind == I32
                      else b.inttoptr(word, kind))
    b.ret(b.call(target, values))
    return module


@cache
def trampoline_address(layout: Layout) -> int:
    """The address of `layout`'s trampoline, compiled at the first use."""
    with LLVM_LOCK:
        engine = jit_engine(str(_build(layout)))
        _KEPT.append(engine)
        return engine.get_function_address(f"ptxport_call_{layout.name}")
