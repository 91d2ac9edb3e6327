"""Dynamic parallelism on the CPU: the device runtime's functions (codegen/device_runtime.py)
as calls into the running process, and the addresses of kernels that a launch names.

A call of one of them becomes `ptxport_device_runtime(ctx, frame, function, params)`, where
`params` points to the addresses of the call's .param variables (results first, then
arguments); runtime/backends/cpu/device_launch.py, a ctypes callback, reads and writes them.
The address of a kernel (`mov.u64 %rd, kernel;`, which the launch passes as its first
argument) is KERNEL_ADDRESS_BASE plus the kernel's position among the module's kernels: an
address no allocation holds (an access through it faults), which the callback turns back
into the kernel.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.device_runtime import FUNCTIONS, HEAP_FUNCTIONS, canonical_name, refusal
from ptxport.codegen.lower import I8, I32, I64, PTR, FunctionLowering
from ptxport.ir import nodes as ir

__all__ = ["DEVICE_RUNTIME_SYMBOL", "KERNEL_ADDRESS_BASE", "KERNEL_ADDRESS_STRIDE",
           "kernel_address", "lower_device_runtime"]

DEVICE_RUNTIME_SYMBOL = "ptxport_device_runtime"
KERNEL_ADDRESS_BASE = 0x7D70_0000_0000_0000
KERNEL_ADDRESS_STRIDE = 16


def kernel_address(module: ir.Module, kernel: ir.Function) -> int | None:
    """The address a kernel of `module` has in the CPU's compiled code (None: `kernel` is
    not one of the module's)."""
    index = next((i for i, k in enumerate(module.kernels) if k.name == kernel.name), None)
    return None if index is None else KERNEL_ADDRESS_BASE + KERNEL_ADDRESS_STRIDE * index


def lower_device_runtime(fl: FunctionLowering, inst: ir.Instruction, callee: ir.Function,
                         pointers: list) -> bool:
    """Lower a call of `callee` if it is a device runtime function (False: it is not),
    given pointers to the call's .param variables."""
    name = canonical_name(callee.name)
    if name is None and callee.name.startswith("__cudaCDP2"):
        raise fl.unsupported(inst, f"the device runtime's '{callee.name}', which ptxport does "
                                   "not provide (docs/dynamic-parallelism.md lists those it "
                                   "does)")
    if name is None:
        return False
    if name not in FUNCTIONS:
        raise fl.unsupported(inst, refusal(callee.name))
    number, sizes = FUNCTIONS[name]
    if name in HEAP_FUNCTIONS:
        fl.target.plan.uses_heap = True     # (reserved before the kernel's launches)
    declared = tuple(p.size for p in callee.returns + callee.params)
    if declared != sizes:
        raise fl.unsupported(inst, f"'{callee.name}' declared with .param sizes {declared}; "
                                   f"CUDA's device runtime has {sizes}")
    llmod = fl.llfn.module
    function = llmod.globals.get(DEVICE_RUNTIME_SYMBOL) or ll.Function(
        llmod, ll.FunctionType(ll.VoidType(), [PTR, PTR, I32, PTR]), DEVICE_RUNTIME_SYMBOL)
    table = fl.entry_alloca(ll.ArrayType(I64, max(len(pointers), 1)), "device_runtime_params")
    for i, pointer in enumerate(pointers):
        slot = fl.b.gep(table, [I64(8 * i)], source_etype=I8)
        fl.b.store(fl.b.ptrtoint(pointer, I64), slot)
    fl.b.call(function, [fl.llfn.args[0], fl.llfn.args[1], I32(number), table])
    return True
