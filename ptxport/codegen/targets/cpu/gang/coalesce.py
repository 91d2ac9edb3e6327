"""Warp gangs' runs of scalar loads: `ld.global` of 2 or 4 consecutive elements from one base
register (offsets o, o + s, ...), each under its own predicate. Triton's layouts for a size
not known to be a multiple of 16 load a thread's contiguous elements this way, one
predicated `ld.global.b32` each; lowered one by one, each is a gather over the warp (the
lanes' addresses are 4 elements apart). A run is loaded at its first load as one masked
access of the warp's elements (memory.py's interleaved access: element i of lane l under
predicate i of lane l), when the lanes' runs lie one after another and the range they touch
is inside one allocation; else each load on its own, as before (exact faults). Each load of
the run then writes its register where it stands.

A run's loads are read early, so between its first and last load nothing may write memory
or change the base register, the predicates, or the mask (segment.py ends segments at
barriers and warp operations; a branch ends the block).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I32, I64, PTR, value_type
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.cpu.gang.checks import type_name
from ptxport.codegen.targets.cpu.gang.lanes import W, declare
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.target import check_function
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write

_WRITES_MEMORY = {"st", "atom", "red", "cp", "call", "ret", "exit", "bar", "barrier", "trap"}


def _scalar_load(fl: GangLowering, inst: ir.Instruction):
    """(base register, offset, type) of a per-lane scalar ld.global from [register+offset]."""
    if inst.opcode != "ld" or state_space(inst) != "global" or vector_count(inst) != 1:
        return None
    operand = inst.operands[1]
    dest = inst.operands[0]
    if isinstance(dest, ir.VectorValue) and len(dest.elements) == 1:
        dest = dest.elements[0]
    if not isinstance(operand, ir.Address) or not isinstance(operand.base, ir.Register) \
            or not isinstance(dest, ir.Register) or dest.vector or dest in fl.uniform:
        return None
    t = instruction_type(inst)
    return (operand.base, operand.offset, t) if t.size in (4, 8) else None


def find_runs(fl: GangLowering, instructions) -> dict:
    """id(first load) -> the loads of each run in a segment's `instructions`."""
    runs: dict = {}
    claimed: set = set()
    code = list(instructions)
    for i, inst in enumerate(code):
        first = _scalar_load(fl, inst) if id(inst) not in claimed else None
        if first is None:
            continue
        base, offset, t = first
        members = [inst]
        written = {id(r) for r in may_write(inst)}
        for later in code[i + 1:]:
            if id(base) in written or len(members) == 4:
                break
            found = _scalar_load(fl, later)
            if found is not None and found[0] is base and found[2] == t \
                    and found[1] == offset + len(members) * t.size:
                if later.guard is not None and id(later.guard) in written:
                    break       # its predicate would be read before it is set
                members.append(later)
            elif later.opcode in _WRITES_MEMORY:
                break
            written |= {id(r) for r in may_write(later)}
        members = members[:4 if len(members) == 4 else 2]
        if len(members) > 1:
            runs[id(inst)] = members
            claimed |= {id(m) for m in members}
    return runs


def inside_one_allocation(fl: GangLowering, low, high):
    """i1: whether [low, high) lies in one allocation (the site's cache, else the table);
    an empty mask's range counts as inside."""
    b = fl.b
    slot = b.gep(fl.target.ctx_field(fl, "site_cache", typ=PTR), [I64(16 * fl.plan.check_sites)],
                 source_etype=I8)
    fl.plan.check_sites += 1
    hit = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", low, high), b.and_(
        ll.IRBuilder.icmp_unsigned(b, ">=", low, b.load(slot, typ=I64)),
        ll.IRBuilder.icmp_unsigned(b, "<=", high, b.load(
            b.gep(slot, [I64(8)], source_etype=I8), typ=I64))))
    before = b.block
    search, done = fl.llfn.append_basic_block("run_search"), fl.llfn.append_basic_block(
        "run_checked")
    ll.IRBuilder.cbranch(b, hit, done, search)
    b.position_at_end(search)
    found = ll.IRBuilder.call(b, check_function(fl.llfn.module),
                              [fl.llfn.args[0], low, b.sub(high, low), slot])
    searched = b.block
    b.branch(done)
    b.position_at_end(done)
    ok = ll.IRBuilder.phi(b, I1)
    ok.add_incoming(I1(1), before)
    ok.add_incoming(found, searched)
    return ok


def interleaved_load(fl: GangLowering, t, masks: list, pointer) -> list:
    """One masked load of W * len(masks) elements at `pointer` (lane l's element k under
    masks[k] of lane l), taken apart into one vector of the lanes per element."""
    b, element = fl.b, value_type(t)
    count = len(masks)
    n = W * count
    wide = ll.VectorType(element, n)
    parts = list(masks)
    while len(parts) > 2:
        parts = [ll.IRBuilder.shuffle_vector(b, parts[i], parts[i + 1], ll.Constant(
            ll.VectorType(I32, 2 * W), list(range(2 * W)))) for i in range(0, len(parts), 2)]
    mask = ll.IRBuilder.shuffle_vector(b, parts[0], parts[1], ll.Constant(
        ll.VectorType(I32, n), [(i % count) * W + i // count for i in range(n)]))
    fn = declare(fl.llfn.module, f"llvm.masked.load.v{n}{type_name(element)}.p0", wide,
                 [PTR, I32, mask.type, wide])
    v = ll.IRBuilder.call(b, fn, [pointer, I32(t.size), mask, ll.Constant(wide, None)])
    return [ll.IRBuilder.shuffle_vector(b, v, ll.Constant(wide, None), ll.Constant(
        ll.VectorType(I32, W), [lane * count + k for lane in range(W)])) for k in range(count)]
