"""gang/scalar_lanes.py: one lane of a vector the gang builder made, as scalars computed from
the instructions that made it (every binary operation LLVM names, `and` and `or` among them,
whose llvmlite builder methods are `and_` and `or_`), run by LLVM's JIT against the lanes of
the vector itself."""

from __future__ import annotations

import ctypes
import re

import llvmlite.binding as llvm
import pytest
from llvmlite import ir as ll

from ptxport.codegen.targets.cpu.gang.scalar_lanes import (
    lane,
    lane_step,
    recomputed,
    scaled_extension,
)

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


def _widened(b, fn, how: str):
    """(v, the 64-bit lanes U + K * ext(v)) of f(x, u): v = splat(x) * (2i + 1) - 1 (a tree
    level's index), U = splat(u), in the ways NVRTC and our builder write it (`how`)."""
    vt, wide = ll.VectorType(I32, 8), ll.VectorType(I64, 8)
    x, u = fn.args
    v = b.add(b.mul(_splat(b, x, vt), ll.Constant(vt, [2 * i + 1 for i in range(8)])),
              ll.Constant(vt, [-1] * 8))
    ext = (b.zext if how == "zext" else b.sext)(v, wide)
    four = _splat(b, b.sext(I32(4), I64), wide)
    scaled = {"shl": lambda: b.shl(ext, ll.Constant(wide, [2] * 8)),
              "factor first": lambda: b.mul(four, ext),
              "by a value": lambda: b.mul(ext, _splat(b, u, wide))}.get(
        how, lambda: b.mul(ext, four))()
    return v, b.add(_splat(b, u, wide), scaled)


@pytest.mark.parametrize("how, k", [("mul", 4), ("shl", 4), ("factor first", 4),
                                    ("zext", None), ("by a value", None)])
def test_a_sign_extended_scaled_index_is_found_under_its_base(how, k):
    module = ll.Module()
    fn = ll.Function(module, ll.FunctionType(I64, [I32, I64]), "f")
    b = ll.IRBuilder(fn.append_basic_block())
    v, addrs = _widened(b, fn, how)
    found = scaled_extension(addrs)
    assert (found is None) if k is None else (found[0] is v and found[1] == k)


def _jitted(module, restype, *argtypes):
    """(the engine, which must outlive the calls, and module's function f as a ctypes
    function), compiled for this machine."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), llvm.Target
                                        .from_default_triple().create_target_machine())
    engine.finalize_object()
    return engine, ctypes.CFUNCTYPE(restype, *argtypes)(engine.get_function_address("f"))


def test_a_lane_step_leaves_out_the_splats_added():
    """v and v + c (a tree level's ai and ai + offset): the same instructions, and lane 1's
    less lane 0's value."""
    texts = []
    for added in (False, True):
        module = ll.Module()
        fn = ll.Function(module, ll.FunctionType(I32, [I32, I32]), "f")
        b = ll.IRBuilder(fn.append_basic_block())
        vt = ll.VectorType(I32, 8)
        v = b.mul(_splat(b, fn.args[0], vt), ll.Constant(vt, [2 * i + 1 for i in range(8)]))
        if added:
            v = b.add(b.add(v, _splat(b, fn.args[1], vt)), ll.Constant(vt, [-1] * 8))
        before = len(b.block.instructions)
        b.ret(lane_step(b, v))
        made = b.block.instructions[before:-1]
        names = {f'%"{i.name}"': f"#{n}" for n, i in enumerate(made)}
        texts.append([re.sub(r'%"[^"]*"', lambda m, names=names: names.get(m.group(0), "?"),
                             str(i).split("=", 1)[1]) for i in made])
        engine, f = _jitted(module, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
        assert f(5, 9) == 10 and f(-3, 1) == -6
    assert texts[0] == texts[1]


def test_a_sign_extensions_operand_is_made_again_on_the_cold_path():
    """recomputed with 32-bit lanes: a cast's 32-bit operand copied from frozen scalars (not
    the hot vector's twin, which LLVM would merge with it), with the same lanes."""
    for k in (0, 5):
        module = ll.Module()
        fn = ll.Function(module, ll.FunctionType(I64, [I32, I64]), "f")
        b = ll.IRBuilder(fn.append_basic_block())
        v, addrs = _widened(b, fn, "mul")
        copy = recomputed(b, addrs, widths=(32, 64))
        seen, todo = set(), [copy]
        while todo:
            x = todo.pop()
            if isinstance(x, ll.Instruction) and id(x) not in seen:
                seen.add(id(x))
                todo.extend(x.operands)
        assert id(v) not in seen and "freeze" in str(module)
        b.ret(b.sub(b.extract_element(copy, I32(k)), b.extract_element(addrs, I32(k))))
        engine, f = _jitted(module, ctypes.c_int64, ctypes.c_int32, ctypes.c_int64)
        assert f(7, 1 << 40) == 0 and f(-(1 << 30), 12) == 0
