"""wmma.load, wmma.mma and wmma.store (PTX ISA 9.7.14.4) on GPU targets without NVIDIA's
tensor cores (AMDGPU, SPIR-V): the warp's 32 lanes compute D = A * B + C together, each
reading the others' fragment registers with the target's lane shuffle (`target.lane(fl)`,
`target.read_lane(fl, value, lane)`, both on 32-bit values).

The ISA leaves the distribution of a WMMA fragment over the warp's lanes unspecified and
target dependent (9.7.14.4.1, "Matrix Fragments for WMMA"): a program may only load, store,
multiply and apply one element-wise operation to every element alike. This file's
distribution for m16n16k16, with E elements per lane (16 for f16 a/b, 8 for bf16 a/b and for
c/d), puts element e of lane l at index (l * E + e) mod 256 of the matrix, counted
- row-major (16 * row + column) for a, c and d,
- column-major (16 * column + row) for b,
so that lanes 16-31 repeat lanes 0-15 when E is 16. Then lane l's d elements are row l/2 of
D, columns 8 * (l mod 2) + e, and the a and b elements that make them lie at register
indices fixed for each k: 72 shuffles per mma.

Elements are packed two to a 32-bit register for f16 and bf16 (the first in the low half),
one per register for f32. Products are summed in f32 over k = 0..15 with fused
multiply-adds, the ISA leaving the accumulation order and rounding unspecified; an f16
result is rounded to nearest even. Only m16n16k16 with f16 or bf16 inputs is lowered; other
shapes and integer, tf32 and f64 forms are refused by name.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I16, I32, I64, FunctionLowering, const_int, declare
from ptxport.ir import nodes as ir

__all__ = ["lower_wmma"]

F32, F16 = ll.FloatType(), ll.HalfType()
SIDE = 16                      # m16n16k16: every matrix is 16 x 16
ELEMENTS = SIDE * SIDE


def lower_wmma(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """wmma.{load,mma,store}.sync.aligned...m16n16k16 on a target with lane shuffles."""
    shape = inst.spec.get("shape")
    if shape != "m16n16k16":
        raise fl.unsupported(inst, f"wmma shape {shape}: only m16n16k16 is implemented on "
                                   f"target {fl.target.name}")
    op = inst.spec.get("op")
    if op == "load":
        _load(fl, inst)
    elif op == "store":
        _store(fl, inst)
    else:
        _mma(fl, inst)


# --- where a lane's elements are ----------------------------------------------------------------

def _per_lane(fragment: str, element: str) -> int:
    """E, the elements a lane holds of a fragment ("a", "b", "c", "d") of `element` type."""
    return SIDE if fragment in "ab" and element == "f16" else ELEMENTS // 32


def _registers(element: str, count: int) -> int:
    return count if element == "f32" else count // 2


def _check_element(fl: FunctionLowering, inst: ir.Instruction, fragment: str,
                   element: str) -> None:
    allowed = ("f16", "bf16") if fragment in "ab" else ("f16", "f32")
    if element not in allowed:
        raise fl.unsupported(inst, f"wmma with .{element} {fragment} fragments: only f16 and "
                                   f"bf16 inputs are implemented on target {fl.target.name}")


def _matrix_offset(fl: FunctionLowering, fragment: str, index: ll.Value, layout: str,
                   stride: ll.Value, size: int) -> ll.Value:
    """The byte offset (i64) in memory of the element at fragment index `index`."""
    b = fl.b
    major, minor = b.udiv(index, I32(SIDE)), b.urem(index, I32(SIDE))
    row, column = (minor, major) if fragment == "b" else (major, minor)
    outer, inner = (row, column) if layout == "row" else (column, row)
    element = b.add(b.mul(b.zext(outer, I64), b.zext(stride, I64)), b.zext(inner, I64))
    return b.mul(element, const_int(I64, size))


def _memory(fl: FunctionLowering, inst: ir.Instruction, address, fragment: str,
            element: str) -> list[tuple[ll.Value, ll.Type]]:
    """The pointer to each of the lane's E elements, with the element's LLVM type."""
    stride_operand = inst.operands[2] if len(inst.operands) > 2 else None
    stride = I32(SIDE) if stride_operand is None else fl.read(stride_operand, "u32")
    layout = inst.spec.get("layout")[0]
    space = inst.spec.get("space")
    base = fl.pointer(address, None if space is None else space.split("::")[0])
    per_lane = _per_lane(fragment, element)
    typ, size = (F32, 4) if element == "f32" else (I16, 2)
    first = fl.b.mul(fl.target.lane(fl), I32(per_lane))
    pointers = []
    for e in range(per_lane):
        index = fl.b.urem(fl.b.add(first, I32(e)), I32(ELEMENTS))
        offset = _matrix_offset(fl, fragment, index, layout, stride, size)
        pointers.append((fl.b.gep(base, [offset], source_etype=I8), typ))
    return pointers


def _load(fl: FunctionLowering, inst: ir.Instruction) -> None:
    fragment, element = inst.spec.get("frag"), inst.spec.types[-1]
    _check_element(fl, inst, fragment, element)
    values = [fl.b.load(p, typ=t, align=2 if t == I16 else 4)
              for p, t in _memory(fl, inst, inst.operands[1], fragment, element)]
    if element == "f32":
        fl.write_vector(inst.operands[0], values, "f32")
        return
    fl.write_vector(inst.operands[0], [_pack(fl, values[i], values[i + 1])
                                       for i in range(0, len(values), 2)], "b32")


def _store(fl: FunctionLowering, inst: ir.Instruction) -> None:
    element = inst.spec.types[-1]
    _check_element(fl, inst, "d", element)
    pointers = _memory(fl, inst, inst.operands[0], "d", element)
    if element == "f32":
        values = fl.read_vector(inst.operands[1], "f32", len(pointers))
    else:
        words = fl.read_vector(inst.operands[1], "b32", len(pointers) // 2)
        values = [half for word in words for half in _unpack(fl, word)]
    for (pointer, typ), value in zip(pointers, values, strict=True):
        fl.b.store(value, pointer, align=2 if typ == I16 else 4)


def _pack(fl: FunctionLowering, low: ll.Value, high: ll.Value) -> ll.Value:
    b = fl.b
    return b.or_(b.zext(low, I32), b.shl(b.zext(high, I32), I32(16)))


def _unpack(fl: FunctionLowering, word: ll.Value) -> tuple[ll.Value, ll.Value]:
    b = fl.b
    return b.trunc(word, I16), b.trunc(b.lshr(word, I32(16)), I16)


# --- the multiply-accumulate --------------------------------------------------------------------

def _mma(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """wmma.mma.sync.aligned.alayout.blayout.m16n16k16.dtype.ctype d, a, b, c (f16 inputs) or
    .f32.bf16.bf16.f32 (bf16 inputs). The layouts say how the loads read memory, which the
    fragments already reflect."""
    types = inst.spec.types
    if len(types) == 2:
        dtype, ctype, input_type = types[0], types[1], "f16"
    elif len(types) == 4 and types[1] == types[2] == "bf16":
        dtype, ctype, input_type = types[0], types[3], "bf16"
    else:
        raise fl.unsupported(inst, f"wmma.mma with .{'.'.join(types)}: only f16 and bf16 "
                                   f"inputs are implemented on target {fl.target.name}")
    if inst.spec.get("satfinite") or inst.spec.get("rnd"):
        raise fl.unsupported(inst, "wmma.mma with .satfinite or a rounding modifier")
    b = fl.b
    per_input = _per_lane("a", input_type)
    a_words = fl.read_vector(inst.operands[1], "b32", per_input // 2)
    b_words = fl.read_vector(inst.operands[2], "b32", per_input // 2)
    c = _accumulators(fl, inst.operands[3], ctype)
    lane = fl.target.lane(fl)
    row, half = b.lshr(lane, I32(1)), b.and_(lane, I32(1))
    # a[row][k], k = 0..15: index 16 * row + k, in lane (16 * row + k) / E, element k mod E
    a = [_element(fl, a_words, per_input, b.add(b.mul(row, I32(SIDE)), I32(k)), k, input_type)
         for k in range(SIDE)]
    results = []
    for e, accumulator in enumerate(c):
        # b[k][column], column = 8 * (lane mod 2) + e: index 16 * column + k
        column = b.add(b.mul(half, I32(8)), I32(e))
        total = accumulator
        for k in range(SIDE):
            factor = _element(fl, b_words, per_input, b.add(b.mul(column, I32(SIDE)), I32(k)),
                              k, input_type)
            total = _fma(fl, a[k], factor, total)
        results.append(total)
    if dtype == "f32":
        fl.write_vector(inst.operands[0], results, "f32")
    else:
        halves = [b.bitcast(b.fptrunc(r, F16), I16) for r in results]
        fl.write_vector(inst.operands[0], [_pack(fl, halves[i], halves[i + 1])
                                           for i in range(0, len(halves), 2)], "b32")


def _accumulators(fl: FunctionLowering, operand, ctype: str) -> list[ll.Value]:
    """The lane's 8 c elements as f32."""
    count = ELEMENTS // 32
    if ctype == "f32":
        return fl.read_vector(operand, "f32", count)
    words = fl.read_vector(operand, "b32", _registers(ctype, count))
    return [_widen(fl, half, "f16") for word in words for half in _unpack(fl, word)]


def _element(fl: FunctionLowering, words: list[ll.Value], per_lane: int, index: ll.Value,
             k: int, input_type: str) -> ll.Value:
    """The a or b element at fragment index `index` (whose element number is k mod E, the
    same in every lane), read from the lane that holds it, as f32."""
    b = fl.b
    source = b.udiv(index, I32(per_lane))
    number = k % per_lane
    word = fl.target.read_lane(fl, words[number // 2], source)
    return _widen(fl, _unpack(fl, word)[number % 2], input_type)


def _widen(fl: FunctionLowering, bits: ll.Value, element: str) -> ll.Value:
    """An f16 or bf16 value (its 16 bits) as the f32 of the same value (exact)."""
    b = fl.b
    if element == "f16":
        return b.fpext(b.bitcast(bits, F16), F32)
    return b.bitcast(b.shl(b.zext(bits, I32), I32(16)), F32)


def _fma(fl: FunctionLowering, x: ll.Value, y: ll.Value, z: ll.Value) -> ll.Value:
    fma = declare(fl.llfn.module, "llvm.fma.f32", F32, [F32, F32, F32])
    return fl.b.call(fma, [x, y, z])
