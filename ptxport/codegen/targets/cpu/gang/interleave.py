"""Warp gangs' yields at loop back edges: a block's warps interleaved pass by pass.

A block's warps run in rounds (rounds.py), each until it waits at a barrier or exits, so a
grid-stride loop (`for (i = gid; i < n; i += gridDim.x * blockDim.x)`) ran warp 0's passes,
then warp 1's, ...: each pass 64 KiB-1 MiB from the last, 8 sparse streams one after another
where the hardware prefetchers do best on one dense one. PTX orders a block's warps only
through barriers, warp operations and the memory model, so a loop whose body has no barrier
and no warp operation may run its warps in any interleaving: at such a loop's back edge a
warp whose live lanes all go round again returns to the round loop (a *yield*: a wait that
needs no other warp to arrive), every K passes (CpuOptions.interleave_passes). The next round
resumes only the warps that yielded; a barrier completes (its warps resume) only in a round
after which no warp yielded, i.e. once every live warp waits at it or has exited.

A yield is cheap where little is live at the loop's header: those registers live in the warp's
frame (as across a barrier), and a warp resumes through the round loop, with the header's
segment a constant where every warp yielded there with all 32 lanes (a uniform round).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32
from ptxport.codegen.targets.cpu.gang.lanes import (
    AT_BARRIER,
    BARRIER,
    FULL,
    PARKED,
    PC,
    RESUME,
    RESUME_LANES,
    WHOLE_AT,
    YIELD_COUNT,
    YIELDED,
    vec,
)
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, predecessors, uses_and_defs
from ptxport.passes.segment import is_barrier, is_warp_op

__all__ = ["yield_edges", "lower_yield", "start_count"]

# what a loop's body may not hold for its warps to interleave (block-wide waits and warp
# operations, whose order against other warps' or lanes' work PTX fixes; calls may hold them)
_ORDERED = ("call", "elect", "match", "redux", "mbarrier", "griddepcontrol")


def _ordered(inst: ir.Instruction) -> bool:
    return is_barrier(inst) or is_warp_op(inst) or inst.opcode in _ORDERED


# how many times K a loop that is not a grid- or block-stride one runs between yields (its
# warps' passes are dense already: softmax's row loops, `c += 32`, ran 3-15% slower with
# K = 4 on the GPU host; a yield now and then still lets a warp spinning on another's flag
# give way). Such a loop yields at all only where it may wait for memory (_may_spin).
_DENSE = 64
# instructions whose result is read from memory, which another warp may change (not from
# .local, .param or .const memory, nor through the read-only .nc path)
_READS = ("ld", "ldu", "atom")
_UNSHARED = ("local", "param", "const", "nc")
_ARITHMETIC = ("mov", "mul", "shl", "add", "cvt", "mad", "sub")


def _stride_registers(kernel: ir.Function) -> set:
    """Registers computed from %ntid or %nctaid by arithmetic alone (a block's or grid's
    size: grid- and block-stride loops' steps)."""
    found: set = set()
    grew = True
    while grew:
        grew = False
        for inst in kernel.instructions():
            if inst.opcode not in _ARITHMETIC:
                continue
            uses = uses_and_defs(inst)[0]
            if any(isinstance(op, ir.SpecialRegister) and op.name in ("%ntid", "%nctaid")
                   for op in inst.operands) or uses & found:
                new = may_write(inst) - found
                if new:
                    found |= new
                    grew = True
    return found


def _strided(body, strides: set) -> bool:
    """Whether an add in the loop steps a register by a block's or grid's size (`i +=
    blockDim.x * gridDim.x`): a stride written nowhere in the loop."""
    written = set().union(*(may_write(i) for b in body for i in b.instructions))
    for b in body:
        for inst in b.instructions:
            if inst.opcode != "add":
                continue
            uses = uses_and_defs(inst)[0]
            stepped = may_write(inst) & uses
            if stepped and any(r in strides and r not in written for r in uses - stepped):
                return True
    return False


def _may_spin(body) -> bool:
    """Whether the loop's way out may depend on a value read from memory in the loop (a spin
    on a flag another warp sets: `while (atomicAdd(&flag, 0) == 0)`). A loop whose branches
    depend only on registers it computes from values it does not read from memory in the
    loop (a counted loop) ends without other warps' help, so it needs no yield to let them
    run (softmax's six row loops compiled in 14.4 s of CPU time with yields against 4.1
    without, here)."""
    inside = {id(b) for b in body}
    insts = [inst for b in body for inst in b.instructions]
    # the ways out: a block's last branch where a successor lies outside the loop, and any
    # ret or exit (branches within the body that depend on loaded data do not count)
    outs = [b.instructions[-1] for b in body if b.instructions
            and any(id(s) not in inside for s in b.successors)]
    outs += [inst for inst in insts if inst.opcode in ("ret", "exit")]
    todo = [r for inst in outs for r in uses_and_defs(inst)[0]]
    seen: set = set()
    while todo:
        register = todo.pop()
        if register in seen:
            continue
        seen.add(register)
        for inst in insts:
            if register in may_write(inst):
                if inst.opcode in _READS and not any(map(inst.spec.has, _UNSHARED)):
                    return True
                todo.extend(uses_and_defs(inst)[0])
    return False


def yield_edges(kernel: ir.Function) -> dict[int, tuple[ir.Block, bool]]:
    """id(branch) -> (the loop header it goes back to, whether the loop is a grid- or
    block-stride one), for each back edge (a branch ending a block to that block or an
    earlier one) whose loop (the blocks that reach the branch's block without passing the
    header) has no barrier, warp operation or call, and either is a grid- or block-stride
    loop or may wait for memory (_may_spin)."""
    strides = _stride_registers(kernel)
    index = {id(block): i for i, block in enumerate(kernel.blocks)}
    preds = predecessors(kernel)
    edges = {}
    for i, block in enumerate(kernel.blocks):
        last = block.instructions[-1] if block.instructions else None
        if last is None or last.opcode != "bra":
            continue
        header = last.operands[0] if last.operands else None
        if id(header) not in index or index[id(header)] > i:
            continue
        body, todo = {id(header): header}, [block]
        while todo:
            b = todo.pop()
            if id(b) in body:
                continue
            body[id(b)] = b
            todo.extend(preds[id(b)])
        if any(_ordered(inst) for b in body.values() for inst in b.instructions):
            continue
        strided = _strided(body.values(), strides)
        if strided or _may_spin(body.values()):
            edges[id(last)] = header, strided
    return edges


def start_count(fl) -> None:
    """A fresh warp's count of passes before its next yield (where a loop counts them)."""
    passes = fl.options.interleave_passes
    # (read only at a yield edge: none, no count; stencil's warps stored it all the same)
    if fl.yield_edges and (passes > 1 or any(not strided for _, strided
                                             in fl.yield_edges.values())):
        fl.b.store(I32(passes), fl.frame_field(YIELD_COUNT))


def lower_yield(fl, segment, go_on: ll.Block, strided: bool) -> None:
    """At a yield edge to `segment` (the loop's header), all the mask's lanes going there:
    where K passes have run since the last yield, return to the round loop, resumed at
    `segment` where the mask's lanes are all the warp's live lanes, else by the dispatcher
    (its lanes' counters and the registers live where segments start left in the frame, as
    where a warp leaves a uniform round: a loop that only some lanes run, a spin on a flag
    among them, lets the other warps go on too); else go on to `go_on`."""
    b, fn = fl.b, fl.llfn
    passes = fl.options.interleave_passes * (1 if strided else _DENSE)
    if passes > 1:
        count = b.sub(b.load(fl.frame_field(YIELD_COUNT)), I32(1))
        due, later = fn.append_basic_block("yield_due"), fn.append_basic_block("yield_later")
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_signed(b, "<=", count, I32(0)), due, later)
        b.position_at_end(later)
        b.store(count, fl.frame_field(YIELD_COUNT))
        b.branch(go_on)
        b.position_at_end(due)
        b.store(I32(passes), fl.frame_field(YIELD_COUNT))
    others = b.or_(b.load(fl.others_slot), b.or_(b.load(fl.parked_slot),
                                                  b.load(fl.barrier_slot)))
    alone, apart = fn.append_basic_block("yield_alone"), fn.append_basic_block("yield_apart")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", others, I32(0)), alone, apart)
    b.position_at_end(apart)
    pc = ll.IRBuilder.select(b, fl.mask, b.splat(I32(segment.number)), b.load(fl.pc_slot))
    b.store(I32(-1), fl.frame_field(RESUME))
    b.store(pc, fl.frame_field(PC, vec(I32)), align=16)
    b.store(b.load(fl.parked_slot), fl.frame_field(PARKED))
    b.store(b.load(fl.barrier_slot), fl.frame_field(AT_BARRIER))
    for register, place in fl.kept:
        b.store(b.load(register), place)
    b.ret(I32(YIELDED | BARRIER))
    b.position_at_end(alone)
    whole, part = fn.append_basic_block("yield_whole"), fn.append_basic_block("yield_part")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(fl.mask), I32(FULL)),
                         whole, part)
    b.position_at_end(whole)
    b.ret(I32(YIELDED | (WHOLE_AT + segment.number)))
    b.position_at_end(part)
    b.store(I32(segment.number), fl.frame_field(RESUME))
    b.store(fl.bits(fl.mask), fl.frame_field(RESUME_LANES))
    b.ret(I32(YIELDED | BARRIER))
    if segment.number not in fl.resumed_at:
        fl.resumed_at.add(segment.number)
        fl.resume_switch.add_case(I32(segment.number), segment.llblock)
    fl.yield_points.add(segment.number)
