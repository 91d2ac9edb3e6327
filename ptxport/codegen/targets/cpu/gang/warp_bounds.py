"""Whether all of a warp's lanes or none hold a predicate, known from two scalars: a `setp`
that orders a register whose lanes hold u + c[i] with aligned offsets (passes/lane_offsets.py:
u a multiple of A, every c[i] in [0, A), so no lane's value wraps) against a value alike in
every lane. The lanes' values then lie between u + min(c) and u + max(c), both reached, and
`t < d` holds in all lanes where u + max(c) < d and in none where u + min(c) >= d.

A tree reduction's or a Blelloch scan's `if (t < d)` after each barrier is such a test: the
warps it leaves idle (most of them, at most levels) then decide with one scalar compare
instead of a vector compare of their rebuilt `threadIdx.x` and a test of its mask
(control.py's branches take these scalars first; the vector test stays for a warp the
bound leaves undecided). Neighbours: state.py keeps what is known per segment
(`warp_bounds`, forgotten where the predicate is written), control.py's lower_bra reads it.

Offsets not known aligned (a tiled GEMM's `k0 + tx < K` and `by * 16 + ty < M`, which
if_convert.py's guards OR together: where every lane passes, the tile's load is the
unguarded one) hold u + c[i] modulo 2^bits only: the lanes then lie between u + min(c)
and u + max(c) where that span does not cross the type's wrap, which is exactly where its
two ends, computed modulo 2^bits, are in order (max(c) - min(c) < 2^(bits-1)); both scalars
are false where they are not. `and`, `or` and `not` of such predicates (or of uniform ones)
carry the scalars on: none of `a or b` where none of either, all of `a and b` where all of
both. (All of `a or b` where all of a or of b, none of `a and b` where none of a or of b,
hold too, but for bounds tests ORed together that is a warp wholly outside the range, which
few are: the branch would test those scalars first, for nothing, in every warp; a tiled
GEMM's tile loop paid 10 instructions a tile for them.)
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, LOWERINGS
from ptxport.codegen.ops.compare import setp
from ptxport.codegen.targets.cpu.gang.full_entries import is_full
from ptxport.codegen.targets.cpu.gang.lanes import is_vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES

__all__ = ["lower_setp", "lower_logic", "branch_bounds"]

# an ordering comparison -> (LLVM predicate, the one with the operands swapped)
_ORDER = {"lt": ("<", ">"), "le": ("<=", ">="), "gt": (">", "<"), "ge": (">=", "<="),
          "lo": ("<", ">"), "ls": ("<=", ">="), "hi": (">", "<"), "hs": (">=", "<=")}
_SIGNED_NAMES = ("lt", "le", "gt", "ge")


def lower_setp(fl: GangLowering, inst: ir.Instruction) -> None:
    """setp as the shared lowering has it; where its predicate's lanes are all true or all
    false exactly when two scalars say so, those scalars are noted for the branches on it."""
    setp(fl, inst)
    bounds = _bounds(fl, inst)
    if bounds is not None:
        fl.warp_bounds[id(inst.operands[0])] = (*bounds, fl.mask)


def branch_bounds(fl: GangLowering, inst: ir.Instruction):
    """(every lane of the mask takes the branch, no lane does) as i1 scalars for a guarded
    `bra` whose predicate lower_setp noted under the same mask, else None. (Neither being
    true says nothing: the lanes' own predicates decide.)"""
    known = fl.warp_bounds.get(id(inst.guard))
    if known is None or known[2] is not fl.mask:
        return None
    every, none = known[:2]
    return (none, every) if inst.guard_negated else (every, none)


def _bounds(fl: GangLowering, inst: ir.Instruction):
    """(all lanes true, no lane true) of an unguarded, plain setp of an aligned register
    against a uniform value, as i1 scalars; None where not known so."""
    t = TYPES[inst.spec.types[0]]
    cmp = inst.spec.get("cmp")
    dest = inst.operands[0]
    if inst.guard is not None or inst.spec.get("boolop") or len(inst.operands) != 3 \
            or not isinstance(dest, ir.Register) or t.is_float or t.kind == "bits" \
            or cmp not in _ORDER or (t.kind == "signed" and cmp not in _SIGNED_NAMES):
        return None
    for side in (1, 2):
        lanes = _aligned_lanes(fl, inst.operands[side], t)
        other = fl.read(inst.operands[3 - side], t) if lanes is not None else None
        if other is None or is_vec(other):
            continue
        low, high = lanes[:2]
        predicate = _ORDER[cmp][side - 1]
        signed = t.kind == "signed"
        compare = fl.b.icmp_signed if signed else fl.b.icmp_unsigned
        # a_i OP x (the register on the left; swapped: x OP a_i as a_i OP' x)
        if predicate in ("<", "<="):
            every, none = compare(predicate, high, other), compare(_negated(predicate), low,
                                                                   other)
        else:
            every, none = compare(predicate, low, other), compare(_negated(predicate), high,
                                                                  other)
        if lanes[2]:        # (not aligned: the span may cross the type's wrap)
            ordered = compare("<=", low, high)
            every, none = fl.b.and_(ordered, every), fl.b.and_(ordered, none)
        return every, none
    return None


def lower_logic(fl: GangLowering, inst: ir.Instruction) -> None:
    """and, or, not as the shared lowering has them; for an unguarded one of predicates
    whose operands' lanes are all true or none by two scalars under the current mask (a
    setp lower_setp noted, another such predicate, or a uniform one), the result's
    scalars are noted too."""
    dest = inst.operands[0]
    operands = None
    if inst.guard is None and inst.spec.types[:1] == ("pred",) and isinstance(
            dest, ir.Register):
        operands = [_known(fl, o) for o in inst.operands[1:]]
    LOWERINGS[inst.opcode](fl, inst)
    if operands is None or any(o is None for o in operands) \
            or len(operands) != (1 if inst.opcode == "not" else 2):
        return
    b = fl.b
    if inst.opcode == "not":
        every, none = operands[0][1], operands[0][0]
    elif inst.opcode == "and":      # (none of either: not kept, module docstring)
        (ea, _), (eb, _) = operands
        every, none = b.and_(ea, eb), I1(0)
    else:
        (_, na), (_, nb) = operands
        every, none = I1(0), b.and_(na, nb)
    fl.warp_bounds[id(dest)] = (every, none, fl.mask)


def _known(fl: GangLowering, operand):
    """(all lanes of the mask true, none) of a predicate operand as i1 scalars: noted by
    lower_setp or lower_logic under the current mask, or a uniform predicate's value;
    None where not known."""
    if not isinstance(operand, ir.Register):
        return None
    known = fl.warp_bounds.get(id(operand))
    if known is not None:
        return known[:2] if known[2] is fl.mask else None
    if operand not in fl.uniform:
        return None
    value = fl.read(operand, "pred")
    if is_vec(value) or value.type != I1:
        return None
    return value, fl.b.not_(value)


def _negated(predicate: str) -> str:
    return {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}[predicate]


def _aligned_lanes(fl: GangLowering, operand, t):
    """(the least lane value, the greatest, whether their order is to be tested) of a
    register whose lanes hold u + c[i] with t's width, as scalars of t; None otherwise.
    With aligned offsets no lane's value wraps; with others the two ends are in order
    exactly where none does (module docstring). u comes from lane 0 of the lanes as read
    (a rebuilt register's u itself, after LLVM's folding): every lane holds u + c[i]
    where the mask is full or the register is rebuilt (lowering.py keeps its frame's u
    and reads the lanes as u + c)."""
    if not isinstance(operand, ir.Register) or operand in fl.uniform:
        return None
    offsets = fl.lane_offsets.get(operand)
    align = fl.lane_alignment.get(operand, 0)
    bits = t.bits
    if offsets is None or operand.type.bits != bits \
            or max(offsets) - min(offsets) >= 1 << (bits - 1) \
            or not (is_full(fl.mask) or id(operand) in fl.rebuilt):
        return None
    aligned = 1 < align <= 1 << (bits - 1) and all(0 <= c < align for c in offsets)
    b = fl.b
    lanes = fl.read(operand, t)
    if not is_vec(lanes):
        return None
    typ = lanes.type.element
    u = b.sub(ll.IRBuilder.extract_element(b, lanes, I32(0)), ll.Constant(typ, offsets[0]))
    return (b.add(u, ll.Constant(typ, min(offsets))),
            b.add(u, ll.Constant(typ, max(offsets))), not aligned)
