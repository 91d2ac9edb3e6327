"""Warp gangs' prefetches by how a global access site moves: a site whose base register moves
by a step known when compiling each time around the site's loop (a grid-stride loop's
`i += blockDim.x * gridDim.x`, a row loop's constant step) prefetches one to three steps on
(fewer where the loop's accesses fetch more lines a pass), from its first pass and with no
state kept; a site outside loops in a block 16 threads wide (each half warp a row of
threads: a 2D stencil's) prefetches the rows of the warp 3 on, its distance from lane 0's
and lane 16's addresses, with no state either; any other site goes to checks.prefetch,
which learns its stride at run time (about 18 instructions and two stores a site).

A register's step and whether it is alike in a warp are found from the registers' one
writes: affine combinations of %tid.x and %ctaid.x with constant coefficients plus a part
alike in every thread (kernel parameters and constants). Widening conversions count as the
value itself: this only decides how far ahead to prefetch, never what is accessed.

(A rule that gave `p[blockIdx.x * blockDim.x + threadIdx.x]` streams outside loops no
software prefetch, leaving them to the hardware's prefetchers, was taken out: on the GPU
host's Xeon vector_add then took 17% more CPU time on one worker and 0.39-0.46 -> 0.48-0.63
ms on 16, though it saved 5% on an AMD EPYC.)
"""

from __future__ import annotations

from typing import NamedTuple

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64
from ptxport.codegen.ops.data import instruction_type, vector_count
from ptxport.codegen.targets.cpu.gang.checks import Place, prefetch, prefetch_line
from ptxport.codegen.targets.cpu.gang.lanes import W, is_vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import live_before, may_write, state_space
from ptxport.ptx.ast import IntImm


class _Affine(NamedTuple):
    """tid * `tid` + ctaid * `cta` + a part alike in every thread: `known`, its value where
    known (a constant), else None."""

    tid: int
    cta: int
    known: int | None


_UNKNOWN = None
_SPECIAL = {"%tid": "tid", "%ctaid": "cta"}


class _Facts(NamedTuple):
    """What this module reads off the kernel, once: registers by id, each register's writes
    as (instruction, its block's cycle or None), and each instruction's cycle (an id of the
    strongly connected set of blocks it lies in, None outside loops), and where each
    instruction is: (its block, its index there)."""

    registers: dict
    writes: dict
    cycle_of: dict
    position: dict


def kernel_facts(fl: GangLowering) -> _Facts:
    facts = fl.streams.get("facts")
    if facts is not None:
        return facts
    kernel = fl.function
    cycles = _cycles(kernel)
    registers, writes, cycle_of, position = {}, {}, {}, {}
    for block in kernel.blocks:
        cycle = cycles.get(id(block))
        for k, inst in enumerate(block.instructions):
            cycle_of[id(inst)] = cycle
            position[id(inst)] = (block, k)
            for register in may_write(inst):
                registers[id(register)] = register
                writes.setdefault(id(register), []).append((inst, cycle))
    facts = _Facts(registers, writes, cycle_of, position)
    fl.streams["facts"] = facts
    return facts


def held(fl: GangLowering, register: ir.Register, since: ir.Instruction,
         at: ir.Instruction) -> bool:
    """Whether `register`, as `since` reads it, still holds that value at `at` for a lowering
    that reads it there though the kernel does not (`at` later in `since`'s block, or in the
    block after it; nothing between writes it: the caller's test). A warp may leave the gang
    function and resume where a segment starts (after a barrier, at a warp operation where
    lanes park, wherever a uniform round ends: rounds.py), and only the registers live there
    are kept in its frame (lowering.py); the others live in the function's own variables,
    which a resumed warp has lost (their loads are undefined, and LLVM then drops what they
    decide: a block of 48 threads hung). So: no segment starts after `since` up to `at`, or
    `register` is live where each does."""
    position = kernel_facts(fl).position
    (block, i), (end_block, end) = position[id(since)], position[id(at)]
    between = block.instructions[i + 1:end + 1] if block is end_block else \
        block.instructions[i + 1:] + end_block.instructions[:end + 1]
    starts = [inst for inst in between if id(inst) in fl.segment_at]
    if not starts:
        return True
    live = fl.streams.get("segment_live")
    if live is None:
        points = {id(s.block.instructions[s.start]): (id(s.block), s.start)
                  for s in fl.segment_at.values()}
        found = live_before(fl.function, set(points.values()))
        live = fl.streams["segment_live"] = {k: found[p] for k, p in points.items()}
    return all(register in live[id(inst)] for inst in starts)


def _cycles(kernel: ir.Function) -> dict:
    """id(block) -> a number naming its strongly connected set of blocks, for the blocks
    that lie on a cycle of the control-flow graph (Tarjan's algorithm, iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], {}
    counter = 0
    for root in kernel.blocks:
        if id(root) in index:
            continue
        work = [(root, iter(root.successors))]
        index[id(root)] = low[id(root)] = counter
        counter += 1
        stack.append(root)
        on_stack.add(id(root))
        while work:
            block, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if id(step) not in index:
                    index[id(step)] = low[id(step)] = counter
                    counter += 1
                    stack.append(step)
                    on_stack.add(id(step))
                    work.append((step, iter(step.successors)))
                elif id(step) in on_stack:
                    low[id(block)] = min(low[id(block)], index[id(step)])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[id(parent)] = min(low[id(parent)], low[id(block)])
            if low[id(block)] == index[id(block)]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(id(member))
                    members.append(member)
                    if member is block:
                        break
                if len(members) > 1 or block in block.successors:
                    for member in members:
                        found[id(member)] = index[id(block)]
    return found


def _form(fl: GangLowering, register, visiting: set) -> _Affine | None:
    """The affine form of a register written once, outside loops and unguarded, else None."""
    if id(register) in visiting:
        return None
    writes = kernel_facts(fl).writes.get(id(register))
    if not writes or len(writes) != 1 or writes[0][1] is not None \
            or writes[0][0].guard is not None:
        return None
    visiting.add(id(register))
    try:
        return _written(fl, writes[0][0], visiting)
    finally:
        visiting.discard(id(register))


def _operand(fl: GangLowering, value, visiting: set) -> _Affine | None:
    if isinstance(value, IntImm):
        return _Affine(0, 0, value.value)
    if isinstance(value, ir.SpecialRegister):
        axis = "xyz".index(value.component or "x") if value.component in (None, "x", "y",
                                                                            "z") else None
        if value.name == "%ntid" and axis is not None:
            return _Affine(0, 0, fl.block[axis])
        if value.name == "%nctaid":
            return _Affine(0, 0, _UNKNOWN)
        if value.name in _SPECIAL and axis == 0:
            return _Affine(int(value.name == "%tid"), int(value.name == "%ctaid"), 0)
        if value.name == "%tid" and axis is not None and fl.block[axis] == 1:
            return _Affine(0, 0, 0)
        return None
    if isinstance(value, ir.Register):
        return _form(fl, value, visiting)
    return None


def alike_in_every_warp(fl: GangLowering, register) -> tuple[int, int] | None:
    """(k, K) where each warp's lane 0 holds k * %ctaid.x + K in `register`, exactly, and
    every warp the same lanes: a 32-bit register written once, outside loops and unguarded,
    from %tid.x, %ctaid.x and constants by 32-bit adds, subtractions, low products and
    shifts (arithmetic modulo 2^32, as the form's), in a block whose warps all hold the same
    %tid.x lanes (its x size divides 32; lane 0 of each warp is at %tid.x 0). A 2D
    stencil's `x = blockIdx.x * 16 + threadIdx.x`: lowering.py makes it again from the
    block's %ctaid.x after a barrier rather than keep it in each warp's frame, and LLVM
    takes what is decided from it (the edge test's x == 0, x == width - 1) out of the loop
    over the warps."""
    if W % fl.block[0] or not _exact(fl, register, set()):
        return None
    form = _form(fl, register, set())
    if form is None or form.known is None:
        return None
    return form.cta, form.known


_EXACT = ("mov", "add", "sub", "mul", "shl", "mad")


def _exact(fl: GangLowering, register, visiting: set) -> bool:
    """Whether each write on `register`'s way from its sources is a 32-bit one of _EXACT
    (no widening, no high product): what _form's arithmetic follows modulo 2^32."""
    if not isinstance(register, ir.Register) or id(register) in visiting:
        return not isinstance(register, ir.Register)
    visiting.add(id(register))
    for inst, _ in kernel_facts(fl).writes.get(id(register), ()):
        if inst.opcode not in _EXACT or inst.spec.get("mode", "lo") != "lo" \
                or any(t[1:] != "32" for t in inst.spec.types) \
                or not all(_exact(fl, v, visiting) for v in inst.operands[1:]):
            return False
    return True


def _written(fl: GangLowering, inst: ir.Instruction, visiting: set) -> _Affine | None:
    """The affine form of what `inst` writes (its first operand), where its opcode keeps
    one."""
    op = inst.opcode
    if op == "ld":
        return _Affine(0, 0, _UNKNOWN) if state_space(inst) == "param" else None
    types = inst.spec.types
    if not types or any(t[0] not in "usb" for t in types) or inst.spec.get("cc") \
            or inst.spec.get("sat") or inst.spec.get("mode", "lo") not in ("lo", "wide"):
        return None
    args = [_operand(fl, v, visiting) for v in inst.operands[1:]]
    if any(a is None for a in args):
        return None
    if op in ("mov", "cvta", "cvt") and len(args) == 1:
        return args[0]
    if op == "add" and len(args) == 2:
        return _add(args[0], args[1])
    if op == "sub" and len(args) == 2:
        return _add(args[0], _scale(args[1], -1))
    if op == "mul" and len(args) == 2:
        return _product(args[0], args[1])
    if op == "shl" and len(args) == 2 and args[1].known is not None and not args[1].tid \
            and not args[1].cta:
        return _scale(args[0], 1 << args[1].known)
    if op == "mad" and len(args) == 3:
        product = _product(args[0], args[1])
        return None if product is None else _add(product, args[2])
    return None


def _add(a: _Affine, b: _Affine) -> _Affine:
    known = None if a.known is None or b.known is None else a.known + b.known
    return _Affine(a.tid + b.tid, a.cta + b.cta, known)


def _scale(a: _Affine, k: int) -> _Affine:
    return _Affine(a.tid * k, a.cta * k, None if a.known is None else a.known * k)


def _product(a: _Affine, b: _Affine) -> _Affine | None:
    for x, y in ((a, b), (b, a)):
        if not x.tid and not x.cta and x.known is not None:
            return _scale(y, x.known)
    if not a.tid and not a.cta and not b.tid and not b.cta:
        return _Affine(0, 0, _UNKNOWN)
    return None


# --- loops: a base register's move each time around ------------------------------------------

class _Step(NamedTuple):
    """How far a register moves each time around a loop: `scale` times the register `by`
    (alike in every thread, not written in the loop), or `scale` alone where `by` is None."""

    by: object
    scale: int


_STAYS = _Step(None, 0)
# How many steps ahead: a loop's sites together keep (steps) x (their lines a pass) lines
# in flight, which _IN_FLIGHT bounds, from 1 to _MOST_AHEAD steps. On the GPU host's Xeon
# (one worker, CPU time), saxpy's loop (2 groups of 4 lines a pass) took 2.3-2.5 ms 1 step
# ahead, 2.7-2.8 ms 2 and 3.0-3.4 ms 3 steps ahead (C: 1.3-1.7 ms); reduce_warp's (one
# group of 4 lines) was fastest 2-3 steps ahead. (Software prefetches hold the core's line
# fill buffers, 16 on Golden Cove, until their lines come.)
_IN_FLIGHT = 12
_MOST_AHEAD = 3
_NEAR = 1 << 26     # and for steps under 64 MiB, as checks.prefetch does
_GROUP_LINES = 4    # what a group's first access prefetches (memory.py: 256 bytes)


def prefetch_site(fl: GangLowering, place: Place, lows: list, span: int, size: int,
                  write: bool = False) -> None:
    """The software prefetch of a global access site of `size` bytes a lane whose lanes'
    ranges start at `lows` (`span` bytes from each: the warp's, its group's, or each half
    warp's where the halves lie apart): for a base register that moves by a known step
    each time around the access's loop (a grid-stride loop's index: `i += blockDim.x *
    gridDim.x`), _steps_ahead steps on, from the first pass and with no state kept; for a
    site outside loops whose halves are rows of threads (_rows_of_threads), the rows of the
    warp _WARPS_AHEAD on; else checks.prefetch, which learns the stride from the first of
    `lows`. `write`: the site
    stores (checks.prefetch_line)."""
    if not isinstance(fl.unguarded_mask, ll.Constant):
        return
    step = _loop_step(fl, place)
    if step is None and _rows_of_threads(fl, lows):
        if fl.options.row_store_prefetches if write else fl.options.row_load_prefetches:
            _rows_ahead(fl, lows, span, write)
        return
    if step is None or step == _STAYS:
        prefetch(fl, lows, span, write)
        return
    b = fl.b
    ahead = _steps_ahead(fl)
    if step.by is None:
        if abs(step.scale) >= _NEAR:
            return
        distance = I64(step.scale * ahead)
    else:
        moved = fl.read(step.by, f"s{step.by.type.bits}" if step.by.type.bits in (32, 64)
                        else "s32")
        moved = moved if not is_vec(moved) else ll.IRBuilder.extract_element(b, moved, I32(0))
        if moved.type.width < 64:
            moved = b.sext(moved, I64)
        moved = b.mul(moved, I64(step.scale))
        # (a step of 64 MiB or more: the lines at hand, as checks.prefetch leaves them;
        # fixed in the loop, so LLVM takes the test out of it)
        near = ll.IRBuilder.icmp_unsigned(b, "<", b.add(moved, I64(_NEAR)), I64(2 * _NEAR))
        distance = b.select(near, b.mul(moved, I64(ahead)), I64(0))
    _prefetch_at(fl, lows, distance, span, write)


def _prefetch_at(fl: GangLowering, lows: list, distance, span: int, write: bool) -> None:
    """Prefetch the lines of each range of `lows`, `distance` bytes on (at most 512 bytes
    of `span` a range)."""
    b = fl.b
    for low in lows:
        at = b.add(low, distance)
        for line in range(0, min(span, 512), 64):
            prefetch_line(fl, b.add(at, I64(line)), write)


# --- outside loops, in blocks 16 threads wide: the next warps' rows ---------------------------

_WARPS_AHEAD = 3    # as far as checks.prefetch's learnt stride reaches (its _AHEAD strides)


def _rows_of_threads(fl: GangLowering, lows: list) -> bool:
    """Whether a site outside loops lies in a block 16 threads wide with several warps and
    prefetches each half warp's lines apart (`lows`: lane 0's and lane 16's): each half warp
    is then a row of threads, lane 16's row the one after lane 0's, and a warp two rows. A
    2D stencil's load and store: the stride checks.prefetch learns there is the next warp's
    two rows (but at each block's first warp: back up the block's tile), at about 20
    instructions and two stores a warp."""
    return len(lows) == 2 and fl.block[0] == W // 2 and fl.block[1] * fl.block[2] > 2 \
        and kernel_facts(fl).cycle_of.get(id(fl.inst)) is None


def _rows_ahead(fl: GangLowering, lows: list, span: int, write: bool) -> None:
    """Prefetch where the warp _WARPS_AHEAD warps on accesses, taking the distance from one
    row of threads to the next as lane 16's address less lane 0's (so where the address
    does not follow the rows, a guess that costs a prefetch, never a fault: a site whose
    address does not depend on threadIdx.y fetches its own lines again). No state: it
    needs no first warp to learn from, and the block's first warp fetches its own block's
    rows too. (No test for far steps, as prefetch_site's: a prefetch never faults, and a
    step of 64 MiB would take rows of 11 MiB.)"""
    b = fl.b
    _prefetch_at(fl, lows, b.mul(b.sub(lows[1], lows[0]), I64(2 * _WARPS_AHEAD)), span, write)


def _steps_ahead(fl: GangLowering) -> int:
    """How many steps ahead the current access's loop prefetches: _IN_FLIGHT lines over
    the lines its global accesses fetch a pass (as memory.py's groups: _GROUP_LINES a
    base register, or a warp's 32 lanes' bytes where more), 1 to _MOST_AHEAD."""
    facts = kernel_facts(fl)
    cycle = facts.cycle_of.get(id(fl.inst))
    key = ("ahead", cycle)
    if key not in fl.streams:
        bases: dict = {}
        for inst in fl.function.instructions():
            if facts.cycle_of.get(id(inst)) != cycle or inst.opcode not in ("ld", "st") \
                    or state_space(inst) != "global":
                continue
            operand = inst.operands[1] if inst.opcode == "ld" else inst.operands[0]
            if isinstance(operand, ir.Address):
                bytes_ = W * instruction_type(inst).size * vector_count(inst)
                bases[id(operand.base)] = max(bases.get(id(operand.base), _GROUP_LINES),
                                              min(8, -(-bytes_ // 64)))
        lines = sum(bases.values()) or 1
        fl.streams[key] = max(1, min(_MOST_AHEAD, _IN_FLIGHT // lines))
    return fl.streams[key]


def _loop_step(fl: GangLowering, place: Place) -> _Step | None:
    facts = kernel_facts(fl)
    base = facts.registers.get(place.key[0])
    cycle = facts.cycle_of.get(id(fl.inst))
    if base is None or cycle is None:
        return None
    key = ("step", id(base), cycle)
    if key not in fl.streams:
        fl.streams[key] = _step(fl, base, cycle, set())
    return fl.streams[key]


def _step(fl: GangLowering, register, cycle, visiting: set) -> _Step | None:
    """How `register` moves each time around the loop `cycle` (None: not known)."""
    # (one instruction may stand twice: an if-converted region's guarded copy shares the
    # instructions it runs unguarded with the region, as gemm's `&B[kb * N + col]`)
    inside = list({id(inst): inst for inst, c in kernel_facts(fl).writes.get(id(register), ())
                   if c == cycle}.values())
    if not inside:
        return _STAYS
    if len(inside) != 1 or inside[0].guard is not None or id(register) in visiting:
        return None
    inst = inside[0]
    sources = inst.operands[1:]
    if any(s is register for s in sources):     # an induction: r = r + x, x fixed here
        if inst.opcode != "add" or len(sources) != 2 or not _integer(inst):
            return None
        other = sources[1] if sources[0] is register else sources[0]
        if isinstance(other, IntImm):
            return _Step(None, other.value)
        if isinstance(other, ir.Register) and _alike_in_the_warp(fl, other) \
                and _step(fl, other, cycle, visiting) == _STAYS:
            return _Step(other, 1)
        return None
    visiting.add(id(register))
    try:
        return _derived(fl, inst, cycle, visiting)
    finally:
        visiting.discard(id(register))


def _alike_in_the_warp(fl: GangLowering, register) -> bool:
    """Whether every lane that holds `register` holds the same value (uniform, or an
    affine form without %tid.x: a grid-stride loop's `blockDim.x * gridDim.x` is written
    after the branch that leaves out the threads past the end, so it is not uniform)."""
    if register in fl.uniform:
        return True
    form = _form(fl, register, set())
    return form is not None and form.tid == 0


def _derived(fl: GangLowering, inst: ir.Instruction, cycle, visiting: set) -> _Step | None:
    """The step of what `inst` writes from its operands' steps (a sum or a constant
    multiple of one; an operand's product with another that moves is not followed)."""
    if not _integer(inst):
        return None
    steps = []
    for source in inst.operands[1:]:
        if isinstance(source, IntImm | ir.SpecialRegister):
            steps.append(_STAYS)
        elif isinstance(source, ir.Register):
            steps.append(_step(fl, source, cycle, visiting))
        else:
            return None
    if any(s is None for s in steps):
        return None
    op, sources = inst.opcode, inst.operands[1:]
    if op in ("mov", "cvta", "cvt") and len(steps) == 1:
        return steps[0]
    if op in ("add", "sub") and len(steps) == 2:
        return _sum(steps[0], steps[1], 1 if op == "add" else -1)
    factor = sources[1].value if len(sources) >= 2 and isinstance(sources[1], IntImm) \
        else None
    if factor is not None and op in ("mul", "shl", "mad"):
        scale = 1 << factor if op == "shl" else factor
        moved = _Step(steps[0].by, steps[0].scale * scale)
        return moved if op != "mad" else _sum(moved, steps[2], 1)
    if all(s == _STAYS for s in steps):
        return _STAYS
    return None


def _sum(a: _Step, b: _Step, sign: int) -> _Step | None:
    if b.scale == 0:
        return a
    if a.scale == 0:
        return _Step(b.by, sign * b.scale)
    if a.by is b.by:
        return _Step(a.by, a.scale + sign * b.scale)
    return None


def _integer(inst: ir.Instruction) -> bool:
    """An integer instruction whose result is affine in its operands (no carry, no
    saturation, no high half)."""
    types = inst.spec.types
    return bool(types) and all(t[0] in "usb" for t in types) and not inst.spec.get("cc") \
        and not inst.spec.get("sat") and inst.spec.get("mode", "lo") in ("lo", "wide")
