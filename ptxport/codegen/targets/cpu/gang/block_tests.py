"""Warp gangs' block tests (passes/block_checks.py): whether every thread of the block may
make the covered global accesses unchecked, decided by the block's first warp to get
there and remembered for the others in a slot of the worker's site cache.

The slot's two words hold the block whose verdict they keep: %ctaid.x and .y as one word
(the block copy's fields at 28 and 32, loaded as one i64), then %ctaid.z + 1, plus
2^(40 + r) for each range r that failed (passes/block_checks.py: at most 24). The site
cache is zero at each checked launch (without allocations, each site's second word is all
ones, never a %ctaid.z + 1 plus failed bits: a launch like the last keeps the words, and
its verdicts, for the same parameters), and within one launch a worker runs a block once,
so a key found there is this launch's verdict for this block: the test depends only on the
block's index, the launch's parameters and grid, and the allocation table, all fixed in a
launch. A miss (the block's first warp, or a slot another block took) runs the test's
instructions, kept aside by the pass, then each range against the allocations
(checks.inside_one_allocation), and stores the verdict. Per warp the hit costs about what
one group's own check did (two loads and compares of the slot, the ok kept across
barriers in the warp's frame): see docs/cpu-target-measurements.md, "Session 15:
stencil18".
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I64, PTR
from ptxport.codegen.targets.cpu.gang.checks import expect, inside_one_allocation
from ptxport.codegen.targets.cpu.gang.lanes import is_vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir

_FAILED = 1 << 40


def _scalar(fl: GangLowering, value, t: str):
    v = fl.read(value, t)
    return ll.IRBuilder.extract_element(fl.b, v, ll.Constant(ll.IntType(32), 0)) \
        if is_vec(v) else v


def lower_block_test(fl: GangLowering, inst: ir.Instruction) -> None:
    """The marker `setp.eq.s64 ok, 0, 0`: ok (uniform) where every range passed, by the
    verdict (a bit a range) in the slot where it holds this block's, else by the test,
    whose verdict it then stores there."""
    b = fl.b
    code, ranges = fl.block_tests[id(inst)]
    slot = b.gep(fl.target.ctx_field(fl, "site_cache", typ=PTR),
                 [I64(16 * fl.plan.check_sites)], source_etype=I8)
    fl.plan.check_sites += 1
    xy = fl.target.ctx_field(fl, "ctaid", typ=I64)
    z = b.add(b.zext(fl.target.ctx_field(fl, "ctaid", 2), I64), I64(1))
    second = b.gep(slot, [I64(8)], source_etype=I8)
    told = b.sub(b.load(second, typ=I64), z)
    known = b.and_(ll.IRBuilder.icmp_unsigned(b, "==", told, I64(0)),
                   ll.IRBuilder.icmp_unsigned(b, "==", b.load(slot, typ=I64), xy))
    llfn = fl.llfn
    test, failed, done = (llfn.append_basic_block(n) for n in (
        "block_test", "block_test_fails", "block_tested"))
    before = b.block
    # (all passed: one compare a word; a verdict with a failed range off the hot path)
    expect(fl, ll.IRBuilder.cbranch(b, known, done, failed))
    b.position_at_end(failed)
    same = b.and_(ll.IRBuilder.icmp_unsigned(b, "==", b.and_(told, I64(_FAILED - 1)),
                                             I64(0)),
                  ll.IRBuilder.icmp_unsigned(b, "==", b.load(slot, typ=I64), xy))
    ll.IRBuilder.cbranch(b, same, done, test)
    b.position_at_end(test)
    for made in code:           # (the test's own instructions: kept aside by the pass)
        fl.lower_instruction(made)
    fl.inst, fl.guard = inst, None
    fails = I64(0)
    for index, (condition, lo, hi) in enumerate(ranges):
        good = I1(1) if condition is None else _scalar(fl, condition, "pred")
        good = inside_one_allocation(fl, _scalar(fl, lo, "u64"), _scalar(fl, hi, "u64"),
                                     first=good)
        fails = b.or_(fails, b.select(good, I64(0), I64(_FAILED << index)))
    b.store(xy, slot)
    b.store(b.add(z, fails), second)
    passed = ll.IRBuilder.icmp_unsigned(b, "==", fails, I64(0))
    tested = b.block
    b.branch(done)
    b.position_at_end(done)
    ok = ll.IRBuilder.phi(b, I1)
    ok.add_incoming(I1(1), before)
    ok.add_incoming(I1(0), failed)      # (told is not 0 there: a range failed)
    ok.add_incoming(passed, tested)
    dest = inst.operands[0]
    fl.write(dest, ok if dest in fl.uniform else b.splat(ok), "pred")
