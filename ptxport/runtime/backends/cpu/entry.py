"""One native call into a kernel's run_claimed_blocks with its arguments in memory.

ctypes converts every argument of a call (about 0.1 us each, under the GIL): the executor's
call into run_claimed_blocks has nine, most of them the same at every launch. `call_claimed`
is a two-argument trampoline, compiled once per process, that loads the nine from an array
the executor keeps per worker (ClaimedArgs) and calls the kernel's entry point with them.
"""

from __future__ import annotations

import ctypes
from functools import cache

import llvmlite.binding as llvm

from ptxport.codegen.targets.cpu.machine import LLVM_LOCK, target_machine

__all__ = ["ClaimedArgs", "call_claimed"]

# run_claimed_blocks' arguments, in order, each in one 64-bit word (jit.RunClaimedBlocks):
# ctx, frames, frame_size, nthreads (i32), counter, total, chunk, end, status
ClaimedArgs = ctypes.c_int64 * 9
COUNTER, TOTAL, CHUNK = 4, 5, 6

_IR = """
define i64 @ptxport_call_claimed(i8* %fn, i64* %args) {
  %p0 = getelementptr i64, i64* %args, i64 0
  %a0 = load i64, i64* %p0
  %p1 = getelementptr i64, i64* %args, i64 1
  %a1 = load i64, i64* %p1
  %p2 = getelementptr i64, i64* %args, i64 2
  %a2 = load i64, i64* %p2
  %p3 = getelementptr i64, i64* %args, i64 3
  %w3 = load i64, i64* %p3
  %a3 = trunc i64 %w3 to i32
  %p4 = getelementptr i64, i64* %args, i64 4
  %a4 = load i64, i64* %p4
  %p5 = getelementptr i64, i64* %args, i64 5
  %a5 = load i64, i64* %p5
  %p6 = getelementptr i64, i64* %args, i64 6
  %a6 = load i64, i64* %p6
  %p7 = getelementptr i64, i64* %args, i64 7
  %a7 = load i64, i64* %p7
  %p8 = getelementptr i64, i64* %args, i64 8
  %a8 = load i64, i64* %p8
  %c0 = inttoptr i64 %a0 to i8*
  %c1 = inttoptr i64 %a1 to i8*
  %c4 = inttoptr i64 %a4 to i8*
  %c7 = inttoptr i64 %a7 to i8*
  %c8 = inttoptr i64 %a8 to i8*
  %f = bitcast i8* %fn to i64 (i8*, i8*, i64, i32, i8*, i64, i64, i8*, i8*)*
  %r = call i64 %f(i8* %c0, i8* %c1, i64 %a2, i32 %a3, i8* %c4, i64 %a5, i64 %a6, i8* %c7,
                   i8* %c8)
  ret i64 %r
}
"""

CallClaimed = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_KEPT: list = []     # the engine that holds the trampoline's code, for the process's life


@cache
def call_claimed() -> ctypes._CFuncPtr:
    """call_claimed()(entry_address, args_address): run_claimed_blocks at `entry_address`
    with the nine words at `args_address`; its result."""
    with LLVM_LOCK:
        module = llvm.parse_assembly(_IR.replace(",\n                   ", ", "))
        module.triple = llvm.get_process_triple()
        engine = llvm.create_mcjit_compiler(module, target_machine())
        engine.finalize_object()
        _KEPT.append(engine)
        return CallClaimed(engine.get_function_address("ptxport_call_claimed"))
