"""Idle warps' rounds ended at once: where a warp resumed after a barrier finds a test of
`threadIdx.x` against a value alike in every warp false (or true) in all its lanes, and the
test stays so for every later warp, and the code it then runs up to the next barrier reads
and writes no memory and computes only values alike in every warp, every later warp would
run the same code with the same result. The warp returns its wait with the SKIP_REST bit;
the uniform round (rounds.py) copies its registers that such code writes into the later
warps' frames, notes them as waiting where it waits, and ends the round without resuming
them. A tree reduction's or a Blelloch scan's `if (t < d)` levels: most warps of most levels.

Why this is the PTX model's outcome. Between two barriers the warps of a block are ordered by
nothing: any interleaving of their instructions is a valid execution. A warp that reads and
writes no memory until the next barrier has an effect only on its own registers, and each of
those is a function of registers alike in every warp (*block-uniform*, below), which are
equal in every warp at a barrier; so running it later, earlier, or copying another warp's
results gives the same registers. Which warps are so is known from the first one that is:
the warps of a block whose rows are a multiple of 32 threads and which has one row
(ntid.y = ntid.z = 1) hold threadIdx.x = 32 w + lane, so for `t < d` (true on a prefix of
the block's threads) every lane of warp w false means every lane of each later warp false;
for `t > d`, `t >= d` (true on a suffix) every lane true means the same of the later ones.
The warps are run in order (w = 0, 1, ...) in a uniform round, where every warp waits at the
same barrier with all 32 lanes: the later warps have not run this round and hold what they
held at the barrier.

*Block-uniform* registers: every write an arithmetic, logic, comparison or conversion
instruction (or `ld.param`) whose operands are immediates, block-uniform registers and
%ntid, %nctaid, %ctaid, unguarded or guarded by a block-uniform predicate, outside the region
of every branch on a predicate that is not block-uniform (the blocks reachable from the
branch before its immediate post-dominator: there some warps run and others do not; but for
a branch to a block that only returns, which no thread has taken where every warp waits
with all 32 lanes: a warp with an exited lane never does, so a block with one runs no
uniform round and skips nothing). Where
a barrier lies in such a region, warps may pass different sequences of barriers and nothing
is block-uniform here. Otherwise every warp runs the same writes of such a register, with
the same values, between the same two barriers.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32
from ptxport.codegen.targets.cpu.gang.full_entries import is_full
from ptxport.codegen.targets.cpu.gang.lanes import SKIP_REST, WHOLE_AT
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.gang.warp_bounds import branch_bounds
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, state_space, uses_and_defs
from ptxport.ir.types import TYPES
from ptxport.passes.lane_forms import widening
from ptxport.passes.segment import Segment, is_barrier
from ptxport.passes.uniformity import immediate_post_dominator, only_returns, post_dominators
from ptxport.ptx.ast import IntImm

__all__ = ["block_uniform", "plan", "enter", "before_branch", "whole_wait"]

_VALUES = {"add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg",
           "min", "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "setp", "set",
           "selp", "slct", "mov", "cvt", "bfe", "bfi", "prmt", "lop3", "shf", "popc", "clz",
           "brev", "bfind", "szext", "bmsk", "ld"}
_BLOCK_SPECIALS = ("%ntid", "%nctaid", "%ctaid")
# a test's ordering -> whether it holds on a prefix of the threads (t < d) rather than a
# suffix (t > d), with threadIdx.x on the left
_PREFIX = {"lt": True, "le": True, "lo": True, "ls": True,
           "gt": False, "ge": False, "hi": False, "hs": False}


def _block_operand(value) -> bool:
    """An operand alike in every thread of the block but for its registers (checked apart)."""
    if isinstance(value, ir.SpecialRegister):
        return value.name in _BLOCK_SPECIALS
    if isinstance(value, ir.VectorValue | ir.ListValue):
        return all(_block_operand(e) for e in value.elements)
    if isinstance(value, ir.PairValue):
        return _block_operand(value.first) and _block_operand(value.second)
    if isinstance(value, ir.NotValue | ir.NegValue):
        return _block_operand(value.value)
    if isinstance(value, ir.Address):
        return value.base is None or isinstance(value.base, ir.Register | ir.Variable)
    return True


def _integer(inst: ir.Instruction) -> bool:
    return all(not TYPES[t].is_float for t in inst.spec.types if t in TYPES)


def _block_value(inst: ir.Instruction, varying: set) -> bool:
    if inst.opcode not in _VALUES or not _integer(inst) or widening(inst):
        return False
    if inst.opcode == "ld" and state_space(inst) != "param":
        return False
    if inst.guard is not None and inst.guard in varying:
        return False
    return not uses_and_defs(inst)[0] & varying and all(
        _block_operand(o) for o in inst.operands[1:])


def _region(block: ir.BasicBlock, join: int | None) -> set[int]:
    seen: set[int] = set()
    work = [s for s in block.successors if id(s) != join]
    while work:
        b = work.pop()
        if id(b) not in seen:
            seen.add(id(b))
            work.extend(s for s in b.successors if id(s) != join)
    return seen


def block_uniform(kernel: ir.Function) -> set:
    """The block-uniform registers (the module's docstring); empty where a barrier lies in
    a region that some warps may run and others not."""
    registers = set(kernel.registers.values())
    varying = {r for r in registers if r.vector}
    post = post_dominators(kernel.blocks)
    while True:
        split: set[int] = set()
        for block in kernel.blocks:
            last = block.instructions[-1] if block.instructions else None
            if last is not None and last.opcode == "bra" and last.guard in varying \
                    and not any(only_returns(s) for s in block.successors):
                split |= _region(block, immediate_post_dominator(block, post))
        grown = set(varying)
        for block in kernel.blocks:
            for inst in block.instructions:
                written = may_write(inst)
                if written - grown and (id(block) in split or not _block_value(inst, grown)):
                    grown |= written
        if grown == varying:
            break
        varying = grown
    if any(is_barrier(i) for b in kernel.blocks if id(b) in split for i in b.instructions):
        return set()
    return registers - varying


def _safe(inst: ir.Instruction, uniform: set) -> bool:
    """Reads and writes no memory and writes block-uniform registers only (a barrier ends
    the code, a branch on a block-uniform predicate goes alike in every warp)."""
    if is_barrier(inst):
        return inst.guard is None
    if inst.opcode == "bra":
        return inst.guard is None or inst.guard in uniform
    return _block_value(inst, set()) and bool(may_write(inst)) and may_write(inst) <= uniform \
        and (inst.guard is None or inst.guard in uniform)


def _test(code: list, uniform: set, thread_x: set):
    """(setp, whether it holds on a prefix of the threads) where `code` (a segment after a
    barrier) ends with a branch on a test of threadIdx.x against a block-uniform value and
    runs only safe instructions before it; else None."""
    last = code[-1] if code else None
    if last is None or last.opcode != "bra" or not isinstance(last.guard, ir.Register):
        return None
    tests = [i for i in code[:-1] if last.guard in may_write(i)]
    if len(tests) != 1 or tests[0].opcode != "setp" or tests[0].guard is not None \
            or len(tests[0].operands) != 3 or tests[0].spec.get("boolop") \
            or tests[0].spec.get("cmp") not in _PREFIX or not _integer(tests[0]):
        return None
    setp = tests[0]
    if not all(_safe(i, uniform) for i in code[:-1] if i is not setp):
        return None
    left, right = setp.operands[1:]

    def block_side(value):
        return isinstance(value, IntImm) or (isinstance(value, ir.Register)
                                             and value in uniform)
    prefix = _PREFIX[setp.spec.get("cmp")]
    if left in thread_x and block_side(right):
        return setp, prefix
    if right in thread_x and block_side(left):
        return setp, not prefix
    return None


def plan(fl: GangLowering, kernel: ir.Function, segments: list[Segment], offsets: dict,
         frame_slots: set) -> None:
    """Find the segments after barriers that end with such a test (fl.idle_tests: id(bra)
    -> whether the test holds on a prefix) and the segments whose code is safe
    (fl.idle_safe: numbers); fl.idle_copies: the frame slots (offset, bytes) of the
    registers those write, which a skipped warp takes from the warp that skipped it
    (`frame_slots`: the registers kept in the frame as they are, at `offsets`). Leaves
    fl.idle_flag None where nothing is found."""
    fl.idle_flag, fl.idle_tests, fl.idle_safe, fl.idle_copies = None, {}, set(), []
    x, y, z = fl.block
    if not fl.options.skip_idle_warps or y != 1 or z != 1 or x % 32 or fl.yield_edges:
        return
    uniform = block_uniform(kernel)
    if not uniform:
        return
    codes = {s.number: s.block.instructions[s.start:s.end] for s in segments
             if s.block is not None}
    fl.idle_safe = {n for n, code in codes.items()
                    if code and all(_safe(i, uniform) for i in code)}
    for s in segments:
        if s.number in fl.idle_safe or s.block is None or s.start == 0 \
                or not is_barrier(s.block.instructions[s.start - 1]):
            continue
        found = _test(codes[s.number], uniform, fl.thread_x)
        if found is not None and found[0].operands[0] not in frame_slots \
                and _stable_side(fl, codes[s.number][-1], found[1]) in fl.idle_safe:
            fl.idle_tests[id(codes[s.number][-1])] = found[1]
    tested = [code for code in codes.values() if code and id(code[-1]) in fl.idle_tests]
    written = set().union(*(may_write(i) for n in fl.idle_safe for i in codes[n]),
                          *(may_write(i) for code in tested for i in code))
    copies = sorted((reg for reg in written if reg in frame_slots), key=lambda r: r.name)
    if not fl.idle_tests or any(reg not in fl.uniform or reg not in uniform for reg in copies):
        return
    fl.idle_copies = [(offsets[reg.name], 8 * (reg.vector or 1)) for reg in copies]
    fl.idle_flag = fl.entry_alloca(I1, "idle_rest")
    fl.b.store(I1(0), fl.idle_flag)     # (the builder is at the function's entry)


def _stable_side(fl: GangLowering, branch: ir.Instruction, prefix: bool) -> int:
    """The segment a warp goes to from `branch` where its test holds on the stable side (no
    lane for a prefix test, every lane for a suffix one)."""
    taken = (not prefix) != bool(branch.guard_negated)
    return (fl.first_segment[id(branch.operands[0])] if taken
            else fl.next_segment(branch)).number


def enter(fl: GangLowering, segment: Segment) -> None:
    """At the start of a copy of `segment`: code that is not safe forgets the test."""
    if fl.idle_flag is not None and segment.number not in fl.idle_safe:
        fl.b.store(I1(0), fl.idle_flag)


def before_branch(fl: GangLowering, inst: ir.Instruction) -> None:
    """At a planned test's branch, under the full mask in a uniform round: every later warp
    holds the test as this one does where the test's bounds say that its lanes hold it on
    the stable side (none of them for a prefix test, all for a suffix one)."""
    prefix = fl.idle_tests.get(id(inst)) if fl.idle_flag is not None else None
    if prefix is None or not is_full(fl.mask):
        return
    bounds = fl.warp_bounds.get(id(inst.guard))
    if bounds is None or branch_bounds(fl, inst) is None:
        return
    every, none = bounds[:2]
    b = fl.b
    in_round = ll.IRBuilder.icmp_signed(b, ">=", fl.resume_point, I32(0))
    b.store(b.and_(in_round, none if prefix else every), fl.idle_flag)


def whole_wait(fl: GangLowering, number: int) -> ll.Value:
    """The result of a warp that waits with all 32 lanes at the barrier before segment
    `number`: with SKIP_REST where it ran only a planned test's stable side and safe code."""
    result = I32(WHOLE_AT + number)
    if fl.idle_flag is None or not is_full(fl.mask):
        return result
    b = fl.b
    return ll.IRBuilder.select(b, b.load(fl.idle_flag), I32(SKIP_REST | (WHOLE_AT + number)),
                               result)
