"""Warpgroup matrix operations on a gang's lanes: wgmma.mma_async and its fence, commit and
wait (PTX ISA 9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate").

A warpgroup's D (64 x N) is split by rows among its 4 warps: warp w of the group (w = %warpid
mod 4 on ptxport's CPU: the CTA's 4 consecutive warps from a multiple of 4) holds rows
16 w .. 16 w + 15 in its registers, in the layout of mma.m16n8's C fragment repeated over the
N / 8 column blocks (register i of lane l, groupID g = l / 4, q = l % 4: row g + 8 ((i / 2) % 2),
column 8 (i / 4) + 2 q + i % 2; a .f16 D packs registers 2j and 2j + 1 into one). So each warp
computes its own rows with no other warp's help: A's rows 16 w .. 16 w + 15 (from shared memory
through the descriptor, or from its registers in mma.m16n8k16's A layout, m16n8k8's for tf32)
times all of B. The operands in shared memory were written by the CTA's threads before a
fence.proxy.async and a barrier (PTX requires both for the async proxy to see them), so every
warp reads the same data whenever it reaches its wgmma; there is nothing to wait for.

The mma is done when the instruction is: wgmma.fence, commit_group and wait_group have nothing
left to order or wait for, and (one memory proxy on the CPU) neither has fence.proxy.async.

Shared memory through a matrix descriptor (PTX ISA 9.7.15.5.1, "Matrix Descriptor Format"):
bits 0-13 the start address >> 4, 16-29 the leading dimension byte offset (LBO) >> 4, 32-45 the
stride dimension byte offset (SBO) >> 4, 62-63 the swizzle mode (0 none, 1 128-byte, 2 64-byte,
3 32-byte). Operands are read in 16-byte chunks (8 16-bit or 4 32-bit elements). With a
swizzle of S bytes (W = S / 16 chunks a row of the pattern; W = 1 without swizzling):
- K-major (imm-trans 0): the chunk of MN index r and K chunk c lies at start + (r % 8) * 16 W
  + (r / 8) * SBO + c * (16 if swizzled else LBO);
- MN-major (imm-trans 1, 16-bit types only): the chunk of MN elements 8u .. 8u + 7 at K index k
  lies at start + (u % W) * 16 + (u / W) * P + (k % 8) * 16 W + (k / 8) * Q, where (P, Q) =
  (LBO, SBO) when swizzled and (SBO, LBO) without;
and a swizzle XORs address bits 4-6 (128B; 4-5 for 64B, 4 for 32B) with bits 7-9 (7-8, 7) of
the shared address. The pattern is taken from the address itself, which is what the manual's
matrix base offset (bits 49-51) restores for a start address not aligned to the pattern's
repeat (base offset = (address >> 7) & 7): that field is not read. Every chunk is checked
against the shared window. The descriptor is lane 0's (PTX requires the same in every thread of
the warpgroup).

Arithmetic: as gang/mma.py's mma, in f32: D (or +0 where scale-d is false) first, then one fused
multiply-add per k = 0 .. K-1; f16, bf16 and tf32 (its 13 low mantissa bits dropped) products are
exact in f32; imm-scale-a/b = -1 negates A/B; a .f16 D is rounded once at the end.
D's N / 8 column blocks are the turns of one LLVM loop (a block's chunks of B are read in its
turn; the accumulators wait in stack memory), so a wgmma's code does not grow with N.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I16, I32, I64
from ptxport.codegen.targets.cpu.gang.checks import fault
from ptxport.codegen.targets.cpu.gang.lanes import W, declare, vec
from ptxport.codegen.targets.cpu.gang.mma import (
    concat,
    fragment_elements,
    fragment_layout,
    fragment_owner,
    full_warp,
    gathered_lanes,
    write_fragments,
)
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.wgmma import WgmmaForm, wgmma_form

__all__ = ["GANG_WGMMA_TYPES", "lower_wgmma", "wgmma_refusal"]

F32, HALF = ll.FloatType(), ll.HalfType()
L = ll.IRBuilder          # plain LLVM operations on short vectors (GangBuilder splats to lanes)

# (d, a, b) the gang computes
GANG_WGMMA_TYPES = {("f32", "f16", "f16"), ("f16", "f16", "f16"), ("f32", "bf16", "bf16"),
                    ("f32", "tf32", "tf32")}


def wgmma_refusal(inst: ir.Instruction) -> str | None:
    """Why the gang does not lower this wgmma (None: it does)."""
    spec = inst.spec
    if inst.guard is not None:
        return f"{spec.text}: a guarded warpgroup operation"
    if spec.get("op") != "mma_async":
        return None
    try:
        form = wgmma_form(inst)
    except ValueError as e:
        return f"{spec.text}: {e}"
    if (form.d_type, form.a_type, form.b_type) not in GANG_WGMMA_TYPES:
        return f"{spec.text}: this wgmma form (the gang computes f16, bf16 and tf32 inputs)"
    return None


def lower_wgmma(fl: GangLowering, inst: ir.Instruction) -> None:
    """wgmma.mma_async: this warp's 16 rows of D, per the module docstring; the fence,
    commit_group and wait_group have nothing to do."""
    if inst.spec.get("op") != "mma_async":
        return
    full_warp(fl, inst)
    form = wgmma_form(inst)
    b = fl.b
    rank = L.and_(b, fl.warp_number, I32(3))
    a_values = _a_lanes(fl, form, rank, inst)
    accumulators = fragment_elements(fl, form.d, form.d_type, form.n // 2, inst)
    keep = fl.read_lanes(form.scale_d, "pred")
    zero = ll.Constant(vec(F32), [0.0] * W)
    slot = _accumulator_slot(fl, len(accumulators))
    for i, acc in enumerate(accumulators):
        _store_accumulator(fl, L.select(b, keep, acc, zero), slot, I32(i))
    _n_blocks(fl, form, a_values, slot)
    results = [_load_accumulator(fl, slot, I32(i)) for i in range(len(accumulators))]
    write_fragments(fl, form.d, form.d_type, results, inst)


def _n_blocks(fl: GangLowering, form: WgmmaForm, a_values: list, slot) -> None:
    """D's N / 8 column blocks, one a turn of a loop (not one copy each: at N = 256 the
    copies were 145k lines of IR to compile): block j reads its part of B and updates its
    4 accumulators of each lane (i = 4 j + 2 h + p) in `slot`."""
    b = fl.b
    desc = _descriptor(fl, form.b)
    fma = declare(fl.llfn.module, f"llvm.fma.v{W}f32", vec(F32), [vec(F32)] * 3)
    before = b.block
    turn = fl.llfn.append_basic_block("wgmma_block")
    done = fl.llfn.append_basic_block("wgmma_blocks_done")
    L.branch(b, turn)
    b.position_at_end(turn)
    j = L.phi(b, I32)
    j.add_incoming(I32(0), before)
    b_values = _b_lanes(fl, form, desc, j)
    for h in (0, 1):
        for p in (0, 1):
            i = L.add(b, L.shl(b, j, I32(2)), I32(2 * h + p))
            acc = _load_accumulator(fl, slot, i)
            for k in range(form.k):
                acc = L.call(b, fma, [a_values[h][k], b_values[p][k], acc])
            _store_accumulator(fl, acc, slot, i)
    following = L.add(b, j, I32(1))
    j.add_incoming(following, b.block)
    L.cbranch(b, L.icmp_unsigned(b, "<", following, I32(form.n // 8)), turn, done)
    b.position_at_end(done)


def _accumulator_slot(fl: GangLowering, count: int):
    """Stack memory for `count` accumulators of the lanes, one per function and count (the
    kernel's wgmmas of one shape share it)."""
    slots = fl.wgmma_slots
    if count not in slots:
        slots[count] = fl.entry_alloca(ll.ArrayType(vec(F32), count), f"wgmma_d{count}", 64)
    return slots[count]


def _load_accumulator(fl: GangLowering, slot, index):
    value = L.load(fl.b, _element_at(fl, slot, index), typ=vec(F32))
    value.align = 64
    return value


def _store_accumulator(fl: GangLowering, value, slot, index) -> None:
    L.store(fl.b, value, _element_at(fl, slot, index)).align = 64


def _element_at(fl: GangLowering, slot, index):
    return L.gep(fl.b, slot, [index], source_etype=vec(F32))


# --- A and B as vectors of the lanes' values --------------------------------------------------

def _a_lanes(fl: GangLowering, form: WgmmaForm, rank, inst) -> list:
    """[h][k]: the vector whose lane l holds A[16 rank + l / 4 + 8 h][k] (as f32)."""
    b = fl.b
    per = 16 // _element_bytes(form.a_type)         # elements of a chunk
    if form.a_in_registers:
        shape = "m16n8k8" if form.a_type == "tf32" else "m16n8k16"
        count = 16 * form.k // W
        values = fragment_elements(fl, form.a, form.a_type, count, inst)
        owner = fragment_owner(fragment_layout(shape, form.a_type)[3], count)
        cache: dict = {}
        out = [[gathered_lanes(fl, values, lambda lane, h=h, k=k: owner[
            ((lane >> 2) + 8 * h, k)], cache) for k in range(form.k)] for h in (0, 1)]
    else:
        desc = _descriptor(fl, form.a)
        if form.trans_a:      # chunk (u, k): A[8u .. 8u + 7][k], u = 2 rank, 2 rank + 1
            coords = [(u, k) for u in (0, 1) for k in range(form.k)]
            first = L.mul(b, rank, I32(2))
            chunks = _load_chunks(fl, desc, False, coords, first, form.a_type)
            out = [[_spread(b, chunks[(h, k)], [g for g in _groups()])
                    for k in range(form.k)] for h in (0, 1)]
        else:                 # chunk (r, c): A[r][per c .. per c + per - 1], r = 16 rank + ..
            coords = [(r, c) for r in range(16) for c in (0, 1)]
            first = L.mul(b, rank, I32(16))
            chunks = _load_chunks(fl, desc, True, coords, first, form.a_type)
            out = []
            for h in (0, 1):
                rows = [concat(b, [chunks[(8 * h + g, c)] for g in range(8)]) for c in (0, 1)]
                out.append([_spread(b, rows[k // per], [g * per + k % per for g in _groups()])
                            for k in range(form.k)])
    if form.scale_a < 0:
        out = [[L.fneg(b, v) for v in row] for row in out]
    return out


def _b_lanes(fl: GangLowering, form: WgmmaForm, desc: dict, j) -> list:
    """[p][k]: the vector whose lane l holds B[k][8 j + 2 (l % 4) + p] (as f32), for the
    column block j (an i32 value)."""
    b = fl.b
    per = 16 // _element_bytes(form.b_type)
    quads = [lane & 3 for lane in range(W)]
    if form.trans_b:          # chunk (u, k): B[k][8u .. 8u + 7], u = j
        coords = [(0, k) for k in range(form.k)]
        chunks = _load_chunks(fl, desc, False, coords, j, form.b_type)
        out = [[_spread(b, chunks[(0, k)], [2 * q + p for q in quads]) for k in range(form.k)]
               for p in (0, 1)]
    else:                     # chunk (n, c): B[per c .. per c + per - 1][n], n = 8 j + ..
        coords = [(n, c) for n in range(8) for c in (0, 1)]
        chunks = _load_chunks(fl, desc, True, coords, L.shl(b, j, I32(3)), form.b_type)
        out = []
        for p in (0, 1):
            columns = [concat(b, [chunks[(2 * q + p, c)] for q in range(4)]) for c in (0, 1)]
            out.append([_spread(b, columns[k // per], [q * per + k % per for q in quads])
                        for k in range(form.k)])
    if form.scale_b < 0:
        out = [[L.fneg(b, v) for v in row] for row in out]
    return out


def _groups() -> list[int]:
    return [lane >> 2 for lane in range(W)]


def _spread(b, value, indices: list[int]):
    """A vector of the lanes: lane l takes element indices[l] of `value`."""
    moved = L.shuffle_vector(b, value, ll.Constant(value.type, None),
                             ll.Constant(ll.VectorType(I32, W), indices))
    moved.type = vec(value.type.element)
    return moved


# --- shared memory through a descriptor -------------------------------------------------------

def _element_bytes(kind: str) -> int:
    return 2 if kind in ("f16", "bf16") else 4


def _descriptor(fl: GangLowering, operand) -> dict:
    """The descriptor's fields (scalars, i32): start, lbo, sbo in bytes; w16 (bytes of a row
    of the swizzle pattern, 16 W), wmask (W - 1), wshift (log2 W), swizzle (the address bits
    XORed: (W - 1) << 4), swizzled (i1)."""
    b = fl.b
    value = fl.read(operand, "b64")
    if isinstance(value.type, ll.VectorType):
        value = L.extract_element(b, value, I32(0))

    def field(shift: int):
        bits = L.and_(b, L.lshr(b, value, I64(shift)), I64(0x3FFF))
        return L.shl(b, L.trunc(b, bits, I32), I32(4))

    mode = L.trunc(b, L.lshr(b, value, I64(62)), I32)
    swizzled = L.icmp_unsigned(b, "!=", mode, I32(0))
    wshift = L.select(b, swizzled, L.sub(b, I32(4), mode), I32(0))
    wide = L.shl(b, I32(1), wshift)
    wmask = L.sub(b, wide, I32(1))
    return {"start": field(0), "lbo": field(16), "sbo": field(32), "swizzled": swizzled,
            "w16": L.shl(b, wide, I32(4)), "wmask": wmask, "wshift": wshift,
            "swizzle": L.shl(b, wmask, I32(4))}


def _load_chunks(fl: GangLowering, desc: dict, k_major: bool, coords: list, first, kind: str
                 ) -> dict:
    """(x, y) -> the 16-byte chunk at those coordinates (module docstring: x the MN index r
    or chunk u, offset by `first`; y the K chunk c or index k), as a vector of f32."""
    b = fl.b
    count = len(coords)
    vt = ll.VectorType(I32, count)

    def splat(v):
        return L.shuffle_vector(b, L.insert_element(b, ll.Constant(vt, None), v, I32(0)),
                                ll.Constant(vt, None), ll.Constant(vt, [0] * count))

    def const(values):
        return ll.Constant(vt, list(values))

    x = L.add(b, splat(first), const(c[0] for c in coords))
    y = const(c[1] for c in coords)
    start = splat(desc["start"])
    if k_major:
        step = L.select(b, desc["swizzled"], I32(16), desc["lbo"])
        terms = [(L.and_(b, x, const([7] * count)), desc["w16"]),
                 (L.lshr(b, x, const([3] * count)), desc["sbo"]), (y, step)]
    else:
        p = L.select(b, desc["swizzled"], desc["lbo"], desc["sbo"])
        q = L.select(b, desc["swizzled"], desc["sbo"], desc["lbo"])
        terms = [(L.and_(b, x, splat(desc["wmask"])), I32(16)),
                 (L.lshr(b, x, splat(desc["wshift"])), p),
                 (L.and_(b, y, const([7] * count)), desc["w16"]),
                 (L.lshr(b, y, const([3] * count)), q)]
    offsets = start
    for index, scale in terms:
        offsets = L.add(b, offsets, L.mul(b, index, splat(scale)))
    offsets = L.xor(b, offsets, L.and_(b, L.lshr(b, offsets, const([3] * count)),
                                       splat(desc["swizzle"])))
    _check_chunks(fl, offsets, count)
    window = fl.target.space_base(fl, "shared")
    size = _element_bytes(kind)
    loaded = ll.VectorType(I16 if size == 2 else I32, 16 // size)
    out = {}
    for i, coord in enumerate(coords):
        at = L.zext(b, L.extract_element(b, offsets, I32(i)), I64)
        pointer = L.gep(b, window, [at], source_etype=ll.IntType(8))
        chunk = L.load(b, pointer, typ=loaded)
        chunk.align = 4
        out[coord] = _as_f32(b, chunk, kind)
    return out


def _as_f32(b, chunk, kind: str):
    count = chunk.type.count
    if kind == "f16":
        return L.fpext(b, L.bitcast(b, chunk, ll.VectorType(HALF, count)),
                       ll.VectorType(F32, count))
    wide = ll.VectorType(I32, count)
    if kind == "bf16":
        bits = L.shl(b, L.zext(b, chunk, wide), ll.Constant(wide, [16] * count))
    else:                # tf32: the 13 low mantissa bits are not read
        bits = L.and_(b, chunk, ll.Constant(wide, [0xFFFFE000] * count))
    return L.bitcast(b, bits, ll.VectorType(F32, count))


def _check_chunks(fl: GangLowering, offsets, count: int) -> None:
    """Every chunk inside the shared window, else the kernel stops with the first bad one's
    address (IllegalAddressError)."""
    b = fl.b
    vt = offsets.type
    limit = fl.target.ctx_field(fl, "total_smem")
    room = L.sub(b, limit, I32(16))
    room_v = L.shuffle_vector(b, L.insert_element(b, ll.Constant(vt, None), room, I32(0)),
                              ll.Constant(vt, None), ll.Constant(vt, [0] * count))
    outside = L.icmp_unsigned(b, ">", offsets, room_v)
    small = L.icmp_unsigned(b, "<", limit, I32(16))
    bits = L.bitcast(b, outside, ll.IntType(count))
    bad_any = L.or_(b, L.icmp_unsigned(b, "!=", bits, ll.Constant(ll.IntType(count), 0)),
                    small)
    bad, ok = fl.llfn.append_basic_block("wgmma_fault"), fl.llfn.append_basic_block(
        "wgmma_inside")
    L.cbranch(b, bad_any, bad, ok)
    b.position_at_end(bad)
    cttz = declare(fl.llfn.module, f"llvm.cttz.i{count}", ll.IntType(count),
                   [ll.IntType(count), ll.IntType(1)])
    first = L.call(b, cttz, [bits, ll.IntType(1)(0)])
    if count != 32:
        first = (L.trunc if count > 32 else L.zext)(b, first, I32)
    first = L.select(b, small, I32(0), first)
    window = L.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
    at = L.extract_element(b, offsets, first)
    fault(fl, I32(0), L.add(b, window, L.zext(b, at, I64)), 16, False)
    b.position_at_end(ok)
