"""What the GPU targets (nvptx, amdgpu, spirv) lower the same way: a function's body,
device functions' parameters and results (passed by value, as PTX passes them), and the
initial values of module variables."""

from __future__ import annotations

import struct
from collections.abc import Callable

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I64, PTR, FunctionLowering, const_int, value_type
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ptx.ast import FloatImm, IntImm

__all__ = ["function_type", "initializer", "lower_body", "pass_type", "return_results"]


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


def pass_type(var: ir.Variable, target: str, opaque_reason: str) -> ll.Type:
    """How a parameter or result of PTX size and type is passed in LLVM: f32/f64 as floats,
    predicates as i1, other scalars as integers of their width, everything else as bytes."""
    t = var.type
    if t.kind == "opaque":
        raise UnsupportedFeatureError(f".param .{t.name} {var.name}", target, None,
                                      opaque_reason)
    if not (var.dims or var.vector or var.elements != 1):
        if t.name in ("f32", "f64"):
            return value_type(t)
        if t.kind == "pred":
            return I1
        if t.bits in (8, 16, 32, 64):
            return ll.IntType(t.bits)
    return ll.ArrayType(I8, max(var.size, 1))


def function_type(f: ir.Function, pass_as: Callable[[ir.Variable], ll.Type]) -> ll.FunctionType:
    """A device function's LLVM type: its parameters by value, its results returned (one,
    or a struct of several)."""
    results = [pass_as(v) for v in f.returns]
    ret = (ll.VoidType() if not results else results[0] if len(results) == 1
           else ll.LiteralStructType(results))
    return ll.FunctionType(ret, [pass_as(p) for p in f.params])


def initializer(module: ir.Module, var: ir.Variable, typ: ll.Type, element: ll.Type,
                globals_: dict, target: str) -> ll.Constant:
    """The initial value; with addresses of variables among the items, a literal struct whose
    address fields are pointers (what NVPTX prints as `generic(var)+offset` or `var+offset`)."""
    if var.init is None:
        return ll.Constant(typ, None)
    values = [_initial_item(module, var, item, element, globals_, target)
              for item in var.init]
    if not isinstance(typ, ll.ArrayType):
        return values[0]
    values += [ll.Constant(element, None)] * (typ.count - len(values))
    if any(v.type != element for v in values):
        return ll.Constant.literal_struct(values)
    return ll.Constant(typ, values)


def _initial_item(module: ir.Module, var: ir.Variable, item, element: ll.Type,
                  globals_: dict, target: str) -> ll.Constant:
    if isinstance(item, IntImm):
        return (const_int(element, item.value) if isinstance(element, ll.IntType)
                else ll.Constant(element, float(item.value)))
    if isinstance(item, FloatImm):
        if isinstance(element, ll.IntType):
            return const_int(element, item.bits)
        return ll.Constant(element, _float_of(item))
    if isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Variable) \
            and item.target.name in globals_ and element == I64:
        target = globals_[item.target.name]
        expression = target.get_reference()
        if item.offset:
            expression = f"getelementptr (i8, {target.type} {expression}, i64 {item.offset})"
        if item.generic:
            return ll.FormattedConstant(PTR, f"addrspacecast ({target.type} {expression} "
                                             "to ptr)")
        return ll.FormattedConstant(target.type, expression)
    raise UnsupportedFeatureError("initializer", target, module.location(var.pos),
                                  f"cannot initialize '{var.name}' with {item!r}")


def _float_of(item: FloatImm) -> float:
    if item.width == 32:
        return struct.unpack("<f", struct.pack("<I", item.bits))[0]
    return struct.unpack("<d", struct.pack("<Q", item.bits))[0]
