"""Warp matrix operations on a gang's lanes: mma.sync.aligned and ldmatrix.sync.aligned as
vector code over the warp's fragments (PTX ISA 9.7.14.5, "Matrix Fragments for mma.m16n8k16
with floating point type" and its siblings, and 9.7.14.5.15 ldmatrix).

A warp's 32 lanes hold the fragments in vector registers, so one mma is: for each element
d_i of the D fragment (a vector over the lanes, lane l holding D[row(i, l)][col(i, l)]) and
each k, the A and B values that lane needs, fetched from the lane that holds them by one
constant shuffle of the fragment element's vector, and one vector FMA. The accumulation
order is fixed: C first, then k = 0, 1, ..., K-1, each product added with one fused
multiply-add rounded to f32 (f64 for m8n8k4); a f16 D is that f32 sum rounded once more to
f16. Products of f16, bf16 and tf32 inputs are exact in f32. Integer forms (s8/u8 -> s32)
are exact, wrapping modulo 2^32 as PTX's mma without .satfinite does.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I16, I32, I64, PTR
from ptxport.codegen.ops.data import state_space
from ptxport.codegen.targets.cpu.gang.checks import check_access, check_shared32, lane_addresses
from ptxport.codegen.targets.cpu.gang.control import converge
from ptxport.codegen.targets.cpu.gang.lanes import DEADLOCK, FULL, W, declare, vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.errors import InternalError
from ptxport.ir import nodes as ir

__all__ = ["GANG_MMA_FORMS", "concat", "fragment_elements", "fragment_layout", "fragment_owner",
           "full_warp", "gathered_lanes", "ldmatrix_refusal", "lower_ldmatrix", "lower_mma",
           "mma_refusal", "write_fragments"]

F32, F64, HALF = ll.FloatType(), ll.DoubleType(), ll.HalfType()
_INTS = ("s8", "u8")

# (shape, d, a, b, c) the gang computes; mma.row.col only (the only layout of these shapes
# but m8n8k4 with f16, which is not here).
GANG_MMA_FORMS = {
    (shape, d, a, a, c)
    for shape in ("m16n8k16", "m16n8k8") for a in ("f16", "bf16")
    for d, c in (("f32", "f32"), ("f16", "f16"))
    if a == "f16" or d == "f32"
} | {("m16n8k8", "f32", "tf32", "tf32", "f32"), ("m16n8k4", "f32", "tf32", "tf32", "f32"),
     ("m8n8k4", "f64", "f64", "f64", "f64")} | {
    (shape, "s32", a, b, "s32") for shape in ("m16n8k32", "m16n8k16") for a in _INTS
    for b in _INTS}


def mma_refusal(inst: ir.Instruction) -> str | None:
    """Why the gang does not lower this mma (None: it does)."""
    spec = inst.spec
    form = (spec.get("shape"),) + tuple(spec.types)
    layouts = spec.get("layout") or ()
    layouts = (layouts,) if isinstance(layouts, str) else tuple(layouts)
    if form not in GANG_MMA_FORMS or layouts != ("row", "col") or any(
            spec.get(g) for g in ("sp", "kind", "block_scale", "satfinite", "bitop")):
        return f"{spec.text}: this mma form"
    if inst.guard is not None:
        return f"{spec.text}: a guarded warp operation"
    return None


def ldmatrix_refusal(inst: ir.Instruction) -> str | None:
    spec = inst.spec
    if spec.get("shape") != "m8n8" or spec.types != ("b16",) or state_space(inst) != "shared":
        return f"{spec.text}: this ldmatrix form (the gang loads .m8n8.shared.b16)"
    if inst.guard is not None:
        return f"{spec.text}: a guarded warp operation"
    return None


# --- fragment layouts -------------------------------------------------------------------------

def fragment_layout(shape: str, kind: str) -> tuple:
    """(M, N, K, a, b, cd): a, b and cd map (element index e, groupID g, threadID_in_group q)
    to the (row, column) of A (M x K), B (K x N) and C/D (M x N) that the element holds."""
    if shape == "m8n8k4":
        return (8, 8, 4, lambda e, g, q: (g, q), lambda e, g, q: (q, g),
                lambda e, g, q: (g, 2 * q + e))

    def cd(e, g, q):
        return g + 8 * (e >> 1), 2 * q + (e & 1)
    k = int(shape.split("k")[1])
    if kind == "tf32" and k == 4:
        def a(e, g, q):
            return g + 8 * e, q

        def b(e, g, q):
            return q, g
    elif kind in _INTS and k == 16:
        def a(e, g, q):
            return g + 8 * (e >> 2), 4 * q + (e & 3)

        def b(e, g, q):
            return 4 * q + e, g
    elif kind == "tf32":
        def a(e, g, q):
            return g + 8 * (e & 1), q + 4 * (e >> 1)

        def b(e, g, q):
            return q + 4 * e, g
    elif kind in _INTS:
        def a(e, g, q):
            return g + 8 * ((e >> 2) & 1), 4 * q + (e & 3) + 16 * (e >> 3)

        def b(e, g, q):
            return 4 * q + (e & 3) + 16 * (e >> 2), g
    else:
        def a(e, g, q):
            return g + 8 * ((e >> 1) & 1), 2 * q + (e & 1) + 8 * (e >> 2)

        def b(e, g, q):
            return 2 * q + (e & 1) + 8 * (e >> 1), g
    return 16, 8, k, a, b, cd


def _bits(kind: str) -> int:
    return {"f16": 16, "bf16": 16, "s8": 8, "u8": 8, "f64": 64}.get(kind, 32)


def fragment_elements(fl: GangLowering, operand, kind: str, count: int, inst) -> list:
    """The operand's `count` fragment elements as vectors of the lanes' values in the
    computing type (f32, f64 or i32), element 0 in the low bits of the first register."""
    b = fl.b
    registers = operand.elements if isinstance(operand, ir.VectorValue) else (operand,)
    bits = _bits(kind)
    per = max(32 // bits, 1)
    if len(registers) * per != count:
        raise fl.unsupported(inst, f"mma operand needs {count // per} registers")
    out = []
    for register in registers:
        if bits == 64:
            out.append(ll.IRBuilder.bitcast(b, fl.read_lanes(register, "b64"), vec(F64)))
            continue
        word = fl.as_int(fl.read_lanes(register, "b32"))
        for part in range(per):
            out.append(_element(b, word, kind, part, bits))
    return out


def _element(b, word, kind: str, part: int, bits: int):
    if kind in ("f32", "tf32", "s32"):
        if kind == "s32":
            return word
        if kind == "tf32":      # the 10-bit mantissa of tf32: the low 13 bits are not read
            word = ll.IRBuilder.and_(b, word, b.splat(I32(0xFFFFE000)))
        return ll.IRBuilder.bitcast(b, word, vec(F32))
    if kind == "bf16":
        shifted = ll.IRBuilder.shl(b, word, b.splat(I32(16))) if part == 0 else \
            ll.IRBuilder.and_(b, word, b.splat(I32(0xFFFF0000)))
        return ll.IRBuilder.bitcast(b, shifted, vec(F32))
    shifted = ll.IRBuilder.lshr(b, word, b.splat(I32(bits * part))) if part else word
    small = ll.IRBuilder.trunc(b, shifted, vec(ll.IntType(bits)))
    if kind == "f16":
        return ll.IRBuilder.fpext(b, ll.IRBuilder.bitcast(b, small, vec(HALF)), vec(F32))
    extend = ll.IRBuilder.sext if kind == "s8" else ll.IRBuilder.zext
    return extend(b, small, vec(I32))


def gathered_lanes(fl: GangLowering, elements: list, where, cache: dict):
    """A vector whose lane l holds the fragment element that `where(l)` names as (element,
    source lane): one constant shuffle per element index involved, joined by selects."""
    sources = [where(lane) for lane in range(W)]
    key = (id(elements), tuple(sources))
    if key in cache:
        return cache[key]
    b = fl.b
    result = None
    for e in sorted({e for e, _ in sources}):
        indices = ll.Constant(vec(I32), [lane if x == e else 0 for x, lane in sources])
        value = elements[e]
        moved = ll.IRBuilder.shuffle_vector(b, value, ll.Constant(value.type, None), indices)
        moved.type = value.type
        if result is None:
            result = moved
        else:
            pick = ll.Constant(vec(ll.IntType(1)), [int(x == e) for x, _ in sources])
            result = ll.IRBuilder.select(b, pick, moved, result)
    cache[key] = result
    return result


def full_warp(fl: GangLowering, inst: ir.Instruction) -> None:
    """mma and ldmatrix .sync.aligned: every lane of the warp executes the same one (PTX
    leaves anything else undefined). Lanes wait for the others; lanes that have exited
    leave the rest waiting forever, as a GPU would hang. In a converged block
    (segment.inline_warp_ops) the live lanes are all here together: none waits."""
    b = fl.b
    if id(inst) not in fl.inline_ops:
        converge(fl, inst, I32(FULL))
    here = fl.bits(fl.mask)
    bad = fl.llfn.append_basic_block("warp_not_full")
    go_on = fl.llfn.append_basic_block("warp_full")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", here, I32(FULL)), bad, go_on)
    b.position_at_end(bad)
    b.store(fl.cttz(here), fl.scratch_lane)
    b.ret(I32(DEADLOCK))
    b.position_at_end(go_on)


def lower_mma(fl: GangLowering, inst: ir.Instruction) -> None:
    """mma.sync.aligned.shape.row.col.d.a.b.c d, a, b, c (PTX ISA 9.7.14.5.14): D = A * B + C
    for the warp, per the module docstring."""
    full_warp(fl, inst)
    b = fl.b
    shape = inst.spec.get("shape")
    d_kind, a_kind, b_kind, c_kind = inst.spec.types
    m, n, k, a_at, b_at, cd_at = fragment_layout(shape, a_kind)
    d_op, a_op, b_op, c_op = inst.operands
    cv = fragment_elements(fl, c_op, c_kind, m * n // W, inst)
    if d_kind == "s32" or m != 16:
        results = _lane_products(fl, inst, cv)
    else:
        a_rows = _operand_buffer(fl, inst, a_op, a_kind, "a", lambda: _a_rows(
            fl, fragment_elements(fl, a_op, a_kind, m * k // W, inst),
            fragment_owner(a_at, m * k // W), k, cd_at))
        b_columns = _operand_buffer(fl, inst, b_op, b_kind, "b", lambda: _b_columns(
            fl, fragment_elements(fl, b_op, b_kind, k * n // W, inst),
            fragment_owner(b_at, k * n // W), k))
        fma = declare(fl.llfn.module, f"llvm.fma.v{W}f32", cv[0].type, [cv[0].type] * 3)
        quad = ll.VectorType(F32, 4)
        where = {jk: at for at, jk in enumerate(_b_order(fragment_owner(b_at, k * n // W), k))}
        results = []
        for i, acc in enumerate(cv):
            for kk in range(k):
                x = b.load(_slot(b, a_rows, (i >> 1) * k + kk, W), typ=vec(F32), align=64)
                y = b.load(_slot(b, b_columns, where[(i & 1, kk)], 4), typ=quad, align=16)
                y = ll.IRBuilder.shuffle_vector(b, y, ll.Constant(quad, None), ll.Constant(
                    ll.VectorType(I32, W), [lane & 3 for lane in range(W)]))
                acc = ll.IRBuilder.call(b, fma, [x, y, acc])
            results.append(acc)
    write_fragments(fl, d_op, d_kind, results, inst)


def _lane_products(fl: GangLowering, inst: ir.Instruction, cv: list) -> list:
    """D's elements, each lane's A and B values gathered by constant shuffles of the
    fragments' elements, then multiplied and added one k after the other."""
    b = fl.b
    shape = inst.spec.get("shape")
    d_kind, a_kind, b_kind, _ = inst.spec.types
    m, n, k, a_at, b_at, cd_at = fragment_layout(shape, a_kind)
    _, a_op, b_op, _ = inst.operands
    av = fragment_elements(fl, a_op, a_kind, m * k // W, inst)
    bv = fragment_elements(fl, b_op, b_kind, k * n // W, inst)
    a_from = fragment_owner(a_at, m * k // W)
    b_from = fragment_owner(b_at, k * n // W)
    integer = d_kind == "s32"
    element = cv[0].type
    if not integer:
        width = 64 if element.element == F64 else 32
        fma = declare(fl.llfn.module, f"llvm.fma.v{W}f{width}", element, [element] * 3)
    cache: dict = {}
    results = []
    for i, acc in enumerate(cv):
        for kk in range(k):
            x = gathered_lanes(fl, av, lambda lane, i=i, kk=kk: a_from[
                (cd_at(i, lane >> 2, lane & 3)[0], kk)], cache)
            y = gathered_lanes(fl, bv, lambda lane, i=i, kk=kk: b_from[
                (kk, cd_at(i, lane >> 2, lane & 3)[1])], cache)
            if integer:
                acc = ll.IRBuilder.add(b, acc, ll.IRBuilder.mul(b, x, y))
            else:
                acc = ll.IRBuilder.call(b, fma, [x, y, acc])
        results.append(acc)
    return results


# --- the operands of m16n8 float mmas, laid out for D's lanes in stack memory ------------------
#
# Lane (g, q) of D's element i (i = 2h + j) holds D[g + 8h][2q + j]: at each k it needs
# A[g + 8h][k] (one value per group of 4 lanes, "A's row value") and B[k][2q + j] (4 values,
# the same in every group). The m16n8 mmas of a tl.dot share each A fragment with several
# B fragments and each B with several A, so these are made once per fragment (per segment,
# until its registers are written) and kept in stack memory: A's as 32-lane vectors (2 x 16
# x 128 bytes), B's as its 4 values per (j, k) (2 x 16 x 16 bytes), which a vector
# broadcast load repeats over the groups. Each FMA then reads its operands from memory
# (no lane shuffles), which keeps them out of the registers D needs between the mmas.

def _operand_buffer(fl: GangLowering, inst, operand, kind: str, which: str, make):
    """The stack buffer of `operand`'s fragment laid out for D (make(): the vectors to
    store, one after another), from an earlier mma of this segment when it read the same
    registers (not written since: GangLowering.write forgets it), else made and stored."""
    registers = operand.elements if isinstance(operand, ir.VectorValue) else (operand,)
    key = (which, kind, inst.spec.get("shape"), tuple(id(r) for r in registers))
    buffer = fl.mma_operands.get(key)
    if buffer is not None:
        return buffer
    b = fl.b
    values = make()
    size = sum(v.type.count for v in values) * 4
    # the n-th buffer a segment makes: stack memory made once, used again by later segments
    slot = (fl.mma_made, size)
    fl.mma_made += 1
    if slot not in fl.mma_buffers:
        fl.mma_buffers[slot] = fl.entry_alloca(ll.ArrayType(I8, size), f"mma_{which}", 64)
    buffer = fl.mma_buffers[slot]
    at = 0
    for v in values:
        b.store(v, b.gep(buffer, [I64(at)], source_etype=I8), align=16)
        at += v.type.count * 4
    # the buffer's loads stay loads (of memory the asm may have changed): LLVM would
    # otherwise forward the stored vectors to them and keep them all in registers
    ll.IRBuilder.call(b, ll.InlineAsm(ll.FunctionType(ll.VoidType(), [PTR]), "", "r,~{memory}",
                                      side_effect=True), [buffer])
    fl.mma_operands[key] = buffer
    return buffer


def _slot(b, buffer, index: int, count: int):
    return b.gep(buffer, [I64(index * count * 4)], source_etype=I8)


def _a_rows(fl: GangLowering, av: list, a_from: dict, k: int, cd_at) -> list:
    """For h = 0, 1 and each k: the 32-lane vector whose lane (g, q) holds A[g + 8h][k]."""
    cache: dict = {}
    return [gathered_lanes(fl, av, lambda lane, h=h, kk=kk: a_from[
        (cd_at(2 * h, lane >> 2, lane & 3)[0], kk)], cache) for h in range(2)
        for kk in range(k)]


def _b_order(b_from: dict, k: int) -> list:
    """The (j, k) of B's 4-vectors in their buffer's order: grouped by the fragment element
    that holds them (each 4-vector lies in one: its lanes 4 (2q + j) + k % 4 or so), four
    to a 16-vector, so that one shuffle of one element vector makes four."""
    return sorted(((j, kk) for j in range(2) for kk in range(k)),
                  key=lambda jk: (b_from[(jk[1], jk[0])][0], jk))


def _b_columns(fl: GangLowering, bv: list, b_from: dict, k: int) -> list:
    """For j = 0, 1 and each k: B[k][2q + j] for q = 0..3 (a 4-vector), in _b_order, four
    to a vector."""
    b = fl.b
    order = _b_order(b_from, k)
    out = []
    for at in range(0, len(order), 4):
        sources = [b_from[(kk, 2 * q + j)] for j, kk in order[at:at + 4] for q in range(4)]
        elements = {e for e, _ in sources}
        if len(elements) != 1:
            raise InternalError("four of an m16n8 B fragment's columns in two registers")
        value = bv[elements.pop()]
        out.append(ll.IRBuilder.shuffle_vector(b, value, ll.Constant(value.type, None),
                                               ll.Constant(ll.VectorType(I32, 16),
                                                           [lane for _, lane in sources])))
    return out


def fragment_owner(at, count: int) -> dict:
    """(row, column) -> (element index, lane) of the fragment that holds it."""
    return {at(e, lane >> 2, lane & 3): (e, lane) for e in range(count) for lane in range(W)}


def write_fragments(fl: GangLowering, d_op, d_kind: str, results: list, inst) -> None:
    b = fl.b
    registers = d_op.elements if isinstance(d_op, ir.VectorValue) else (d_op,)
    if d_kind == "f16":
        if len(registers) * 2 != len(results):
            raise fl.unsupported(inst, f"mma operand d needs {len(results) // 2} registers")
        halves = [ll.IRBuilder.zext(b, ll.IRBuilder.bitcast(
            b, ll.IRBuilder.fptrunc(b, r, vec(HALF)), vec(I16)), vec(I32)) for r in results]
        for j, register in enumerate(registers):
            high = ll.IRBuilder.shl(b, halves[2 * j + 1], b.splat(I32(16)))
            fl.write(register, ll.IRBuilder.or_(b, halves[2 * j], high), "b32")
        return
    if len(registers) != len(results):
        raise fl.unsupported(inst, f"mma operand d needs {len(results)} registers")
    for register, value in zip(registers, results, strict=True):
        if d_kind == "f64":
            fl.write(register, ll.IRBuilder.bitcast(b, value, vec(I64)), "b64")
        elif d_kind == "f32":
            fl.write(register, ll.IRBuilder.bitcast(b, value, vec(I32)), "b32")
        else:
            fl.write(register, value, "b32")


# --- ldmatrix ---------------------------------------------------------------------------------

def lower_ldmatrix(fl: GangLowering, inst: ir.Instruction) -> None:
    """ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 r, [p] (PTX ISA 9.7.14.5.15): lane
    8j + r gives the address of row r (16 bytes) of matrix j; each lane l receives, in its
    register j, the elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of matrix j (of its
    transpose with .trans), the lower column in the lower half. The other lanes' addresses
    are not read, as PTX ignores them."""
    full_warp(fl, inst)
    b = fl.b
    count = int(inst.spec.get("num")[1])
    dest, address = inst.operands
    outputs = dest.elements if isinstance(dest, ir.VectorValue) else (dest,)
    if len(outputs) != count:
        raise fl.unsupported(inst, f"ldmatrix .x{count} needs {count} destination registers")
    host, offsets = lane_addresses(fl, address, "shared")
    mask = fl.mask
    fl.mask = ll.Constant(mask.type, [int(lane < 8 * count) for lane in range(W)])
    if host is None:
        check_shared32(fl, offsets, 16, False)
        window = ll.IRBuilder.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
        host = ll.IRBuilder.add(b, b.splat(window), ll.IRBuilder.zext(b, offsets, vec(I64)))
    else:
        check_access(fl, host, offsets, 16, False)
    fl.mask = mask
    row_type = ll.VectorType(I16, 8)
    transposed = inst.spec.has("trans")
    for j, register in enumerate(outputs):
        rows = []
        for r in range(8):
            at = ll.IRBuilder.extract_element(b, host, I32(8 * j + r))
            load = ll.IRBuilder.load(b, ll.IRBuilder.inttoptr(b, at, PTR), typ=row_type)
            load.align = 2
            rows.append(load)
        matrix = concat(b, rows)                    # 64 halves, row after row
        if transposed:    # lane l, half h: element (2 (l % 4) + h, l / 4)
            order = [(2 * (x // 2 % 4) + x % 2) * 8 + x // 8 for x in range(2 * W)]
            matrix = ll.IRBuilder.shuffle_vector(b, matrix, ll.Constant(matrix.type, None),
                                                 ll.Constant(ll.VectorType(I32, 2 * W), order))
        fl.write(register, ll.IRBuilder.bitcast(b, matrix, vec(I32)), "b32")


def concat(b, parts: list):
    """One vector of the parts' elements in order (each part the same type)."""
    while len(parts) > 1:
        joined = []
        for x, y in zip(parts[::2], parts[1::2], strict=True):
            size = x.type.count
            joined.append(ll.IRBuilder.shuffle_vector(
                b, x, y, ll.Constant(ll.VectorType(I32, 2 * size), list(range(2 * size)))))
        parts = joined
    return parts[0]


