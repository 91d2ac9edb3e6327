"""gang/scalar_lanes.py: one lane of a vector the gang builder made, as scalars computed from
the instructions that made it (every binary operation LLVM names, `and` and `or` among them,
whose llvmlite builder methods are `and_` and `or_`), run by LLVM's JIT against the lanes of
the vector itself."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import pytest
from llvmlite import ir as ll

from ptxport.codegen.targets.cpu.gang.scalar_lanes import lane, recomputed

I32, I64 = ll.IntType(32), ll.IntType(64)
OPS = ["add", "sub", "mul", "shl", "and", "or", "xor", "lshr", "ashr"]
METHOD = {"and": "and_", "or": "or_"}


def _splat(b, x, vt):
    one = b.insert_element(ll.Constant(vt, None), x, I32(0))
    return b.shuffle_vector(one, ll.Constant(vt, None), ll.Constant(ll.VectorType(I32, 8),
                                                                    [0] * 8))


def _function(op: str, k: int, how: str, wide: bool = False):
    """f(x): lane k of (splat(x) op c), taken by `how` (lane, recomputed, or extractelement),
    in 64 bits where `wide`."""
    module = ll.Module()
    vt = ll.VectorType(I64 if wide else I32, 8)
    et = vt.element
    fn = ll.Function(module, ll.FunctionType(et, [et]), "f")
    b = ll.IRBuilder(fn.append_basic_block())
    c = ll.Constant(vt, [3 * i + 1 for i in range(8)])
    v = getattr(b, METHOD.get(op, op))(_splat(b, fn.args[0], vt), c)
    if how == "lane":
        out = lane(b, v, k)
    elif how == "recomputed":
        out = b.extract_element(recomputed(b, v), I32(k))
    elif how == "recomputed32":         # (strided.py's: 32-bit lanes too, leaves frozen)
        copy = recomputed(b, v, widths=(32, 64))
        assert copy is not v
        out = b.extract_element(copy, I32(k))
    else:
        out = b.extract_element(v, I32(k))
    b.ret(out)
    return str(module)


def _run(text: str, x: int) -> int:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple()
                                        .create_target_machine())
    engine.finalize_object()
    width = ctypes.c_int64 if "i64 @" in text else ctypes.c_int32
    f = ctypes.CFUNCTYPE(width, width)(engine.get_function_address("f"))
    return f(x)


@pytest.mark.parametrize("op", OPS)
def test_a_lane_of_each_binary_operation(op):
    for x in (5, -7, 0x12345678):
        for k in (0, 5):
            assert _run(_function(op, k, "lane"), x) == _run(_function(op, k, "vector"), x)
            assert _run(_function(op, k, "recomputed", True), x) == _run(
                _function(op, k, "vector", True), x)
            for wide in (False, True):
                assert _run(_function(op, k, "recomputed32", wide), x) == _run(
                    _function(op, k, "vector", wide), x)
