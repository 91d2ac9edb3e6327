"""mma.sync.aligned, ldmatrix and stmatrix (PTX ISA 9.7.14.5) on GPU targets without NVIDIA's
tensor cores (AMDGPU, SPIR-V): the warp's 32 lanes compute together, each reading the others'
registers with the target's lane shuffle (`target.lane(fl)`, `target.read_lane(fl, value,
lane)`, as gpu_wmma.py does for wmma, whose element conversions this file shares).

Unlike wmma's, these fragments have layouts the ISA fixes (9.7.14.5.x, "Matrix Fragments for
mma.mMnNkK"). With groupID g = lane / 4 and threadID_in_group t = lane % 4, every layout
lowered here puts element i of a lane at
- A (m x k, row-major):  row g + r_i, column s_A * t + c_i,
- B (k x n, column-major): row s_B * t + r_i, column g,
- C and D (m x n):          row g + r_i, column 2 t + c_i,
with constant offsets (r_i, c_i) and steps s per shape and type (`_FRAGMENTS`). So the A
element (row, k) that a lane's D element needs sits in lane 4 g + t' at an element number
that depends on k only, and the B element (k, column) in lane 4 column + t'': each lane
shuffles the A registers of the four lanes of its group and the B registers of the lanes of
its two columns, then multiplies.

Accumulation: D[r][c] = C[r][c] + A[r][0] B[0][c] + A[r][1] B[1][c] + ... in order of k, one
fused multiply-add per term in f32 (f16, bf16 and tf32 inputs, whose products f32 holds
exactly, so each product is exact and each sum rounded to nearest even; tf32 inputs drop their
13 low mantissa bits as the tensor cores do) or f64 (f64 inputs); integers sum exactly and
wrap to 32 bits, or clamp with .satfinite. The ISA leaves order and intermediate precision
unspecified: NVIDIA's tensor cores may differ from this in the last bits of f32 results.

ldmatrix.m8n8.b16 and stmatrix.m8n8.b16 (9.7.14.5.15, 9.7.14.5.16): lane 8 j + r gives the
address of row r (16 bytes) of matrix j; lane l holds elements (l / 4, 2 (l % 4)) and
(l / 4, 2 (l % 4) + 1) of matrix j in register j, the lower column in the lower half (of the
transpose with .trans). Each lane moves its own row and exchanges its words by shuffles.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I32, I64, FunctionLowering, const_int
from ptxport.codegen.targets.gpu_wmma import (
    multiply_add,
    narrow,
    pack_elements,
    unpack_elements,
    widen,
)
from ptxport.codegen.targets.thread_wgmma import lower_wgmma
from ptxport.ir import nodes as ir

__all__ = ["MATRIX_LOWERINGS", "lower_ldmatrix", "lower_mma", "lower_stmatrix"]

BITS = {"f16": 16, "bf16": 16, "s8": 8, "u8": 8, "tf32": 32, "f32": 32, "s32": 32, "f64": 64}


def _spots(count: int, at) -> tuple[tuple[int, int], ...]:
    return tuple(at(i) for i in range(count))


# (shape, a type) -> (A's (r_i, c_i), s_A, B's (r_i, c_i), s_B) as the module notes describe
_K16_16BIT = (_spots(8, lambda i: (8 * (i // 2 % 2), i % 2 + 8 * (i // 4))), 2,
              _spots(4, lambda i: (i % 2 + 8 * (i // 2), 0)), 2)
_K8_16BIT = (_spots(4, lambda i: (8 * (i // 2), i % 2)), 2, _spots(2, lambda i: (i, 0)), 2)
_K4_32BIT = (_spots(2, lambda i: (8 * i, 0)), 1, _spots(1, lambda i: (0, 0)), 1)
_K8_32BIT = (_spots(4, lambda i: (8 * (i % 2), 4 * (i // 2))), 1,
             _spots(2, lambda i: (4 * i, 0)), 1)
_K32_8BIT = (_spots(16, lambda i: (8 * (i // 4 % 2), i % 4 + 16 * (i // 8))), 4,
             _spots(8, lambda i: (i % 4 + 16 * (i // 4), 0)), 4)
_K16_8BIT = (_spots(8, lambda i: (8 * (i // 4), i % 4)), 4, _spots(4, lambda i: (i, 0)), 4)
_FRAGMENTS = {
    ("m16n8k16", "f16"): _K16_16BIT, ("m16n8k16", "bf16"): _K16_16BIT,
    ("m16n8k8", "f16"): _K8_16BIT, ("m16n8k8", "bf16"): _K8_16BIT,
    ("m16n8k4", "tf32"): _K4_32BIT, ("m16n8k8", "tf32"): _K8_32BIT,
    ("m16n8k32", "s8"): _K32_8BIT, ("m16n8k32", "u8"): _K32_8BIT,
    ("m16n8k16", "s8"): _K16_8BIT, ("m16n8k16", "u8"): _K16_8BIT,
    ("m8n8k16", "s8"): (_spots(4, lambda i: (0, i)), 4, _spots(4, lambda i: (i, 0)), 4),
    ("m8n8k4", "f64"): (((0, 0),), 1, ((0, 0),), 1),
    ("m16n8k4", "f64"): _K4_32BIT, ("m16n8k8", "f64"): _K8_32BIT,
    ("m16n8k16", "f64"): (_spots(8, lambda i: (8 * (i % 2), 4 * (i // 2))), 1,
                          _spots(4, lambda i: (4 * i, 0)), 1),
}
_FRAGMENTS[("m8n8k16", "u8")] = _FRAGMENTS[("m8n8k16", "s8")]
_C_M16 = _spots(4, lambda i: (8 * (i // 2), i % 2))
_C_M8 = _spots(2, lambda i: (0, i))
# a type -> the c and d types the ISA allows with it
_ACCUMULATORS = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",), "s8": ("s32",),
                 "u8": ("s32",), "f64": ("f64",)}


# --- registers ----------------------------------------------------------------------------------

def _register_bits(element: str) -> int:
    return 64 if element == "f64" else 32


def _words(fl: FunctionLowering, operand, element: str, count: int) -> list[ll.Value]:
    bits = f"b{_register_bits(element)}"
    if count == 1 and isinstance(operand, ir.Register) and not operand.vector:
        return [fl.read(operand, bits)]
    return fl.read_vector(operand, bits, count)


def _write_words(fl: FunctionLowering, operand, element: str, words: list[ll.Value]) -> None:
    bits = f"b{_register_bits(element)}"
    if len(words) == 1 and not isinstance(operand, ir.VectorValue) and not getattr(
            operand, "vector", None):
        fl.write(operand, words[0], bits)
        return
    fl.write_vector(operand, words, bits)


def _registers(count: int, element: str) -> int:
    """Registers holding `count` elements."""
    return max(1, count * BITS[element] // _register_bits(element))


# --- mma ----------------------------------------------------------------------------------------

def _form(fl: FunctionLowering, inst: ir.Instruction) -> tuple[str, str, str, str, str]:
    """(shape, d, a, b, c types), refused unless this file lowers it."""
    spec = inst.spec
    shape, types = spec.get("shape"), tuple(spec.types)
    layouts = spec.get("layout") or ()
    layouts = (layouts,) if isinstance(layouts, str) else tuple(layouts)
    extras = [g for g in ("sp", "kind", "block_scale", "scale_vec", "bitop", "popc")
              if spec.get(g)]
    if extras or len(types) != 4 or layouts != ("row", "col"):
        raise fl.unsupported(inst, f"this mma form on target {fl.target.name} (it lowers "
                                   "dense .row.col mma with f16, bf16, tf32, s8, u8 and f64 "
                                   "inputs)")
    dtype, atype, btype, ctype = types
    same_inputs = atype == btype or {atype, btype} <= {"s8", "u8"}
    allowed = _ACCUMULATORS.get(atype, ())
    if ((shape, atype) not in _FRAGMENTS or not same_inputs or dtype not in allowed
            or ctype not in allowed or (dtype != ctype and atype != "f16")):
        raise fl.unsupported(inst, f"mma .{shape} .{'.'.join(types)} on target "
                                   f"{fl.target.name} (not an mma form this lowering knows)")
    if spec.get("satfinite") and ctype != "s32":
        raise fl.unsupported(inst, "mma .satfinite with floating-point results")
    return shape, dtype, atype, btype, ctype


def lower_mma(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mma.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype d, a, b, c."""
    shape, dtype, atype, btype, ctype = _form(fl, inst)
    a_spots, a_step, b_spots, b_step = _FRAGMENTS[(shape, atype)]
    c_spots = _C_M8 if shape.startswith("m8") else _C_M16
    k_size = int(shape.split("k")[1])
    d_op, a_op, b_op, c_op = inst.operands[:4]
    a_words = _words(fl, a_op, atype, _registers(len(a_spots), atype))
    b_words = _words(fl, b_op, btype, _registers(len(b_spots), btype))
    c_words = _words(fl, c_op, ctype, _registers(len(c_spots), ctype))
    c = [widen(fl, v, ctype) for v in unpack_elements(fl, c_words, ctype)]
    b = fl.b
    lane = fl.target.lane(fl)
    group_base, quad = b.and_(lane, I32(~3)), b.and_(lane, I32(3))
    shuffled: dict = {}

    def element(words, kind, spot, source_key, source):
        """Element number `spot` of the lane `source`, widened; one shuffle per register
        and source (`source_key`), one conversion per element."""
        per = _register_bits(kind) // BITS[kind]
        key = (id(words), spot // per, source_key)
        if key not in shuffled:
            word = fl.target.read_lane(fl, words[spot // per], source)
            shuffled[key] = [widen(fl, v, kind) for v in unpack_elements(fl, [word], kind)]
        return shuffled[key][spot % per]

    results = []
    for (row, column), total in zip(c_spots, c, strict=True):
        for k in range(k_size):
            spot, t = _find(a_spots, a_step, k, row=row)
            x = element(a_words, atype, spot, ("a", t), b.or_(group_base, I32(t)))
            spot, t = _find(b_spots, b_step, k)
            source = b.add(b.mul(b.add(b.mul(quad, I32(2)), I32(column)), I32(4)), I32(t))
            y = element(b_words, btype, spot, ("b", column, t), source)
            total = multiply_add(fl, x, y, total)
        results.append(narrow(fl, total, dtype, bool(inst.spec.get("satfinite"))))
    _write_words(fl, d_op, dtype, pack_elements(fl, results, dtype))


def _find(spots, step: int, k: int, row: int | None = None) -> tuple[int, int]:
    """(element number, threadID_in_group) of the fragment element at position k along the
    k dimension: A's column k in row offset `row`, or (row None) B's row k."""
    for number, (r, c) in enumerate(spots):
        t, rest = divmod(k - (r if row is None else c), step)
        if (row is None or r == row) and rest == 0 and 0 <= t < 4:
            return number, t
    raise AssertionError(f"no fragment element at k = {k}")


# --- ldmatrix and stmatrix ----------------------------------------------------------------------

def _matrix_form(fl: FunctionLowering, inst: ir.Instruction, registers) -> int:
    """The number of 8x8 matrices of an .m8n8 .b16 ldmatrix or stmatrix."""
    spec = inst.spec
    if spec.get("shape") != "m8n8" or tuple(spec.types) != ("b16",):
        raise fl.unsupported(inst, f"{inst.opcode} on target {fl.target.name} (it moves "
                                   ".m8n8 .b16 matrices)")
    count = int(spec.get("num")[1])
    length = len(registers.elements) if isinstance(registers, ir.VectorValue) else (
        getattr(registers, "vector", None) or 1)
    if length != count:
        raise fl.unsupported(inst, f"{inst.opcode} .x{count} needs {count} registers")
    return count


def _row_pointer(fl: FunctionLowering, inst: ir.Instruction, address, write: bool):
    space = inst.spec.get("space")
    return fl.pointer(address, None if space is None else space.split("::")[0], 16,
                      write=write)


def _pick(fl: FunctionLowering, values: list[ll.Value], index: ll.Value) -> ll.Value:
    """values[index] for a lane-dependent index."""
    picked = values[0]
    for i, value in enumerate(values[1:], start=1):
        picked = fl.b.select(fl.b.icmp_unsigned("==", index, I32(i)), value, picked)
    return picked


def _half(fl: FunctionLowering, word: ll.Value, upper: ll.Value) -> ll.Value:
    """The lower or (where `upper`, an i32 0 or 1) upper 16 bits of `word`."""
    return fl.b.and_(fl.b.lshr(word, fl.b.mul(upper, I32(16))), I32(0xFFFF))


def lower_ldmatrix(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """ldmatrix.sync.aligned.m8n8.num{.trans}{.shared{::cta}}.b16 r, [p]. The first 8 num
    lanes load their rows (the others' addresses are ignored, as the ISA says); then each
    lane gathers its register j from the lanes that loaded matrix j."""
    dest, address = inst.operands
    count = _matrix_form(fl, inst, dest)
    b = fl.b
    lane = fl.target.lane(fl)
    before = b.block
    load, joined = (fl.llfn.append_basic_block(x) for x in ("ldmatrix_row", "ldmatrix_rows"))
    b.cbranch(b.icmp_unsigned("<", lane, I32(8 * count)), load, joined)
    b.position_at_end(load)
    pointer = _row_pointer(fl, inst, address, False)
    loaded = [b.load(b.gep(pointer, [const_int(I64, 4 * w)], source_etype=I8),
                     typ=I32, align=4) for w in range(4)]
    after_load = b.block
    b.branch(joined)
    b.position_at_end(joined)
    row_words = []
    for value in loaded:
        phi = b.phi(I32)
        phi.add_incoming(I32(0), before)
        phi.add_incoming(value, after_load)
        row_words.append(phi)
    group, quad = b.lshr(lane, I32(2)), b.and_(lane, I32(3))
    registers = []
    for j in range(count):
        if not inst.spec.has("trans"):   # row g, columns 2t and 2t+1: word t of row g
            source = b.add(group, I32(8 * j))
            words = [fl.target.read_lane(fl, w, source) for w in row_words]
            registers.append(_pick(fl, words, quad))
            continue
        halves = []                       # rows 2t and 2t+1, column g: half g%2 of word g/2
        for h in range(2):
            source = b.add(b.add(b.mul(quad, I32(2)), I32(h)), I32(8 * j))
            words = [fl.target.read_lane(fl, w, source) for w in row_words]
            word = _pick(fl, words, b.lshr(group, I32(1)))
            halves.append(_half(fl, word, b.and_(group, I32(1))))
        registers.append(b.or_(halves[0], b.shl(halves[1], I32(16))))
    _write_words(fl, dest, "s32", registers)


def lower_stmatrix(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """stmatrix.sync.aligned.m8n8.num{.trans}{.shared{::cta}}.b16 [p], r: lane 8 j + r
    gathers row r of matrix j (of its transpose with .trans) and stores it."""
    address, source = inst.operands
    count = _matrix_form(fl, inst, source)
    registers = _words(fl, source, "s32", count)
    b = fl.b
    lane = fl.target.lane(fl)
    matrix, row = b.lshr(lane, I32(3)), b.and_(lane, I32(7))
    words = []
    for w in range(4):
        if not inst.spec.has("trans"):    # word w of row r: register j of lane 4 r + w
            from_lane = b.add(b.mul(row, I32(4)), I32(w))
            words.append(_pick(fl, [fl.target.read_lane(fl, reg, from_lane)
                                    for reg in registers], matrix))
            continue
        halves = []                        # column c of row r: half r%2 of lane 4 c + r/2
        for c in (2 * w, 2 * w + 1):
            from_lane = b.add(I32(4 * c), b.lshr(row, I32(1)))
            word = _pick(fl, [fl.target.read_lane(fl, reg, from_lane) for reg in registers],
                         matrix)
            halves.append(_half(fl, word, b.and_(row, I32(1))))
        words.append(b.or_(halves[0], b.shl(halves[1], I32(16))))
    store, done = (fl.llfn.append_basic_block(x) for x in ("stmatrix_row", "stmatrix_done"))
    b.cbranch(b.icmp_unsigned("<", lane, I32(8 * count)), store, done)
    b.position_at_end(store)
    pointer = _row_pointer(fl, inst, address, True)
    for w, word in enumerate(words):
        b.store(word, b.gep(pointer, [const_int(I64, 4 * w)], source_etype=I8),
                align=4)
    b.branch(done)
    b.position_at_end(done)


MATRIX_LOWERINGS = {"mma": lower_mma, "ldmatrix": lower_ldmatrix, "stmatrix": lower_stmatrix,
                    "wgmma": lower_wgmma}
