"""What the GPU targets (nvptx, amdgpu, spirv) lower the same way: a function's body, and a
device function's results, which GPUs return by value as PTX does."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ptxport.codegen.lower import FunctionLowering
from ptxport.ir import nodes as ir

__all__ = ["lower_body", "return_results"]


def lower_body(fl: FunctionLowering, problems: list | None) -> None:
    """Registers, blocks and instructions of `fl`'s function, entered at its first block."""
    fl.problems = problems
    fl.declare_registers()
    first = fl.create_blocks()
    fl.b.position_at_end(fl.entry)
    fl.b.branch(first)
    fl.lower_body()


def return_results(fl: FunctionLowering, value_type: Callable[[ir.Variable], ll.Type]) -> None:
    """Return a device function's results (read from their .param slots): none, one value,
    or a struct of them; `value_type` is how the target passes each."""
    results = [fl.b.load(fl.param_pointers[var.name], typ=value_type(var))
               for var in fl.function.returns]
    if not results:
        fl.b.ret_void()
    elif len(results) == 1:
        fl.b.ret(results[0])
    else:
        aggregate = ll.Constant(fl.llfn.function_type.return_type, None)
        for i, value in enumerate(results):
            aggregate = fl.b.insert_value(aggregate, value, i)
        fl.b.ret(aggregate)
