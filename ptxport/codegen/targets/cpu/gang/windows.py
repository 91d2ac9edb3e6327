"""Warp gangs' loads whose lanes read a small window: one vector load of the window (or of
each half warp's), then each element's lanes taken from it by a shuffle.

memory.py loads a warp's lanes as one vector where they are consecutive, and otherwise
gathers them lane by lane. Where passes/lane_offsets.py knows the lanes' offsets when
compiling and they fall in a few dozen elements, a gather reads memory that one vector load
holds: Triton's IEEE f32 `tl.dot` (an FMA loop over tiles in shared memory) has each thread
read its rows of A as .v4/.v2 loads that a half warp shares (one address a half) and its
columns of B as .v2 loads 8 bytes apart (each half the same 128 bytes), and gathered, those
loads took most of the loop's time. Here the first is two 16-byte loads whose elements are
broadcast, the second one 128-byte load taken apart into its even and odd elements, which
LLVM folds into the FMAs' operands (broadcasts) or turns into a permute. Triton 3.9's 4-warp
reductions meet so too: lane l of every warp reads the warps' partial results at
`smem + 4 * (l & 3)` (classified at run time, a gather with every lane checked: ~16% of a
fused softmax's time in cache, with the stores beside them); here one 16-byte load and a
shuffle.

Only loads of every lane of the warp (the segment's full-mask copy) with no guard; a partial
mask goes to memory.py, and so do lanes one stride apart (strided.py's span access). In
shared memory the windows' range tests are values, tested by one branch (flush) before the
next instruction that is neither a shared load nor pure arithmetic; until then a load outside
reads zeros, and the branch's cold side raises the first load's fault, lane by lane. In
global memory (any space of host addresses) a window is loaded only where every element of
it is some lane's (so that where the range test fails and the exact per-lane test passes,
every byte loaded is one a lane may read), and not where the lanes are consecutive (memory.py's
vector access, checked with its group and prefetched); it is checked at once, as one range
against the allocations, the exact per-lane test where that fails. The first load of a
coalesce.py run is one too where its lanes read a window: they then never lie one after
another, as the run's whole-warp access needs, and its loads are lowered one by one.
"""

from __future__ import annotations

from typing import NamedTuple

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I32, I64, PTR, value_type
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.cpu.gang import memory, places, strided
from ptxport.codegen.targets.cpu.gang.chains import PURE
from ptxport.codegen.targets.cpu.gang.checks import (
    CONSECUTIVE,
    HALF_UNIFORM,
    check_place,
    expect,
    group_check,
    prechecked,
    smem_limit,
)
from ptxport.codegen.targets.cpu.gang.classify import form_of
from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import uses_and_defs
from ptxport.passes.shared_bounds import inside

__all__ = ["LIMIT", "Window", "defers", "flush", "lower_ld", "window_plan"]

HALF = W // 2
# the most elements one window loads: 64 f32 are four 512-bit registers (a 32-lane f32
# register is two); wider windows would load more than the lanes' gather touches
LIMIT = 64


class Window(NamedTuple):
    """`elements` elements loaded from lane `lane`'s address plus `start` bytes."""

    lane: int
    start: int
    elements: int


def window_plan(offsets, halves: bool, bits: int, size: int, count: int,
                limit: int = LIMIT, dense: bool = False):
    """(windows, picks) for a warp's load of `count` elements of `size` bytes a lane at
    lane offsets `offsets` (passes/lane_forms.py's LaneForm, modulo 2**bits; `halves`:
    each half's from its own first lane, the halves' bases unknown): one window for all
    lanes where they fit in `limit` elements, else one per half warp; picks[l] the index
    of lane l's first element in the windows laid end to end. None where the lanes do not
    fit, or an offset is not a whole number of elements from the window's start, or
    (`dense`) some element of a window is no lane's."""
    wrap, sign = (1 << bits) - 1, 1 << (bits - 1)

    def relative(lanes, ref):
        return [((offsets[lane] - offsets[ref] + sign) & wrap) - sign for lane in lanes]

    def window(lanes, ref):
        rel = relative(lanes, ref)
        low = min(rel)
        elements, rest = divmod(max(rel) - low + size * count, size)
        if rest or elements > limit or any((r - low) % size for r in rel):
            return None
        picks = [(r - low) // size for r in rel]
        if dense and {p + i for p in picks for i in range(count)} != set(range(elements)):
            return None
        return Window(ref, low, elements), picks

    whole = None if halves else window(range(W), 0)
    if whole is not None:
        return [whole[0]], whole[1]
    parts = [window(range(h * HALF, h * HALF + HALF), h * HALF) for h in range(2)]
    if None in parts:
        return None
    first = parts[0][0].elements
    return [parts[0][0], parts[1][0]], parts[0][1] + [first + p for p in parts[1][1]]


def lower_ld(fl: GangLowering, inst: ir.Instruction) -> None:
    """A load: through a window where _plan finds one, else memory.py's lower_ld."""
    found = _plan(fl, inst)
    if found is None:
        flush(fl)
        memory.lower_ld(fl, inst)
        return
    place, t, count, (windows, picks) = found
    starts = _starts(fl, place, windows)
    et = place.addrs.type.element
    bounds = [(s, fl.b.add(s, ll.Constant(et, w.elements * t.size)))
              for s, w in zip(starts, windows, strict=True)]
    if place.shared:
        inside = _inside(fl, place, t, count, bounds)
        fl.window_checks.append(_Check(inst, place, t.size * count, bounds, inside))
    else:       # (defers() is false for it: the pending tests were flushed before it)
        inside = None
        for start, end in bounds:
            check_place(fl, place, t.size * count, False, I32(CONSECUTIVE), start, end)
    if _one_pick_each(windows, picks):
        values = _broadcasts(fl, place, t, count, windows, picks, inside)
    else:
        values = _shuffled(fl, place, t, count, windows, picks, inside)
    dest = inst.operands[0]
    if count == 1 and not isinstance(dest, ir.VectorValue):
        fl.write(dest, values[0], t)
    else:
        fl.write_vector(dest, values, t)


def _one_pick_each(windows, picks) -> bool:
    """Whether every lane of a window picks the same element (one address a half warp:
    a row of a tile that each half's lanes share)."""
    if len(windows) == 1:
        return len(set(picks)) == 1
    return len(set(picks[:HALF])) == 1 and len(set(picks[HALF:])) == 1


def _broadcasts(fl: GangLowering, place, t, count: int, windows, picks, inside) -> list:
    """The lanes' elements where each window's lanes all pick one: each element of each
    window loaded on its own and broadcast to the window's lanes (a vector load taken
    apart, LLVM made a 64-bit load of a .v2 and moved its halves from general registers,
    two shuffles an element; broadcast from memory, it is a load alone)."""
    b = fl.b
    element = ll.VectorType(value_type(t), 1)
    firsts = [picks[0]] if len(windows) == 1 else [picks[0], picks[HALF] - windows[0].elements]
    values = []
    for i in range(count):
        loaded = [ll.IRBuilder.load(b, _pointer(fl, place, place.lanes, Window(
            w.lane, w.start + (first + i) * t.size, 1), inside), typ=element, align=t.size)
                  for w, first in zip(windows, firsts, strict=True)]
        other = loaded[1] if len(loaded) == 2 else ll.Constant(element, None)
        values.append(ll.IRBuilder.shuffle_vector(b, loaded[0], other, ll.Constant(
            ll.VectorType(I32, W), [0] * HALF + [len(loaded) - 1] * HALF)))
    return values


def _shuffled(fl: GangLowering, place, t, count: int, windows, picks, inside) -> list:
    """The lanes' elements taken from the windows loaded whole, one shuffle an element."""
    loaded = [_load_window(fl, place, place.lanes, t, w, inside) for w in windows]
    if len(loaded) == 2 and windows[0].elements != windows[1].elements:
        n = max(w.elements for w in windows)
        loaded = [_widened(fl, v, n) for v in loaded]
        picks = picks[:HALF] + [p - windows[0].elements + n for p in picks[HALF:]]
    other = loaded[1] if len(loaded) == 2 else ll.Constant(loaded[0].type, None)
    return [ll.IRBuilder.shuffle_vector(fl.b, loaded[0], other, ll.Constant(
        ll.VectorType(I32, W), [p + i for p in picks])) for i in range(count)]


def _plan(fl: GangLowering, inst: ir.Instruction):
    """(place, type, count, window_plan) of a load of every lane whose lanes' offsets are
    known and fit windows, else None. A shared load's place is read first, as before the
    global windows were; another's only where it has a window (memory.py reads it where
    not, in its own order)."""
    space = state_space(inst)
    operand = inst.operands[1]
    if inst.opcode not in ("ld", "ldu") or inst.guard is not None or space == "param" \
            or id(inst) in fl.pending or (space == "shared" and id(inst) in fl.runs):
        return None
    if not _full(fl.mask) or not isinstance(operand, ir.Address):
        return None
    defs = uses_and_defs(inst)[1]
    if defs and defs <= fl.uniform:
        return None         # (every lane loads alike: memory.py loads it once)
    t, count = instruction_type(inst), vector_count(inst)
    if isinstance(value_type(t), ll.VectorType):
        return None
    shared = space == "shared"
    place = places.place_of(fl, operand, space) if shared else None
    form = place.lanes if shared else (
        form_of(fl, operand.base) if isinstance(operand.base, ir.Register) else None)
    if form is None or form.widened or form.scaled:
        return None
    plan = window_plan(form.offsets, form.halves, operand.base.type.bits, t.size, count,
                       dense=not shared)
    if plan is None or any(abs(operand.offset + w.start) >= 1 << 30 for w in plan[0]):
        return None
    if not shared and plan[1] == [count * lane for lane in range(W)]:
        return None     # (consecutive: memory.py's vector access, with its group's check)
    place = place or places.place_of(fl, operand, space)
    if place.lanes is not form or (count == 1 and strided.applies(fl, place, t.size)):
        return None     # (lanes one stride apart: strided.py's span access, the same load)
    return place, t, count, plan


def _full(mask) -> bool:
    """Whether the mask is the constant of all 32 lanes (the segment's full-mask copy)."""
    if not isinstance(mask, ll.Constant):
        return False
    bits = mask.constant
    return isinstance(bits, list) and len(bits) == W and all(
        getattr(b, "constant", None) in (1, True) for b in bits)


def _starts(fl: GangLowering, place, windows) -> list:
    """Each window's first byte as an offset into the shared window: its lane's address
    plus place.offset and the window's start, computed in the address's width (what the
    range test takes)."""
    b = fl.b
    et = place.addrs.type.element
    return [b.add(ll.IRBuilder.extract_element(b, place.addrs, I32(w.lane)),
                  ll.Constant(et, place.offset + w.start)) for w in windows]


def _pointer(fl: GangLowering, place, form, window: Window, inside):
    """The window's first byte as a pointer: in global memory its lane's address (the window
    checked already); in shared memory that where `inside`, else a pointer into a block of
    zeros (always readable: the load then faults at the next flush, and its value is not
    used). The lane's address is widened once and the window's start added in 64 bits as a
    constant, so that a group's loads share one base and take their offsets as addressing
    modes. Where the range test passes, the 32-bit sum had no signed overflow (it lies in
    [0, total_smem) and the constant is under 2**30: _plan), so both sums agree."""
    b = fl.b
    start = place.offset + window.start
    if not place.shared:        # (host addresses, checked before: lower_ld)
        lane = ll.IRBuilder.extract_element(b, place.addrs, I32(window.lane))
        return b.gep(b.inttoptr(lane, PTR), [I64(start)], source_etype=I8)
    group = _group(fl)
    key = (place.key[0], "window", group, window.lane)
    base = fl.places.get(key)
    if base is None:
        lane = ll.IRBuilder.extract_element(b, place.addrs, I32(window.lane))
        if lane.type.width != 64:
            lane = b.sext(lane, I64)
        base = ll.IRBuilder.gep(b, fl.target.space_base(fl, "shared"), [lane],
                                source_etype=I8)
        if fl.options.opaque_window_bases:
            base = _opaque(b, base)
        reach = _reach(fl, group, form, window.lane, place.addrs.type.element.width)
        if _true(inside):       # (proven, or checked before the loop: no fallback)
            if reach is not None:
                fl.places[key] = base
            return b.gep(base, [I64(start)], source_etype=I8)
        if reach is None:       # (no group: this load's own fallback)
            return ll.IRBuilder.select(b, inside, b.gep(base, [I64(start)], source_etype=I8),
                                       _zeros(fl.llfn.module, window.elements * 8, 0))
        base = ll.IRBuilder.select(b, inside, base, _zeros(fl.llfn.module, *reach))
        fl.places[key] = base
    return b.gep(base, [I64(start)], source_etype=I8)


def _opaque(b, pointer):
    """`pointer` through an empty inline asm that returns it, which LLVM cannot see through:
    the window's loads then address [base + constant] from the one register, where LLVM
    made [window + lane + constant] of each. The Xeons' cores (Sapphire and Emerald Rapids)
    issue an instruction with an indexed memory operand and three register operands as two
    uops (un-laminated) where [base + constant] keeps it one: gemm's k loop has 32 FMAs a
    warp and tile with A's element broadcast from its window (a C model of that loop ran
    25-30% slower indexed; the kernel 3-7% faster with this, docs/cpu-target-measurements.md
    "Session 13: gemm11")."""
    asm = ll.InlineAsm(ll.FunctionType(PTR, [PTR]), "", "=r,0")
    return ll.IRBuilder.call(b, asm, [pointer], attrs=("nounwind", "readnone"))


def _reach(fl: GangLowering, group, form, lane: int, bits: int):
    """(bytes, lowest offset) of the loads of `group` (places.py's access_groups, whose
    operands' offsets lie in group_span) from `lane`'s address: every window a member
    loads from that lane lies in that many bytes from the lowest offset. None where the
    load is in no group, or they reach over 64 KiB."""
    if group is None:
        return None
    first, last = fl.group_span[group]
    lanes = range(W) if not form.halves else range(lane // HALF * HALF, lane // HALF * HALF + HALF)
    wrap, sign = (1 << bits) - 1, 1 << (bits - 1)
    rel = [((form.offsets[i] - form.offsets[lane] + sign) & wrap) - sign for i in lanes]
    low, high = first + min(rel), last + max(rel) + group[1]
    return None if high - low > 1 << 16 else (high - low, low)


def _group(fl: GangLowering):
    """The current load's access group (places.py's access_groups: a segment's accesses
    from one base, a tile's rows), where every access of the group is unguarded, else
    None. Then a failed test of the group's range means that some access of the group
    faults, so the loads that read zeros meanwhile (their own windows perhaps inside) are
    never used; a guarded access's lanes outside its guard may fail the test and fault
    nowhere."""
    group = fl.group_of.get(id(fl.inst))
    return None if group in fl.guarded_groups else group


def _inside(fl: GangLowering, place, t, count: int, bounds):
    """i1: whether every [start, end) of `bounds` lies in the block's shared memory, or
    false where some access of its group (_group) faults: the group's range test (made
    once, at the group's first access), else its own windows'; true for an access checked
    before its loop (passes/hoist_checks.py)."""
    if prechecked(fl) or _proven(fl, t.size * count):
        return ll.Constant(ll.IntType(1), 1)
    b = fl.b
    et = place.addrs.type.element
    # (the group's test takes the lanes' range at the base, before the offset, for the
    # first element of each lane)
    before = ll.Constant(et, place.offset)
    lows = [b.sub(start, before) for start, _ in bounds]
    highs = [b.sub(end, ll.Constant(et, place.offset + (count - 1) * t.size))
             for _, end in bounds]
    if len(bounds) == 2:
        lows, highs = [_pick(fl, "<", *lows)], [_pick(fl, ">", *highs)]
    if _group(fl) is not None:
        return group_check(fl, place, t.size, lows[0], highs[0], known=True)[0]
    limit = smem_limit(fl, et.width)
    inside = None
    for start, end in bounds:
        fits = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", start, end),
                      ll.IRBuilder.icmp_unsigned(b, "<=", end, limit))
        inside = fits if inside is None else b.and_(inside, fits)
    return inside


def _proven(fl: GangLowering, size: int) -> bool:
    """Whether passes/shared_bounds.py finds the current load (`size` bytes a lane), and
    every access of its group (which share the group's test and its window pointers: _reach),
    inside its shared variable for every thread of the block. Its windows then lie inside
    too: each runs from its lowest lane's element to its highest's, all the warp's threads'
    (a full mask). A GEMM's 32 tile loads a k step tested their windows at every step."""
    if not inside(fl.shared_bounds.get(fl.inst), size):
        return False
    group = fl.group_of.get(id(fl.inst))
    if group is None:
        return True
    if group not in fl.proven_groups:       # (once a group: a scan of the segment's accesses)
        members = {i for i, g in fl.group_of.items() if g == group}
        found = {id(a): a for a in fl.shared_bounds if id(a) in members}
        fl.proven_groups[group] = len(found) == len(members) and all(
            inside(fl.shared_bounds[a], instruction_type(a).size * vector_count(a))
            for a in found.values())
    return fl.proven_groups[group]


def _true(test) -> bool:
    return isinstance(test, ll.Constant) and test.constant in (1, True)


def _pick(fl: GangLowering, op: str, x, y):
    """The lower (op "<") or higher (">") of two offsets, unsigned."""
    return ll.IRBuilder.select(fl.b, ll.IRBuilder.icmp_unsigned(fl.b, op, x, y), x, y)


class _Check(NamedTuple):
    """A window load whose range test's outcome is tested later (flush)."""

    inst: ir.Instruction
    place: object
    size: int
    bounds: list        # [(start, end)] of its windows
    inside: ll.Value    # i1: every window inside the shared window


def _load_window(fl: GangLowering, place, form, t, window: Window, inside):
    """The window's elements as one vector; where `inside` is false (some window of the
    load, or of its group, is outside the shared window: the load faults at the next
    flush), from a block of zeros instead, which is always readable."""
    b = fl.b
    pointer = _pointer(fl, place, form, window, inside)
    return ll.IRBuilder.load(b, pointer, typ=ll.VectorType(value_type(t), window.elements),
                             align=t.size)


def _zeros(module: ll.Module, size: int, low: int):
    """A pointer `low` bytes before a module constant of at least `size` zero bytes (one
    constant a size, a power of two)."""
    size = max(64, 1 << (size - 1).bit_length())
    name = f"ptxport.window_zeros.{size}"
    if name not in module.globals:
        zeros = ll.GlobalVariable(module, ll.ArrayType(ll.IntType(8), size), name)
        zeros.linkage, zeros.global_constant = "internal", True
        zeros.initializer = ll.Constant(zeros.value_type, None)
        zeros.align = 64
    return module.globals[name].gep([I64(0), I64(-low)])


def defers(inst: ir.Instruction) -> bool:
    """Whether `inst` may be lowered before the pending window loads' range tests (flush):
    a shared load (lower_ld flushes first where it is not a window load) or a pure one,
    which neither touches memory nor leaves the segment (nothing it does is seen if a
    load before it then faults)."""
    return inst.opcode in PURE or (inst.opcode == "ld" and state_space(inst) == "shared")


def flush(fl: GangLowering) -> None:
    """Test the pending window loads' ranges: one branch for all of them, to the exact
    per-lane test of each in program order, which raises the first one's fault (the loads
    then read zeros instead, and what was computed from them is not kept). So that the
    loads of a tile and the FMAs between them are one basic block that LLVM schedules as
    a whole (a branch after each load kept each load's value live until its FMAs, and
    spilled them)."""
    pending = fl.window_checks
    if not pending:
        return
    fl.window_checks = []
    b = fl.b
    tests = [t for t in {id(c.inside): c.inside for c in pending}.values() if not _true(t)]
    if not tests:
        return      # (proven inside when compiling: _proven)
    inside = tests[0]
    for test in tests[1:]:
        inside = b.and_(inside, test)
    exact, ok = fl.llfn.append_basic_block("window_exact"), fl.llfn.append_basic_block(
        "window_checked")
    expect(fl, ll.IRBuilder.cbranch(b, inside, ok, exact))
    b.position_at_end(exact)
    here = fl.inst
    for check in pending:
        fl.inst = check.inst          # (the fault names its instruction)
        for start, end in check.bounds:
            check_place(fl, check.place, check.size, False, I32(HALF_UNIFORM), start, end)
    fl.inst = here
    b.branch(ok)
    b.position_at_end(ok)


def _widened(fl: GangLowering, v, n: int):
    """`v` as a vector of n elements (its own first, then the first repeated), so that two
    windows of unlike sizes make one shuffle's operands."""
    have = v.type.count
    if have == n:
        return v
    return ll.IRBuilder.shuffle_vector(fl.b, v, ll.Constant(v.type, None), ll.Constant(
        ll.VectorType(I32, n), list(range(have)) + [0] * (n - have)))
