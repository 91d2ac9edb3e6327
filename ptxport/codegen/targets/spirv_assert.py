"""CUDA's device-side assert on the SPIR-V target.

CUDA C++'s assert(e) calls the driver's `__assertfail(message, file, line, function,
charSize)` where e is false (`call.uni __assertfail, (p0, p1, p2, p3, p4)` in PTX). The CUDA
driver prints `file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `message`
failed.` for the thread, ends the kernel, and the launch fails with cudaErrorAssert. OpenCL
has no way to end a kernel, so the call becomes, for the work-item that makes it:
- an entry in the launch's assert log (in the checks buffer, spirv_checks.py): the assert's
  number, the line and the work-item's ids, from which the opencl backend prints CUDA's text
  on standard error once the launch is done, as CUDA does (OpenCL's printf writes where the
  runtime likes: Intel's CPU runtime writes to standard output). Message, file and function
  are string constants, followed back at compile time as printf's %s strings are
  (spirv_printf.string_constant), and kept in the kernel's layout (`Assertion`);
- a fault record of its own kind in the launch's checks buffer (spirv_checks.record_assert:
  the launch's first fault, access or assert, is the one recorded), and the word that says
  an assert failed;
- a return from its function. After every call of a device function that may assert
  (directly or through the functions it calls), a work-item returns as well where that word
  is set, so that the one whose assert failed returns all the way out of the kernel.

`trap` (__trap(), and CUDA's cooperative groups where a grid sync is not possible) is lowered
the same way without the log: a trap record in the checks buffer and a return, and the launch
raises KernelTrapError.

What goes on: the other work-items run until they fail an assert themselves, return from a
call of a function that may assert after one failed (any work-item's), or end; CUDA would
stop the whole grid, leaving memory as undefined as this does. Once the launch completes,
the opencl backend raises KernelAssertError with the recorded assert's text (the layout's
`assertions` hold the constant parts).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, FunctionLowering
from ptxport.codegen.targets import spirv_checks, spirv_printf
from ptxport.ir import nodes as ir
from ptxport.passes.inline import functions_that

__all__ = ["Assertion", "asserting_functions", "lower_assertfail", "lower_trap",
           "stop_if_asserted"]

# CUDA's text (cpu_printf's, to the byte)
_TEXT = ("{file}:{line}: {function}: block: [{block}], thread: [{thread}] Assertion "
         "`{message}` failed.")


@dataclass(frozen=True)
class Assertion:
    """The parts of an assert's text known at compile time."""

    file: str
    function: str
    message: str

    def text(self, line: int, block: tuple[int, int, int], thread: tuple[int, int, int]) -> str:
        """CUDA's text for the thread `thread` of block `block`, as the CPU device writes it."""
        return _TEXT.format(file=self.file, line=line, function=self.function,
                            block=",".join(map(str, block)),
                            thread=",".join(map(str, thread)), message=self.message)


def _may_stop(function: ir.Function) -> bool:
    """Whether the function calls __assertfail or traps (`trap`, and `brx` out of range)."""
    return any(inst.opcode in ("trap", "brx") or
               (inst.opcode == "call" and any(isinstance(o, ir.Function) and
                                              o.name == "__assertfail" for o in inst.operands))
               for inst in function.instructions())


def asserting_functions(module: ir.Module) -> set[str]:
    """The device functions that may fail an assert or trap, themselves or in a function
    they call."""
    return functions_that(module, _may_stop)


def lower_trap(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """`trap` (__trap()): record the trap in the launch's checks buffer and return, as a
    failed assert does (the launch then raises KernelTrapError)."""
    spirv_checks.record_trap(fl, inst)
    _return_now(fl)


def lower_assertfail(target, fl: FunctionLowering, inst: ir.Instruction, args: list) -> None:
    """`call __assertfail, (message, file, line, function, charSize)`: log and record the
    assert, and return from the function."""
    if len(args) != 5 or not all(isinstance(v, ir.Variable) for v in args):
        raise fl.unsupported(inst, "__assertfail takes a message, a file name, a line, a "
                                   "function name and a character size (.param variables), "
                                   "and returns nothing")
    message, file, function = (
        (spirv_printf.string_constant(target, fl, inst, args[i], what) or b"")
        .decode("utf-8", "replace") for i, what in ((0, "assert's message"),
                                                    (1, "assert's file name"),
                                                    (3, "assert's function name")))
    assertion = Assertion(file, function, message)
    number = len(target.assertions)
    target.assertions.append(assertion)
    line = fl.b.load(target.own_pointer(fl, args[2]), typ=I32)
    spirv_checks.record_assert(fl, inst, number, line)
    _return_now(fl)
    fl.b.position_at_end(fl.llfn.append_basic_block("after_assert"))


def stop_if_asserted(fl: FunctionLowering) -> None:
    """After a call of a function that may assert: return where an assert failed."""
    b = fl.b
    flag = b.load_atomic(b.gep(fl.checks, [I64(spirv_checks.CHECKS_ASSERTED)],
                               source_etype=I64), "monotonic", 8, typ=I64)
    stop = fl.llfn.append_basic_block("assert_stop")
    going_on = fl.llfn.append_basic_block("assert_not_failed")
    b.cbranch(b.icmp_unsigned("!=", flag, I64(0)), stop, going_on)
    b.position_at_end(stop)
    _return_now(fl)
    b.position_at_end(going_on)


def _return_now(fl: FunctionLowering) -> None:
    """Return from the function, its results undefined (nobody reads them: every caller
    returns in turn)."""
    result = fl.llfn.function_type.return_type
    if isinstance(result, ll.VoidType):
        fl.b.ret_void()
    else:
        fl.b.ret(ll.Constant(result, ll.Undefined))
