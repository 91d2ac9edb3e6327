"""Warp gangs' block tests (passes/block_checks.py): whether every thread of the block may
make the covered global accesses unchecked, decided by the block's first warp to get
there and remembered for the others in a byte of run_blocks' block copy (VERDICT).

rounds.py zeroes the byte (unknown) where each block starts, as it copies the block
context's fields there; the block copy is on run_blocks' stack and reached by the inlined
gang functions alone, so LLVM keeps the byte in a register across the block's warps. The
test depends only on the block's index, the launch's parameters and grid, and the
allocation table, all fixed in a launch: the first warp that reads the byte unknown runs
the test's instructions (kept aside by the pass), then each range against the allocations
(checks.inside_one_allocation), and stores PASSED or FAILED; the others read it. A covered
access reads the byte again (verdict_passed): the marker, at the kernel's start, has made
it known in every warp that gets there, and nothing is kept in a warp's frame across
barriers. See docs/cpu-target-measurements.md, "Session 15: stencil18" and "Session 16:
stencil19".
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8
from ptxport.codegen.targets.cpu.gang.checks import (
    FAILED,
    PASSED,
    expect,
    inside_one_allocation,
    verdict_field,
)
from ptxport.codegen.targets.cpu.gang.lanes import is_vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir

__all__ = ["lower_block_test"]


def _scalar(fl: GangLowering, value, t: str):
    v = fl.read(value, t)
    return ll.IRBuilder.extract_element(fl.b, v, ll.Constant(ll.IntType(32), 0)) \
        if is_vec(v) else v


def lower_block_test(fl: GangLowering, inst: ir.Instruction) -> None:
    """The marker `setp.eq.s64 ok, 0, 0`: the block's verdict made known (the test run
    where no warp of the block ran it yet); ok (uniform) where every range passed."""
    b = fl.b
    code, ranges = fl.block_tests[id(inst)]
    fl.verdict_reset = True
    field = verdict_field(fl)
    told = b.load(field, typ=I8)
    llfn = fl.llfn
    test, failed, done = (llfn.append_basic_block(n) for n in (
        "block_test", "block_test_fails", "block_tested"))
    before = b.block
    # (passed: one compare; a failed or unknown verdict off the hot path)
    expect(fl, ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", told, I8(PASSED)),
                                    done, failed))
    b.position_at_end(failed)
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", told, I8(0)), test, done)
    b.position_at_end(test)
    for made in code:           # (the test's own instructions: kept aside by the pass)
        fl.lower_instruction(made)
    fl.inst, fl.guard = inst, None
    passed = I1(1)
    for condition, lo, hi in ranges:
        good = passed if condition is None else b.and_(passed, _scalar(fl, condition, "pred"))
        passed = inside_one_allocation(fl, _scalar(fl, lo, "u64"), _scalar(fl, hi, "u64"),
                                       first=good)
    b.store(b.select(passed, I8(PASSED), I8(FAILED)), field)
    tested = b.block
    b.branch(done)
    b.position_at_end(done)
    ok = ll.IRBuilder.phi(b, I1)
    ok.add_incoming(I1(1), before)
    ok.add_incoming(I1(0), failed)  # (FAILED there)
    ok.add_incoming(passed, tested)
    dest = inst.operands[0]
    fl.write(dest, ok if dest in fl.uniform else b.splat(ok), "pred")
