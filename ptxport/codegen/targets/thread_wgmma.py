"""wgmma (PTX ISA 9.7.15) thread by thread: on GPU targets without NVIDIA's warpgroup tensor
cores (AMDGPU, SPIR-V) and on the CPU's thread-by-thread path, each thread computes its own
accumulators.

The layouts are those of the CPU's warp gangs (codegen/targets/cpu/gang/wgmma.py explains the
descriptor and the fragments): thread l of warp w of the warpgroup (w = the CTA's linear warp
index mod 4; g = l / 4, q = l % 4) holds D[16 w + g + 8 ((i / 2) % 2)][8 (i / 4) + 2 q + i % 2]
in its accumulator i. So a thread needs row 16 w + g and row 16 w + g + 8 of A and its N / 4
columns of B: it reads them from shared memory through the descriptors (the same chunk
addresses and swizzle), or, for A in registers, from the lanes of its group that hold them
(mma.m16n8k16's A layout, m16n8k8's for tf32) by the target's lane shuffle (the GPUs; the
CPU's thread-by-thread path has none, and refuses A in registers). The operands in
shared memory were written before a fence.proxy.async and a barrier, as PTX requires, so no
thread waits for another; fence, commit_group and wait_group have nothing to do.

Arithmetic as gpu_mma.py's: D (or +0 where scale-d is false) first, then one f32 fused
multiply-add per k = 0 .. K-1 (f16, bf16 and tf32 products are exact in f32; tf32 drops 13
mantissa bits); imm-scale -1 negates; an f16 D is rounded once at the end.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I16, I32, I64, FunctionLowering
from ptxport.codegen.targets.gpu_wmma import multiply_add, narrow, widen
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES
from ptxport.ir.wgmma import WgmmaForm, wgmma_form

__all__ = ["compute_wgmma", "lower_wgmma"]

F32 = ll.FloatType()
_TYPES = {("f32", "f16", "f16"), ("f16", "f16", "f16"), ("f32", "bf16", "bf16"),
          ("f32", "tf32", "tf32")}


def lower_wgmma(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """wgmma on a GPU target (MATRIX_LOWERINGS of gpu_mma.py): its lane shuffle, and shared
    memory in its address space."""
    def shared(address: ll.Value, size: int) -> ll.Value:
        if "shared" not in fl.narrow_spaces:
            address = fl.b.zext(address, I64)
        return fl.address_in(address, "shared")

    compute_wgmma(fl, inst, fl.target.lane(fl) if _mma(inst) else None, shared,
                  lambda value, lane: fl.target.read_lane(fl, value, lane))


def _mma(inst: ir.Instruction) -> bool:
    return inst.spec.get("op") == "mma_async"


def compute_wgmma(fl: FunctionLowering, inst: ir.Instruction, lane, shared, read_lane) -> None:
    """wgmma.mma_async per the module docstring (the other wgmma instructions do nothing):
    `lane` the thread's lane (i32), `shared(address, size)` the pointer to a shared-memory
    address (i32), `read_lane(value, lane)` a lane's i32 (None: A in registers refused)."""
    if inst.spec.get("op") != "mma_async":
        return
    try:
        form = wgmma_form(inst)
    except ValueError as e:
        raise fl.unsupported(inst, str(e)) from e
    if (form.d_type, form.a_type, form.b_type) not in _TYPES:
        raise fl.unsupported(inst, "this wgmma form (f16, bf16 and tf32 inputs are computed)")
    if form.a_in_registers and read_lane is None:
        raise fl.unsupported(inst, "wgmma with A in registers needs the other lanes' "
                                   "registers: on the CPU it runs only as warp gangs")
    b = fl.b
    g, q = b.lshr(lane, I32(2)), b.and_(lane, I32(3))
    rank = b.and_(b.lshr(_linear_thread(fl), I32(5)), I32(3))
    rows = [b.add(b.add(b.mul(rank, I32(16)), g), I32(8 * h)) for h in (0, 1)]
    columns = [[b.add(b.mul(q, I32(2)), I32(8 * j + p)) for p in (0, 1)]
               for j in range(form.n // 8)]
    a_at = _a_reader(fl, form, lane, rows, shared, read_lane)
    b_desc = _descriptor(fl, form.b)
    keep = fl.read(form.scale_d, "pred")
    words = fl.read_vector(form.d, "b32", form.d_registers)
    if form.d_type == "f16":
        halves = [b.trunc(b.lshr(w, I32(16 * s)), I16) for w in words for s in (0, 1)]
        accumulators = [widen(fl, h, "f16") for h in halves]
    else:
        accumulators = [b.bitcast(w, F32) for w in words]
    accumulators = [b.select(keep, acc, ll.Constant(F32, 0.0)) for acc in accumulators]
    for k in range(form.k):
        a_values = [_scaled(fl, a_at(h, k), form.scale_a) for h in (0, 1)]
        b_values = [[_scaled(fl, _element(fl, shared, b_desc, not form.trans_b, column,
                                          I32(k), form.b_type), form.scale_b)
                     for column in pair] for pair in columns]
        for i, acc in enumerate(accumulators):
            h, j, p = (i >> 1) & 1, i >> 2, i & 1
            accumulators[i] = multiply_add(fl, a_values[h], b_values[j][p], acc)
    if form.d_type == "f16":
        bits = [b.zext(narrow(fl, acc, "f16", False), I32) for acc in accumulators]
        out = [b.or_(bits[2 * r], b.shl(bits[2 * r + 1], I32(16)))
               for r in range(form.d_registers)]
    else:
        out = [b.bitcast(acc, I32) for acc in accumulators]
    fl.write_vector(form.d, out, "b32")


def _linear_thread(fl: FunctionLowering) -> ll.Value:
    """The thread's index in its CTA, x fastest (warps are 32 consecutive of them)."""
    b = fl.b

    def special(name: str, axis: str) -> ll.Value:
        return fl.read(ir.SpecialRegister(name, axis, TYPES["u32"]), "u32")

    y = b.add(special("%tid", "y"), b.mul(special("%ntid", "y"), special("%tid", "z")))
    return b.add(special("%tid", "x"), b.mul(special("%ntid", "x"), y))


def _scaled(fl: FunctionLowering, value: ll.Value, scale: int) -> ll.Value:
    return fl.b.fneg(value) if scale < 0 else value


def _a_reader(fl: FunctionLowering, form: WgmmaForm, lane, rows, shared, read_lane):
    """(h, k) -> A[rows[h]][k] (f32) for this thread."""
    b = fl.b
    if not form.a_in_registers:
        desc = _descriptor(fl, form.a)
        return lambda h, k: _element(fl, shared, desc, not form.trans_a, rows[h], I32(k),
                                     form.a_type)
    words = fl.read_vector(form.a, "b32", 4)
    group = b.and_(lane, I32(~3))

    def read(h: int, k: int) -> ll.Value:
        if form.a_type == "tf32":       # m16n8k8: element h + 2 (k / 4) of lane 4 g + k % 4
            word = read_lane(words[h + 2 * (k >> 2)], b.add(group, I32(k & 3)))
            return widen(fl, word, "tf32")
        # m16n8k16: element (k % 2) + 2 h + 4 (k / 8), in register (that) / 2, of lane
        # 4 g + (k % 8) / 2
        index = (k & 1) + 2 * h + 4 * (k >> 3)
        word = read_lane(words[index >> 1], b.add(group, I32((k & 7) >> 1)))
        half = b.trunc(b.lshr(word, I32(16 * (index & 1))), I16)
        return widen(fl, half, form.a_type)
    return read


# --- shared memory through a descriptor -------------------------------------------------------

def _descriptor(fl: FunctionLowering, operand) -> dict:
    """The descriptor's fields as i32 (gang/wgmma.py's _descriptor)."""
    b = fl.b
    value = fl.read(operand, "b64")

    def field(shift: int) -> ll.Value:
        return b.shl(b.trunc(b.and_(b.lshr(value, I64(shift)), I64(0x3FFF)), I32), I32(4))

    mode = b.trunc(b.lshr(value, I64(62)), I32)
    swizzled = b.icmp_unsigned("!=", mode, I32(0))
    wshift = b.select(swizzled, b.sub(I32(4), mode), I32(0))
    wide = b.shl(I32(1), wshift)
    wmask = b.sub(wide, I32(1))
    return {"start": field(0), "lbo": field(16), "sbo": field(32), "swizzled": swizzled,
            "w16": b.shl(wide, I32(4)), "wmask": wmask, "wshift": wshift,
            "swizzle": b.shl(wmask, I32(4))}


def _element(fl: FunctionLowering, shared, desc: dict, k_major: bool, mn, k, kind: str
             ) -> ll.Value:
    """Element (mn, k) of the operand `desc` describes, as f32."""
    b = fl.b
    size = 2 if kind in ("f16", "bf16") else 4
    per = 16 // size
    if k_major:
        step = b.select(desc["swizzled"], I32(16), desc["lbo"])
        chunk = b.add(b.mul(b.and_(mn, I32(7)), desc["w16"]),
                      b.add(b.mul(b.lshr(mn, I32(3)), desc["sbo"]),
                            b.mul(b.udiv(k, I32(per)), step)))
        within = b.mul(b.urem(k, I32(per)), I32(size))
    else:
        u = b.lshr(mn, I32(3))
        p = b.select(desc["swizzled"], desc["lbo"], desc["sbo"])
        q = b.select(desc["swizzled"], desc["sbo"], desc["lbo"])
        chunk = b.add(b.add(b.mul(b.and_(u, desc["wmask"]), I32(16)),
                            b.mul(b.lshr(u, desc["wshift"]), p)),
                      b.add(b.mul(b.and_(k, I32(7)), desc["w16"]),
                            b.mul(b.lshr(k, I32(3)), q)))
        within = b.mul(b.and_(mn, I32(7)), I32(size))
    address = b.add(desc["start"], chunk)
    address = b.xor(address, b.and_(b.lshr(address, I32(3)), desc["swizzle"]))
    address = b.add(address, within)
    bits = b.load(shared(address, size), typ=ll.IntType(8 * size))
    bits.align = size
    return widen(fl, bits, kind)
