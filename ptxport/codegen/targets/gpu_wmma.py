"""wmma.load, wmma.mma and wmma.store (PTX ISA 9.7.14.4) on GPU targets without NVIDIA's
tensor cores (AMDGPU, SPIR-V): the warp's 32 lanes compute D = A * B + C together, each
reading the others' fragment registers with the target's lane shuffle (`target.lane(fl)`,
`target.read_lane(fl, value, lane)`, on 32- and 64-bit values).

The ISA leaves the distribution of a WMMA fragment over the warp's lanes unspecified and
target dependent (9.7.14.4.1, "Matrix Fragments for WMMA"): a program may only load, store,
multiply, and apply one element-wise operation to every element alike. This file's
distribution: for an m x n x k shape, with E elements per lane (the fragment's registers
times the elements each packs, as the ISA fixes them), element e of lane l is the element at
index (l * E + e) mod size of the matrix, counted
- row-major for a (k * row + column), c and d (n * row + column),
- column-major for b (k * column + row),
so that where 32 * E exceeds the matrix, further lanes repeat the first ones. Then a lane's d
elements lie in one row of D, and the a and b elements that make each of them lie at
register positions that depend on k only, the same in every lane: one shuffle per register.

Elements are packed into 32-bit registers from the low bits up (two f16 or bf16, four s8 or
u8; one tf32, f32 or s32), f64 one per 64-bit register. Floating-point products are summed
over k in order with fused multiply-adds (f32 for f16, bf16 and tf32 inputs, whose low 13
mantissa bits are ignored as the tensor cores do; f64 for f64), the ISA leaving the order and
rounding unspecified; an f16 result is rounded to nearest even. Integer products are summed
exactly and wrap to 32 bits, or clamp to the s32 range with .satfinite.
"""

from __future__ import annotations

import re

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I32, I64, FunctionLowering, const_int, declare
from ptxport.ir import nodes as ir

__all__ = ["lower_wmma", "multiply_add", "narrow", "pack_elements", "unpack_elements", "widen"]

F16, F32, F64 = ll.HalfType(), ll.FloatType(), ll.DoubleType()
BITS = {"f16": 16, "bf16": 16, "s8": 8, "u8": 8, "tf32": 32, "f32": 32, "s32": 32, "f64": 64}
# (a and b types, c and d types) of each multiply-accumulate
FORMS = {("f16", "f16"), ("f16", "f32"), ("bf16", "f32"), ("tf32", "f32"), ("s8", "s32"),
         ("u8", "s32"), ("f64", "f64")}
S32_MIN, S32_MAX = -(2**31), 2**31 - 1


def lower_wmma(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """wmma.{load,mma,store}.sync.aligned on a target with lane shuffles."""
    shape = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", inst.spec.get("shape") or "")
    if shape is None:
        raise fl.unsupported(inst, "a wmma without a shape")
    m, n, k = map(int, shape.groups())
    op = inst.spec.get("op")
    if op == "load":
        _load(fl, inst, m, n, k)
    elif op == "store":
        _store(fl, inst, m, n, k)
    else:
        _mma(fl, inst, m, n, k)


# --- fragments ----------------------------------------------------------------------------------

def _dims(fragment: str, m: int, n: int, k: int) -> tuple[int, int]:
    """(rows, columns) of the matrix a fragment ("a", "b", "c", "d") holds."""
    return {"a": (m, k), "b": (k, n)}.get(fragment, (m, n))


def _register_bits(element: str) -> int:
    return 64 if element == "f64" else 32


def _per_register(element: str) -> int:
    return _register_bits(element) // BITS[element]


def _vector_length(operand) -> int:
    if isinstance(operand, ir.VectorValue):
        return len(operand.elements)
    return getattr(operand, "vector", None) or 1


def _per_lane(fl: FunctionLowering, inst: ir.Instruction, operand, fragment: str,
              element: str, m: int, n: int, k: int) -> int:
    """E, the elements each lane holds, checked against the distribution's conditions."""
    per_lane = _vector_length(operand) * _per_register(element)
    rows, columns = _dims(fragment, m, n, k)
    size = rows * columns
    fits = (32 * per_lane) % size == 0 and (
        k % per_lane == 0 if fragment in "ab" else n % per_lane == 0 and 32 * per_lane == size)
    if not fits:
        raise fl.unsupported(inst, f"wmma .m{m}n{n}k{k} {fragment} fragments of {per_lane} "
                                   f".{element} elements a lane")
    return per_lane


def _read_words(fl: FunctionLowering, operand, element: str, count: int) -> list[ll.Value]:
    return fl.read_vector(operand, f"b{_register_bits(element)}", count)


def _write_words(fl: FunctionLowering, operand, element: str, words: list[ll.Value]) -> None:
    fl.write_vector(operand, words, f"b{_register_bits(element)}")


def unpack_elements(fl: FunctionLowering, words: list[ll.Value], element: str) -> list[ll.Value]:
    """Each register's elements (integers of the element's width), low bits first."""
    bits, typ = BITS[element], ll.IntType(BITS[element])
    out = []
    for word in words:
        for i in range(_per_register(element)):
            shifted = fl.b.lshr(word, ll.Constant(word.type, bits * i)) if i else word
            out.append(shifted if shifted.type == typ else fl.b.trunc(shifted, typ))
    return out


def pack_elements(fl: FunctionLowering, values: list[ll.Value], element: str) -> list[ll.Value]:
    """Registers of `values` (integers of the element's width), `unpack_elements`'s inverse."""
    per, register = _per_register(element), ll.IntType(_register_bits(element))
    words = []
    for first in range(0, len(values), per):
        word = None
        for i, value in enumerate(values[first:first + per]):
            value = value if value.type == register else fl.b.zext(value, register)
            if i:
                value = fl.b.shl(value, ll.Constant(register, BITS[element] * i))
            word = value if word is None else fl.b.or_(word, value)
        words.append(word)
    return words


# --- wmma.load and wmma.store -------------------------------------------------------------------

def _pointers(fl: FunctionLowering, inst: ir.Instruction, address, fragment: str,
              element: str, per_lane: int, m: int, n: int, k: int) -> list[ll.Value]:
    """A pointer to each of the lane's elements in memory."""
    b = fl.b
    rows, columns = _dims(fragment, m, n, k)
    layout = inst.spec.get("layout")[0]
    stride_operand = inst.operands[2] if len(inst.operands) > 2 else None
    # without a stride, the matrix is packed: a row (column) follows the previous one
    stride = (I32(columns if layout == "row" else rows) if stride_operand is None
              else fl.read(stride_operand, "u32"))
    space = inst.spec.get("space")
    base = fl.pointer(address, None if space is None else space.split("::")[0])
    inner_count = rows if fragment == "b" else columns     # the fragment's index order
    first = b.mul(fl.target.lane(fl), I32(per_lane))
    pointers = []
    for e in range(per_lane):
        index = b.urem(b.add(first, I32(e)), I32(rows * columns))
        major, minor = b.udiv(index, I32(inner_count)), b.urem(index, I32(inner_count))
        row, column = (minor, major) if fragment == "b" else (major, minor)
        outer, inner = (row, column) if layout == "row" else (column, row)
        offset = b.add(b.mul(b.zext(outer, I64), b.zext(stride, I64)), b.zext(inner, I64))
        offset = b.mul(offset, const_int(I64, BITS[element] // 8))
        pointers.append(b.gep(base, [offset], source_etype=I8))
    return pointers


def _load(fl: FunctionLowering, inst: ir.Instruction, m: int, n: int, k: int) -> None:
    fragment, element = inst.spec.get("frag"), inst.spec.types[-1]
    _check_element(fl, inst, fragment, element)
    per_lane = _per_lane(fl, inst, inst.operands[0], fragment, element, m, n, k)
    typ, size = ll.IntType(BITS[element]), BITS[element] // 8
    values = [fl.b.load(p, typ=typ, align=size)
              for p in _pointers(fl, inst, inst.operands[1], fragment, element, per_lane,
                                 m, n, k)]
    _write_words(fl, inst.operands[0], element, pack_elements(fl, values, element))


def _store(fl: FunctionLowering, inst: ir.Instruction, m: int, n: int, k: int) -> None:
    element = inst.spec.types[-1]
    _check_element(fl, inst, "d", element)
    per_lane = _per_lane(fl, inst, inst.operands[1], "d", element, m, n, k)
    words = _read_words(fl, inst.operands[1], element, per_lane // _per_register(element))
    pointers = _pointers(fl, inst, inst.operands[0], "d", element, per_lane, m, n, k)
    for pointer, value in zip(pointers, unpack_elements(fl, words, element), strict=True):
        fl.b.store(value, pointer, align=BITS[element] // 8)


def _check_element(fl: FunctionLowering, inst: ir.Instruction, fragment: str,
                   element: str) -> None:
    allowed = {form[0 if fragment in "ab" else 1] for form in FORMS}
    if element not in allowed:
        raise fl.unsupported(inst, f"wmma with .{element} {fragment} fragments on target "
                                   f"{fl.target.name} (sub-byte and .b1 forms are not "
                                   "implemented)")


# --- wmma.mma -----------------------------------------------------------------------------------

def _form(fl: FunctionLowering, inst: ir.Instruction) -> tuple[str, str, str, str]:
    """(d, a, b, c) types: `.dtype.ctype` with f16 inputs, else `.dtype.atype.btype.ctype`."""
    types = inst.spec.types
    if len(types) == 2:
        return types[0], "f16", "f16", types[1]
    if len(types) == 4:
        return types
    raise fl.unsupported(inst, f"wmma.mma with .{'.'.join(types)}")


def _mma(fl: FunctionLowering, inst: ir.Instruction, m: int, n: int, k: int) -> None:
    """wmma.mma.sync.aligned.alayout.blayout.shape.types{.rnd}{.satfinite} d, a, b, c. The
    layouts say how the loads read memory, which the fragments already reflect."""
    dtype, atype, btype, ctype = _form(fl, inst)
    # f16 inputs take f16 or f32 c and d in any pairing; s8 and u8 mix; the rest is fixed
    pairs = {(atype, ctype), (atype, dtype)} if atype == "f16" else {(atype, ctype)}
    same_inputs = btype == atype or {atype, btype} <= {"s8", "u8"}
    if not (pairs <= FORMS and same_inputs and (dtype == ctype or atype == "f16")):
        raise fl.unsupported(inst, f"wmma.mma with .{dtype}.{atype}.{btype}.{ctype} on "
                                   f"target {fl.target.name}")
    rounding = inst.spec.get("rnd")
    if rounding not in (None, "rn") or (inst.spec.get("satfinite") and ctype != "s32"):
        raise fl.unsupported(inst, f"wmma.mma with .{rounding or 'satfinite'} on target "
                                   f"{fl.target.name} (only round-to-nearest)")
    b = fl.b
    a_count = _per_lane(fl, inst, inst.operands[1], "a", atype, m, n, k)
    b_count = _per_lane(fl, inst, inst.operands[2], "b", btype, m, n, k)
    d_count = _per_lane(fl, inst, inst.operands[0], "d", dtype, m, n, k)
    a_words = _read_words(fl, inst.operands[1], atype, a_count // _per_register(atype))
    b_words = _read_words(fl, inst.operands[2], btype, b_count // _per_register(btype))
    c_words = _read_words(fl, inst.operands[3], ctype, d_count // _per_register(ctype))
    c = [widen(fl, v, ctype) for v in unpack_elements(fl, c_words, ctype)]
    # the lane's d elements: row (l * E) / n, columns (l * E) mod n + e
    first = b.mul(fl.target.lane(fl), I32(d_count))
    row, column0 = b.udiv(first, I32(n)), b.urem(first, I32(n))
    a = [_element(fl, a_words, atype, a_count, b.add(b.mul(row, I32(k)), I32(kk)), kk)
         for kk in range(k)]
    results = []
    for e, total in enumerate(c):
        column = b.add(column0, I32(e))
        for kk in range(k):
            factor = _element(fl, b_words, btype, b_count,
                              b.add(b.mul(column, I32(k)), I32(kk)), kk)
            total = multiply_add(fl, a[kk], factor, total)
        results.append(narrow(fl, total, dtype, bool(inst.spec.get("satfinite"))))
    _write_words(fl, inst.operands[0], dtype, pack_elements(fl, results, dtype))


def _element(fl: FunctionLowering, words: list[ll.Value], element: str, per_lane: int,
             index: ll.Value, kk: int) -> ll.Value:
    """The a or b element at fragment index `index`, in the accumulation's type. Its number
    in its lane is kk mod E (k is a multiple of E), the same in every lane, so one shuffle
    of one register brings it."""
    number = kk % per_lane
    source = fl.b.udiv(index, I32(per_lane))
    per = _per_register(element)
    word = fl.target.read_lane(fl, words[number // per], source)
    return widen(fl, unpack_elements(fl, [word], element)[number % per], element)


def widen(fl: FunctionLowering, bits: ll.Value, element: str) -> ll.Value:
    """An element's bits as the accumulation's value: f32, f64 or (integers) i64; exact."""
    b = fl.b
    if element == "f16":
        return b.fpext(b.bitcast(bits, F16), F32)
    if element == "bf16":
        return b.bitcast(b.shl(b.zext(bits, I32), I32(16)), F32)
    if element == "tf32":
        return b.bitcast(b.and_(bits, I32(-(1 << 13))), F32)
    if element == "f32":
        return b.bitcast(bits, F32)
    if element == "f64":
        return b.bitcast(bits, F64)
    return b.zext(bits, I64) if element == "u8" else b.sext(bits, I64)


def narrow(fl: FunctionLowering, value: ll.Value, element: str, saturate: bool) -> ll.Value:
    """The accumulation's value as the d element's bits."""
    b = fl.b
    if element == "f16":
        return b.bitcast(b.fptrunc(value, F16), ll.IntType(16))
    if element == "f32":
        return b.bitcast(value, I32)
    if element == "f64":
        return b.bitcast(value, I64)
    if saturate:
        value = b.select(b.icmp_signed("<", value, I64(S32_MIN)), I64(S32_MIN), value)
        value = b.select(b.icmp_signed(">", value, I64(S32_MAX)), I64(S32_MAX), value)
    return b.trunc(value, I32)


def multiply_add(fl: FunctionLowering, x: ll.Value, y: ll.Value, z: ll.Value) -> ll.Value:
    if isinstance(z.type, ll.IntType):
        return fl.b.add(z, fl.b.mul(x, y))
    name = "llvm.fma.f64" if z.type == F64 else "llvm.fma.f32"
    return fl.b.call(declare(fl.llfn.module, name, z.type, [z.type] * 3), [x, y, z])
