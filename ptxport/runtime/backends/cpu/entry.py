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

# run_claimed_blocks' parameter types (as jit.RunClaimedBlocks declares them), in LLVM's words.
_PARAMETERS = ("i8*", "i8*", "i64", "i32", "i8*", "i64", "i64", "i8*", "i8*")


def _trampoline_ir() -> str:
    """ptxport_call_claimed(fn, args): load each word of args, narrow or cast it to its
    parameter's type, and call fn with them."""
    lines, values = [], []
    for i, kind in enumerate(_PARAMETERS):
        lines += [f"  %p{i} = getelementptr i64, i64* %args, i64 {i}",
                  f"  %w{i} = load i64, i64* %p{i}"]
        if kind == "i64":
            values.append(f"i64 %w{i}")
            continue
        cast = "trunc" if kind == "i32" else "inttoptr"
        lines.append(f"  %a{i} = {cast} i64 %w{i} to {kind}")
        values.append(f"{kind} %a{i}")
    signature = ", ".join(_PARAMETERS)
    return "\n".join([
        "define i64 @ptxport_call_claimed(i8* %fn, i64* %args) {", *lines,
        f"  %f = bitcast i8* %fn to i64 ({signature})*",
        f"  %r = call i64 %f({', '.join(values)})", "  ret i64 %r", "}", ""])


CallClaimed = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_KEPT: list = []     # the engine that holds the trampoline's code, for the process's life


@cache
def call_claimed() -> ctypes._CFuncPtr:
    """call_claimed()(entry_address, args_address): run_claimed_blocks at `entry_address`
    with the nine words at `args_address`; its result."""
    with LLVM_LOCK:
        module = llvm.parse_assembly(_trampoline_ir())
        module.triple = llvm.get_process_triple()
        engine = llvm.create_mcjit_compiler(module, target_machine())
        engine.finalize_object()
        _KEPT.append(engine)
        return CallClaimed(engine.get_function_address("ptxport_call_claimed"))
