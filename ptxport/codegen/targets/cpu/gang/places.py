"""Warp gangs' memory operands before they are lowered: the Place of an [address] operand
(its lanes' addresses, read once per segment), the groups of a segment's accesses that share
one range check (access_groups), and classify.py's slots for bases that several segments
read (class_slots). memory.py lowers the accesses themselves.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.cpu.gang import strided
from ptxport.codegen.targets.cpu.gang.checks import Place, lane_addresses
from ptxport.codegen.targets.cpu.gang.classify import (
    alone_guarded_out,
    form_of,
    make_class_slots,
)
from ptxport.codegen.targets.cpu.gang.coalesce import find_runs
from ptxport.codegen.targets.cpu.gang.lanes import GangUnsupported
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, uses_and_defs
from ptxport.passes.segment import is_barrier
from ptxport.passes.shared_bounds import inside


def vector_access(fl: GangLowering, inst: ir.Instruction):
    """(address operand, space, element type, count) of a ld or st that _access lowers lane
    by lane (not a parameter, not a load every lane makes alike), else None."""
    if inst.opcode not in ("ld", "st"):
        return None
    space = state_space(inst)
    if inst.opcode == "ld":
        defs = uses_and_defs(inst)[1]
        if space == "param" or (defs and defs <= fl.uniform):
            return None
    operand = inst.operands[1] if inst.opcode == "ld" else inst.operands[0]
    if not isinstance(operand, ir.Address):
        return None
    return operand, space, instruction_type(inst), vector_count(inst)


def access_groups(fl: GangLowering, instructions) -> tuple[dict, dict]:
    """The accesses of a segment that read the same base (before it is written again) with
    elements of one size: id(instruction) -> group, and group -> (lowest, highest) offset.
    Their lanes' addresses differ by constants only, so one range check covers the group
    (group_check). Guarded ones too in the full-mask copy, where another access shares
    their group (classify.checked_group checks it for every lane: a stencil's halo loads
    beside its main load)."""
    fl.runs, fl.pending = find_runs(fl, instructions), {}
    full = isinstance(fl.mask, ll.Constant)
    written: dict = {}
    group_of, span = {}, {}
    for inst in instructions:
        found = vector_access(fl, inst) if inst.guard is None or full else None
        if found is not None:
            operand, space, t, count = found
            base = id(operand.base)
            group = ((base, space), t.size, written.get(base, 0))
            group_of[id(inst)] = group
            low, high = span.get(group, (operand.offset, operand.offset))
            span[group] = (min(low, operand.offset),
                           max(high, operand.offset + (count - 1) * t.size))
        for reg in may_write(inst):
            written[id(reg)] = written.get(id(reg), 0) + 1
    return alone_guarded_out(instructions, group_of), span


def proven_groups(fl: GangLowering, instructions: list) -> set:
    """The groups of access_groups whose every member is a shared-memory access that
    passes/shared_bounds.py finds inside its variable, each in one of if_convert.py's
    skippable runs (fl.skips): classify.checked_group checks none of them at run time, so
    the members share no check, and runs may part them (a stencil's five tile loads, split
    between an if and its else). A member outside every run is made anyway; parting it
    from a run's lone load (a scan's `if (lane < warps) v = totals[lane]`, stored back
    later) only added the run's tests (+28 instructions a block)."""
    in_runs: set = set()
    for i, inst in enumerate(instructions):
        skip = fl.skips.get(id(inst))
        if skip is not None:
            in_runs.update(id(member) for member in instructions[i:i + skip[1]])
    proven: dict = {}
    for inst in instructions:
        group = fl.group_of.get(id(inst))
        if group is None:
            continue
        found = vector_access(fl, inst)
        size = found[2].size * found[3] if found is not None else 0
        proven[group] = proven.get(group, True) and id(inst) in in_runs \
            and found is not None and found[1] == "shared" \
            and inside(fl.shared_bounds.get(inst), size)
    return {group for group, yes in proven.items() if yes}


def class_slots(fl: GangLowering, segments) -> None:
    """classify.py's slots for the bases of the lane-by-lane accesses that more than one of
    `segments` makes (with one access size) between the same two block barriers (in
    program order: a warp resuming after a barrier has emptied them), of registers written
    once (_written_once)."""
    bases: dict = {}
    region = 0
    for i, s in enumerate(segments):
        before = segments[i - 1] if i else None
        if before is not None and before.end > before.start \
                and is_barrier(before.block.instructions[before.end - 1]):
            region += 1
        for inst in s.block.instructions[s.start:s.end]:
            found = vector_access(fl, inst)
            if found is None or not isinstance(found[0].base, ir.Register):
                continue
            operand, space, t, count = found
            key = ((id(operand.base), space), t.size * count)
            bases.setdefault(key, (operand.base, {}))[1].setdefault(region, set()).add(
                s.number)
    once = _written_once(fl.function)
    make_class_slots(fl, {key: (register, max(regions.values(), key=len))
                          for key, (register, regions) in bases.items() if register in once})


def _written_once(kernel: ir.Function) -> set:
    """Registers with one write, outside every loop: a base computed once (a stencil's row
    pointer), whose classification later segments can reuse; one rewritten in a loop (a
    grid-stride index) is classified anew each pass, and keeping each answer cost a
    reduction's loop 4%."""
    writes: dict = {}
    for block in kernel.blocks:
        for inst in block.instructions:
            for register in may_write(inst):
                writes.setdefault(register, []).append(block)
    looping = set()
    for block in kernel.blocks:
        seen, todo = set(), list(block.successors)
        while todo:
            b = todo.pop()
            if b is block:
                looping.add(id(block))
                break
            if id(b) not in seen:
                seen.add(id(b))
                todo.extend(b.successors)
    return {r for r, blocks in writes.items()
            if len(blocks) == 1 and id(blocks[0]) not in looping}


def place_of(fl: GangLowering, operand, space) -> Place:
    """The Place of a memory operand; the base's lanes are read once per segment while the
    base register is not written."""
    if not isinstance(operand, ir.Address):
        raise GangUnsupported("a memory operand that is not [address]")
    key = (id(operand.base), space)
    addrs = fl.places.get(key)
    if addrs is None:
        host, offsets = lane_addresses(fl, ir.Address(operand.base, 0), space)
        addrs = host if offsets is None else offsets
        fl.places[key] = addrs
    lanes = form_of(fl, operand.base) if isinstance(operand.base, ir.Register) else None
    if lanes is not None and addrs.type.element.width != operand.base.type.bits:
        lanes = None        # (a 32-bit global address, widened: the offsets need not hold)
    stride = strided.strided_form(lanes, addrs.type.element.width)
    if lanes is not None and lanes.scaled:
        lanes = None        # (classify.py knows constant offsets only)
    return Place(addrs, space == "shared", operand.offset, key, lanes, stride)
