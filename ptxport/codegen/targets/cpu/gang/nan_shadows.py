"""f32 results whose NaN is made canonical where it leaves a run of arithmetic, not at each
operation: warp gangs' *NaN shadows*.

PTX's f32 add, sub, mul, fma, mad, div, ex2, min and max give the canonical NaN (ops/
float_arith.py); LLVM's operations give some NaN. Making each result canonical is a compare
and a select on every operation's path: in a warp scan (`v += __shfl_up_sync(v, d)` under
`lane >= d`, five rounds) that was about half of each round's latency. Inside a segment, a
register of the *lazy* set holds LLVM's raw result instead, and beside it a shadow (one bit
a lane, in a stack slot that LLVM keeps in registers): the lanes whose NaN, if they hold
one, must read as the canonical NaN. Arithmetic sets every lane's bit; selp, mov and
shuffles (constant lanes) carry their sources' bits as they carry the values; where a value
leaves the set (a carrier into a register outside it) its shadowed NaN lanes become the
canonical NaN. A lazy register is read only by instructions that cannot tell NaNs apart
(ir.analysis's NaN-blind readers: arithmetic, min, max, setp) and by such carriers, so no
instruction sees a raw NaN, and a lane whose value came through carriers alone from outside
the set (a loaded NaN that selp passes on) keeps its payload, bit for bit.

A lazy register lives within one segment (it is not live where one starts, so the warp's
frame never holds it), is a vector of the lanes, and every instruction that writes it is
unguarded (so each write is whole, shadow and value together).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32
from ptxport.codegen.targets.cpu.gang.lanes import W, vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.waits import shuffle_sources
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, nan_blind_registers, uses_and_defs

__all__ = ["lazy_registers", "prepare", "before", "after"]

# f32 operations whose NaN result is the canonical NaN and whose lowering keeps LLVM's NaN
# for a register of fl.nan_blind; and those that read an operand without telling NaNs apart
# (ir.analysis._NAN_BLIND_READERS)
_ARITHMETIC = ("add", "sub", "mul", "fma", "mad", "div", "ex2", "min", "max")
_BLIND_READERS = _ARITHMETIC + ("setp",)
_WORDS = ("b32", "f32", "u32", "s32")
CANONICAL_NAN = 0x7FFFFFFF


def _carried(inst: ir.Instruction, constant_of) -> list | None:
    """The operands whose lanes `inst` carries into its destination unchanged (selp's two
    values, mov's source, a shuffle's value when its lanes are known when compiling), or
    None where `inst` is no such carrier."""
    types = tuple(inst.spec.types)
    if inst.guard is not None or len(types) != 1 or types[0] not in _WORDS:
        return None
    if inst.opcode == "selp":
        return list(inst.operands[1:3])
    if inst.opcode == "mov" and isinstance(inst.operands[0], ir.Register) \
            and not isinstance(inst.operands[1], (ir.VectorValue, ir.ListValue)):
        return [inst.operands[1]]
    if inst.opcode == "shfl" and None not in (constant_of(o) for o in inst.operands[2:4]):
        return [inst.operands[1]]
    return None


def _destination(inst: ir.Instruction):
    dest = inst.operands[0]
    return dest.first if isinstance(dest, ir.PairValue) else dest


def lazy_registers(kernel: ir.Function, excluded, constant_of) -> set:
    """The registers of `kernel` that may hold raw NaNs with a shadow: 32-bit, written (at
    least once) only by unguarded f32 arithmetic and carriers (_carried), read only by
    NaN-blind readers and as the carried operands of carriers, and not in `excluded`
    (registers live where a segment starts, uniform ones)."""
    fits: dict = {}
    written = set()
    for inst in kernel.instructions():
        carried = _carried(inst, constant_of)
        arithmetic = inst.opcode in _ARITHMETIC and tuple(inst.spec.types) == ("f32",)
        blind = inst.opcode in _BLIND_READERS and tuple(inst.spec.types) == ("f32",)
        for reg in may_write(inst):
            ok = inst.guard is None and (
                arithmetic or (carried is not None and reg is _destination(inst)))
            fits[reg] = fits.get(reg, True) and ok
            written.add(reg)
        others = [] if carried is None else \
            [o for o in inst.operands[1:] if not any(o is c for c in carried)]
        for reg in uses_and_defs(inst)[0]:
            ok = blind or (carried is not None and any(reg is c for c in carried)
                           and not any(reg is o for o in others))
            fits[reg] = fits.get(reg, True) and ok
    return {reg for reg, ok in fits.items()
            if ok and reg in written and reg.vector is None and reg.type.name in _WORDS
            and reg not in excluded}


def prepare(fl: GangLowering, kernel: ir.Function) -> None:
    """The kernel's lazy registers (fl.lazy) and their shadows' stack slots; their f32
    arithmetic keeps LLVM's NaN (fl.nan_blind). After lowering.py's _frame_registers."""
    fl.lazy = lazy_registers(kernel, fl.crossing | set(fl.uniform), fl.constant_of)
    # (in the registers' order by name: the set's order changes from process to process,
    # and with it the module's text, which keys the compiled code's disk cache)
    fl.shadows = {id(reg): fl.entry_alloca(vec(I1), f"nan_shadow_{reg.name[1:]}")
                  for reg in sorted(fl.lazy, key=lambda r: r.name)}
    fl.nan_blind = nan_blind_registers(kernel) | fl.lazy


def _shadow(fl: GangLowering, operand):
    """The shadow of an operand: its slot's bits for a lazy register, else no lane."""
    if isinstance(operand, ir.Register) and id(operand) in fl.shadows:
        return fl.b.load(fl.shadows[id(operand)], typ=vec(I1))
    return ll.Constant(vec(I1), [I1(0)] * W)


def before(fl: GangLowering, inst: ir.Instruction):
    """What `inst` leaves in its destination's shadow, computed from its operands' shadows
    before it writes (a register may be its own source); None where no shadow is involved."""
    if not fl.lazy:
        return None
    carried = _carried(inst, fl.constant_of)
    dest = _destination(inst) if inst.operands else None
    into = isinstance(dest, ir.Register) and id(dest) in fl.shadows
    if carried is None:
        return ll.Constant(vec(I1), [I1(1)] * W) if into else None
    if not into and not any(id(c) in fl.shadows for c in carried
                            if isinstance(c, ir.Register)):
        return None
    shadows = [_shadow(fl, c) for c in carried]
    if inst.opcode == "selp":
        return fl.b.select(fl.read(inst.operands[3], "pred"), *shadows)
    if inst.opcode == "shfl":
        known = [fl.constant_of(o) for o in inst.operands[2:4]]
        sources, _ = shuffle_sources(inst.spec.get("mode"), np.arange(W, dtype=np.int64),
                                     known[0] & 0x1F, known[1])
        indices = ll.Constant(vec(I32), [I32(int(j)) for j in sources])
        result = ll.IRBuilder.shuffle_vector(fl.b, shadows[0], ll.Constant(vec(I1), None),
                                             indices)
        result.type = vec(I1)
        return result
    return shadows[0]


def after(fl: GangLowering, inst: ir.Instruction, shadow) -> None:
    """Once `inst` has written: its destination's shadow where it is lazy, else (a carrier
    out of the set) its shadowed NaN lanes made the canonical NaN."""
    if shadow is None:
        return
    dest = _destination(inst)
    if id(dest) in fl.shadows:
        fl.b.store(shadow, fl.shadows[id(dest)])
        return
    if not isinstance(dest, ir.Register):      # (a shuffle's value into `_`)
        return
    b = fl.b
    bits = fl.read_lanes(dest, "b32")
    value = b.bitcast(bits, vec(ll.FloatType()))
    nan = ll.IRBuilder.fcmp_unordered(b, "uno", value, value)
    canonical = b.splat(I32(CANONICAL_NAN))
    fl.write(dest, b.select(b.and_(nan, shadow), canonical, bits), "b32")
