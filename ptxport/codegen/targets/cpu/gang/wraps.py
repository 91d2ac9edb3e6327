"""Which widened lane forms (passes/lane_forms.py) the addresses of a group's first and last
lanes prove exact, for widened.py's accesses without the warp's flag. A widening's 32-bit
sum u + d[i] wraps in a lane where it passes the type's end; where d rises (or falls) from
lane to lane across the group, every lane after the first that wraps wraps too, and the
widened value there jumps by scale * 2**32 (down where the widening's scale and d's
direction agree, up otherwise). So where an address is a sum of values exact in every
lane (lane forms not widened, values alike in the warp) and of ONE such widening (scaled
by constants), its last lane's address differs from its first by the form's offset exactly
where no lane of the group wrapped. Two widenings could wrap in opposite directions in the
middle lanes and cancel at the last: such addresses are not this module's. Where the
widening is the address's only term that differs between lanes, its offsets are the
address's own (consecutive: rising with the scale), and it needs no form of its own (a
guarded copy's index, whose form is known only in its segment).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write
from ptxport.passes.lane_forms import HALF, LaneForm, widening
from ptxport.ptx.ast import IntImm

_UNKNOWN = None


_EXACT = "exact"        # a term that differs between lanes, exact in every lane
_OWN = "own"            # a widening whose offsets are known only as the address's


def wrap_jump(fl: GangLowering, key, halves: bool):
    """For the base register named by a place's key (id(register), space), whose lanes
    the place's form finds consecutive (rising): -1 where every write makes it such a sum
    whose widening's wrap moves the lanes after it down, +1 up, 0 with no widened term
    (exact), None otherwise (or not a register). `halves`: the groups are the half warps,
    else the warp."""
    memo = fl.wrap_jumps
    if (key, halves) not in memo:
        registers, _ = _writers(fl)
        register = registers.get(key[0])
        terms = None if register is None else _jumps(fl, register, halves, frozenset())
        memo[(key, halves)] = None if terms is None else _jump(terms)
    return memo[(key, halves)]


def _jump(terms: tuple):
    """wrap_jump's answer from an address's terms."""
    widenings = [t for t in terms if t != _EXACT]
    if len(widenings) > 1:
        return None
    if not widenings:
        return 0
    if widenings[0] == _OWN:        # (rising with the address: its wraps move it down)
        return -1 if _EXACT not in terms else None
    return widenings[0]


def _writers(fl: GangLowering):
    """(id -> register, register -> the instructions that write it), for the kernel."""
    if fl.kernel_writers is None:
        registers, writes = {}, {}
        for inst in fl.function.instructions():
            for register in may_write(inst):
                registers[id(register)] = register
                writes.setdefault(register, []).append(inst)
        fl.kernel_writers = (registers, writes)
    return fl.kernel_writers


def _jumps(fl: GangLowering, value, halves: bool, seen: frozenset):
    """The terms of `value`'s lanes that differ between lanes, over every write of it: a
    widening's direction (-1 / +1: where its wraps move the lanes after them), _OWN, or
    _EXACT; None where not known (a product of two terms, a register written from itself,
    writes with other terms...)."""
    if isinstance(value, (IntImm, ir.Variable)):
        return ()
    if not isinstance(value, ir.Register):
        return None
    if value in fl.uniform:
        return ()
    form = fl.lane_forms.get(value)
    if form is not None and not form.widened:       # (exact modulo 2**bits in every write)
        alike = not any(form.offsets) and not form.scaled and (halves or not form.halves)
        return () if alike else (_EXACT,)       # (alike in each group: the halves' rows)
    if value.type.bits != 64 or id(value) in seen:
        return None
    seen = seen | {id(value)}
    found = None
    for inst in _writers(fl)[1].get(value, ()):
        terms = _written(fl, inst, halves, seen)
        if terms is None or found is not None and terms != found:
            return None
        found = terms
    return found


def _flipped(terms: tuple) -> tuple:
    return tuple(-t if isinstance(t, int) else t for t in terms)


def _written(fl: GangLowering, inst: ir.Instruction, halves: bool, seen: frozenset):
    """_jumps of the value `inst` writes."""
    wide = widening(inst)
    if wide is not None:
        source = inst.operands[1]
        if isinstance(source, IntImm) or isinstance(source, ir.Register) \
                and source in fl.uniform:
            return ()
        form = fl.lane_forms.get(source) if isinstance(source, ir.Register) else None
        if form is None:
            return (_OWN,)
        rise = None if form.widened or form.scaled else _direction(form, halves)
        if rise is None:
            return None
        scale = wide[1]
        return () if rise == 0 or scale == 0 else ((-1 if (rise > 0) == (scale > 0) else 1),)
    op, spec = inst.opcode, inst.spec
    if spec.get("cc") or spec.get("sat") or spec.get("mode", "lo") != "lo":
        return None
    args = inst.operands[1:]
    if op in ("mov", "cvta") and len(args) == 1:
        return _jumps(fl, args[0], halves, seen)
    if op in ("add", "sub") and len(args) == 2:
        x, y = (_jumps(fl, a, halves, seen) for a in args)
        if x is None or y is None:
            return None
        return x + (_flipped(y) if op == "sub" else y)
    if op in ("mul", "shl") and len(args) == 2 and isinstance(args[1], IntImm):
        k = args[1].value
        if op == "shl":
            if not 0 <= k < 32:
                return None
            k = 1 << k
        k = (k & (2**64 - 1)) - (2**64 if k & (1 << 63) else 0)
        if (k << 32) % 2**64 == 0:      # (the jump vanishes modulo 2**64)
            return None
        x = _jumps(fl, args[0], halves, seen)
        return x if x is None or k > 0 else _flipped(x)
    return None


def _direction(form: LaneForm, halves: bool):
    """+1 where the 32-bit offsets rise (or stay) from lane to lane across each group, -1
    where they fall, 0 where they are the same in every lane of a group, None otherwise."""
    if form.halves and not halves:
        return None
    groups = (range(HALF), range(HALF, W)) if halves else (range(W),)
    rises = set()
    for group in groups:
        ref = form.offsets[group[0]]
        d = [((form.offsets[i] - ref + 2**31) & 0xFFFFFFFF) - 2**31 for i in group]
        steps = {(y > x) - (y < x) for x, y in zip(d, d[1:], strict=False)} - {0}
        if len(steps) > 1:
            return None
        rises |= steps
    if len(rises) > 1:
        return None
    return next(iter(rises), 0)


def rebuilt_widening(fl: GangLowering, register: ir.Register):
    """For a register every write of which is one widening (lane_forms.widening, by a power
    of two) of 32-bit lanes u + c[i] or u[i // 16] + c[i] (an exact form, the same c in
    every write): (c as a constant vector of i32, per half, the scale's shift, signed), so
    that the warp frame keeps the 32-bit u (of each half) and a read makes the lanes again
    as the widening does, wraps included (a stencil's `y * width + x` times 4, kept across
    its barrier: 4 vectors of 64-bit lanes, stored and loaded, where 2 scalars do); else
    None. The register's own (widened) form says that every write is made by all its
    live lanes together, as lowering.py's rebuilt registers need."""
    own = fl.lane_forms.get(register)
    if own is None or not own.widened:
        return None
    found = None
    for inst in _writers(fl)[1].get(register, ()):
        wide = widening(inst)
        source = inst.operands[1] if wide is not None else None
        form = fl.lane_forms.get(source) if isinstance(source, ir.Register) else None
        if form is None or form.widened or form.scaled or source.type.bits != 32 \
                or wide[1] <= 0 or wide[1] & (wide[1] - 1):
            return None
        this = (form.offsets, form.halves, wide[1].bit_length() - 1, wide[0])
        if found is not None and this != found:
            return None
        found = this
    if found is None:
        return None
    offsets, halves, shift, signed = found
    element = ll.IntType(32)
    lanes = ll.Constant(ll.VectorType(element, W), [ll.Constant(element, c & 0xFFFFFFFF)
                                                    for c in offsets])
    return lanes, halves, shift, signed
