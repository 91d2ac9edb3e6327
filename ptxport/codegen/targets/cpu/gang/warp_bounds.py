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

Equalities (`setp.eq` / `setp.ne`) of such a register against a uniform value, with any
constant offsets: lane i equals x exactly where d = x - u (modulo 2^bits) is c[i], so no
lane does where d lies outside the set of offsets (a range lo..hi: one unsigned compare,
`d - lo > hi - lo`), every lane does where the offsets are one value and d is it; exact
modulo 2^bits, aligned or not. These are noted for skippable runs only (a fourth item,
True, in the entry; branch_bounds leaves them alone: branches taking them made transpose's
blocks +195 and reduce_shared's +46 instructions, scalar tests beside a vector test that
stays), and so is what `and` / `or` / `not` / `mov` make of them, where the scalars kept
are both: none of `a and b` where none of either, all of `a or b` where all of either (an
operand not known counts as (false, false)). A 16x16 stencil's halo guards `threadIdx.y == 0`
and `== 15` (tid.y is 2w + i // 16 in warp w) then skip their runs on one scalar compare
in six of a block's eight warps (lowering.py's _lower_skippable). That "no lane" is used
only where an equality of a row index is in the predicate (offsets alike in some lanes:
tid.y where a warp holds several rows, a fact of the block's shape), never for one of
lanes all distinct (`lane == 0`, `tid == 0`): there the vector test stays in some warp or
in every one (lane = tid % 32), and the scalar test before it is pure extra (reduce_warp
+47 instructions a block).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, LOWERINGS
from ptxport.codegen.ops.compare import setp
from ptxport.codegen.targets.cpu.gang.full_entries import is_full
from ptxport.codegen.targets.cpu.gang.lanes import is_vec
from ptxport.codegen.targets.cpu.gang.scalar_lanes import lane as scalar_lane
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES

__all__ = ["lower_setp", "lower_logic", "branch_bounds", "run_bounds"]

_SET_LIMIT = 4      # the most distinct offsets an equality tests one by one (not a range)

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
        return
    bounds = _equality_bounds(fl, inst)
    if bounds is not None:      # (for skippable runs only: module docstring)
        fl.warp_bounds[id(inst.operands[0])] = (*bounds[:2], fl.mask, bounds[2])


def branch_bounds(fl: GangLowering, inst: ir.Instruction):
    """(every lane of the mask takes the branch, no lane does) as i1 scalars for a guarded
    `bra` whose predicate lower_setp noted under the same mask, else None. (Neither being
    true says nothing: the lanes' own predicates decide.)"""
    known = fl.warp_bounds.get(id(inst.guard))
    if known is None or known[2] is not fl.mask or len(known) > 3:     # (runs' only)
        return None
    every, none = known[:2]
    return (none, every) if inst.guard_negated else (every, none)


def run_bounds(fl: GangLowering, predicate: ir.Register):
    """(every lane of the mask holds `predicate`, no lane does) as i1 scalars for a
    skippable run (orderings, equalities and the logic made of them), else None. "No
    lane" only where an equality of a row index is in it (module docstring), else false."""
    known = fl.warp_bounds.get(id(predicate))
    if known is None or known[2] is not fl.mask:
        return None
    return known[0], known[1] if len(known) > 3 and known[3] else I1(0)


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
    """and, or, not (and mov of predicates) as the shared lowering has them; for an
    unguarded one of predicates whose operands' lanes are all true or none by two scalars
    under the current mask (a setp lower_setp noted, another such predicate, or a uniform
    one), the result's scalars are noted too (module docstring: which are kept)."""
    dest = inst.operands[0] if inst.operands else None
    operands = None
    if inst.guard is None and tuple(inst.spec.types) == ("pred",) and isinstance(
            dest, ir.Register) and dest not in fl.uniform:
        operands = [_known(fl, o) for o in inst.operands[1:]]
    LOWERINGS[inst.opcode](fl, inst)
    if operands is None or len(operands) != (1 if inst.opcode in ("not", "mov") else 2):
        return
    bounds = _logic_bounds(fl, inst.opcode, operands)
    if bounds is not None:
        fl.warp_bounds[id(dest)] = (*bounds[:2], fl.mask, *bounds[2:])


def _logic_bounds(fl: GangLowering, opcode: str, operands: list):
    """(every, none[, rows: runs only]) of a not / mov / and / or of predicates whose
    (every, none, runs only) are `operands` (None: not known); None where nothing is."""
    b = fl.b
    runs_only = any(o is not None and o[2] is not None for o in operands)
    rows = any(o is not None and o[2] for o in operands)
    if opcode in ("not", "mov"):
        # (a mov of an ordering's predicate: not noted, as before; branches taking the copy
        # added scan_warp's `lane >= d` loops scalar tests beside their vector ones: +53)
        if operands[0] is None or (opcode == "mov" and not runs_only):
            return None
        every, none, _ = operands[0]
        bounds = (none, every) if opcode == "not" else (every, none)
    elif all(o is not None for o in operands):
        (ea, na, _), (eb, nb, _) = operands
        if opcode == "and":     # (none of either: equalities only, module docstring)
            bounds = b.and_(ea, eb), b.or_(na, nb) if runs_only else I1(0)
        else:
            bounds = b.or_(ea, eb) if runs_only else I1(0), b.and_(na, nb)
    elif runs_only:     # (one operand not known: (false, false))
        every, none, _ = next(o for o in operands if o is not None)
        bounds = (I1(0), none) if opcode == "and" else (every, I1(0))
    else:
        return None
    return (*bounds, rows) if runs_only else bounds


def _known(fl: GangLowering, operand):
    """(all lanes of the mask true, none, rows) of a predicate operand: i1 scalars, and
    rows None for one branches may take, else whether an equality of a row index is in
    it; noted by lower_setp or lower_logic under the current mask, or a uniform
    predicate's value; None where not known."""
    negated = isinstance(operand, ir.NotValue)
    register = operand.value if negated else operand
    if not isinstance(register, ir.Register):
        return None
    known = fl.warp_bounds.get(id(register))
    if known is not None:
        if known[2] is not fl.mask:
            return None
        every, none, rows = known[0], known[1], known[3] if len(known) > 3 else None
    elif register in fl.uniform:
        value = fl.read(register, "pred")
        if is_vec(value) or value.type != I1:
            return None
        every, none, rows = value, fl.b.not_(value), None
    else:
        return None
    return (none, every, rows) if negated else (every, none, rows)


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
    offsets = _lane_offsets(fl, operand, t)
    bits = t.bits
    if offsets is None or max(offsets) - min(offsets) >= 1 << (bits - 1):
        return None
    align = fl.lane_alignment.get(operand, 0)
    aligned = 1 < align <= 1 << (bits - 1) and all(0 <= c < align for c in offsets)
    b = fl.b
    lanes = fl.read(operand, t)
    if not is_vec(lanes):
        return None
    typ = lanes.type.element
    u = b.sub(ll.IRBuilder.extract_element(b, lanes, I32(0)), ll.Constant(typ, offsets[0]))
    return (b.add(u, ll.Constant(typ, min(offsets))),
            b.add(u, ll.Constant(typ, max(offsets))), not aligned)


def _equality_bounds(fl: GangLowering, inst: ir.Instruction):
    """(all lanes true, no lane true) as i1 scalars, and whether some lanes' offsets are
    alike (a row index), of an unguarded, plain setp.eq / setp.ne of an integer register
    with constant lane offsets against a uniform value (module docstring); None where not
    known so."""
    t = TYPES[inst.spec.types[0]]
    cmp = inst.spec.get("cmp")
    if inst.guard is not None or inst.spec.get("boolop") or len(inst.operands) != 3 \
            or not isinstance(inst.operands[0], ir.Register) or t.is_float \
            or cmp not in ("eq", "ne"):
        return None
    for side in (1, 2):
        found = _offset_lanes(fl, inst.operands[side], t)
        other = fl.read(inst.operands[3 - side], t) if found is not None else None
        if other is None or is_vec(other):
            continue
        u, offsets = found
        b = fl.b
        d = b.sub(other, u)
        typ = d.type
        values = sorted({c % (1 << t.bits) for c in offsets})
        lo, hi = values[0], values[-1]
        if values == list(range(lo, hi + 1)):
            inside = ll.IRBuilder.icmp_unsigned(b, "<=", b.sub(d, ll.Constant(typ, lo)),
                                                ll.Constant(typ, hi - lo))
        elif len(values) <= _SET_LIMIT:
            inside = I1(0)
            for c in values:
                inside = b.or_(inside, ll.IRBuilder.icmp_unsigned(b, "==", d,
                                                                  ll.Constant(typ, c)))
        else:
            continue
        same = ll.IRBuilder.icmp_unsigned(b, "==", d, ll.Constant(typ, lo)) \
            if len(values) == 1 else I1(0)
        outside = b.not_(inside)
        rows = len(values) < len(offsets)       # (some lanes alike: a row index)
        return (same, outside, rows) if cmp == "eq" else (outside, same, rows)
    return None


def _offset_lanes(fl: GangLowering, operand, t):
    """(u as a scalar of t, the offsets c) of a register whose lanes hold u + c[i] with t's
    width, read where every lane's value is the register's (_aligned_lanes' rule); None
    otherwise."""
    offsets = _lane_offsets(fl, operand, t)
    if offsets is None:
        return None
    lanes = fl.read(operand, t)
    if not is_vec(lanes):
        return None
    first = scalar_lane(fl.b, lanes, 0, fl.written)
    return fl.b.sub(first, ll.Constant(first.type, offsets[0])), offsets


def _lane_offsets(fl: GangLowering, operand, t):
    """The constant offsets c of a non-uniform register of t's width whose lanes hold
    u + c[i], where every lane's value is the register's (the mask full, or the register
    rebuilt: lowering.py keeps its frame's u and reads the lanes as u + c); else None."""
    if not isinstance(operand, ir.Register) or operand in fl.uniform:
        return None
    offsets = fl.lane_offsets.get(operand)
    if offsets is None or operand.type.bits != t.bits \
            or not (is_full(fl.mask) or id(operand) in fl.rebuilt):
        return None
    return offsets
