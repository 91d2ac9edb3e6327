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
barriers.

Where the pass made a call test too (the same ranges over a box of %ctaid that holds the
run_blocks call's blocks), the first block of a call runs it, its answer kept in a second
byte (CALL_VERDICT, zeroed as each call starts, the call's blocks and the grid's shape
written beside it: rounds.py): where it passed, each block of the call starts with its
verdict PASSED and runs no test of its own; where it failed, each runs its own as before.
A call of one block runs only its own (rounds.py marks its call FAILED). See
docs/cpu-target-measurements.md, "Session 15: stencil18", "Session 16: stencil19" and
"Session 17: blockpro21".
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I32, I64
from ptxport.codegen.targets.cpu.abi import CTX
from ptxport.codegen.targets.cpu.gang.checks import (
    FAILED,
    PASSED,
    expect,
    inside_one_allocation,
    verdict_field,
)
from ptxport.codegen.targets.cpu.gang.lanes import BLOCK_COPY, CALL_BLOCKS, CALL_VERDICT, is_vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir

__all__ = ["lower_block_test"]


def _scalar(fl: GangLowering, value, t: str):
    v = fl.read(value, t)
    return ll.IRBuilder.extract_element(fl.b, v, ll.Constant(ll.IntType(32), 0)) \
        if is_vec(v) else v


def _passed(fl: GangLowering, ranges) -> ll.Value:
    """i1: every range's conditions hold and it lies in one allocation."""
    passed = I1(1)
    for condition, lo, hi in ranges:
        good = passed if condition is None else fl.b.and_(
            passed, _scalar(fl, condition, "pred"))
        passed = inside_one_allocation(fl, _scalar(fl, lo, "u64"), _scalar(fl, hi, "u64"),
                                       first=good)
    return passed


def _copy_field(fl: GangLowering, at: int):
    return ll.IRBuilder.gep(fl.b, fl.llfn.args[BLOCK_COPY], [I64(at)], source_etype=I8)


def _write(fl: GangLowering, dest, value, t: str) -> None:
    fl.write(dest, value if dest in fl.uniform else fl.b.splat(value), t)


def _pinned(fl: GangLowering, at: int, typ=I32):
    """A field of the block copy, through an empty asm statement that LLVM cannot see
    through nor move out of the test's branch. Read plainly (or atomically: LLVM forwarded
    the stores that made them), the tests' values, each block's or each call's alike in
    all its warps, went to the start of the block (~100 instructions a block) or of the
    call: paid by every block or call, tested or not."""
    value = fl.b.load(_copy_field(fl, at), typ=typ)
    return ll.IRBuilder.call(fl.b, ll.InlineAsm(ll.FunctionType(typ, [typ]), "", "=r,0"),
                             [value])


def _lower_test(fl: GangLowering, inst: ir.Instruction, code, pinned: bool) -> None:
    """The test's instructions (kept aside by the pass); where `pinned`, its %ctaid read
    where it runs (_pinned)."""
    for made in code:
        source = made.operands[-1]
        if pinned and made.opcode == "mov" and isinstance(source, ir.SpecialRegister) \
                and source.name == "%ctaid":
            axis = "xyz".index(source.component)
            fl.target.ctx_field(fl, "ctaid", axis)      # (copied as each block starts)
            fl.inst = inst
            _write(fl, made.operands[0], _pinned(fl, CTX.fields["ctaid"] + 4 * axis),
                   made.operands[0].type.name)
        else:
            fl.lower_instruction(made)
    fl.inst, fl.guard = inst, None


def _box(fl: GangLowering) -> list:
    """[(corner, extent)] (i64) of %ctaid's x, y and z over the call's blocks (rounds.py
    writes their first number and count, and the grid's shape): a run of one row, else
    whole rows of one plane, else whole planes."""
    b = fl.b
    first, count = (_pinned(fl, CALL_BLOCKS + 8 * k, I64) for k in (0, 1))
    gx, gy = (ll.IRBuilder.zext(b, _pinned(fl, CALL_BLOCKS + 16 + 4 * axis), I64)
              for axis in (0, 1))

    def coordinates(n):
        row = ll.IRBuilder.udiv(b, n, gx)
        return (ll.IRBuilder.urem(b, n, gx), ll.IRBuilder.urem(b, row, gy),
                ll.IRBuilder.udiv(b, row, gy), row)

    fx, fy, fz, first_row = coordinates(first)
    lx, ly, lz, last_row = coordinates(b.sub(b.add(first, count), I64(1)))
    row = ll.IRBuilder.icmp_unsigned(b, "==", first_row, last_row)
    plane = ll.IRBuilder.icmp_unsigned(b, "==", fz, lz)
    return [(b.select(row, fx, I64(0)), b.select(row, b.sub(lx, fx), b.sub(gx, I64(1)))),
            (b.select(plane, fy, I64(0)), b.select(plane, b.sub(ly, fy), b.sub(gy, I64(1)))),
            (fz, b.sub(lz, fz))]


def _call_test(fl: GangLowering, inst: ir.Instruction, call, verdict, done):
    """The call test (module docstring), where the call's byte is unknown: where it passes,
    the block's verdict PASSED and a branch to `done`, from the block returned; the builder
    left where the block's own test is to run."""
    b = fl.b
    code, ranges, corners, extents = call
    fl.call_test = True
    field = _copy_field(fl, CALL_VERDICT)
    run, passed_block, own = (fl.llfn.append_basic_block(n) for n in (
        "call_test", "call_tested", "block_own_test"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(
        b, "==", b.load(field, typ=I8), I8(0)), run, own)
    b.position_at_end(run)
    fl.inst = inst
    for axis, (corner, extent) in enumerate(_box(fl)):
        _write(fl, corners[axis], ll.IRBuilder.trunc(b, corner, I32), "u32")
        _write(fl, extents[axis], extent, "s64")
    _lower_test(fl, inst, code, False)
    passed = _passed(fl, ranges)
    b.store(b.select(passed, I8(PASSED), I8(FAILED)), field)
    ll.IRBuilder.cbranch(b, passed, passed_block, own)
    b.position_at_end(passed_block)
    b.store(I8(PASSED), verdict)
    b.branch(done)
    b.position_at_end(own)
    return passed_block


def lower_block_test(fl: GangLowering, inst: ir.Instruction) -> None:
    """The marker `setp.eq.s64 ok, 0, 0`: the block's verdict made known (the test run
    where no warp of the block ran it yet, the call test first where the pass made one and
    the call's is unknown); ok (uniform) where every range passed."""
    b = fl.b
    code, ranges, call = fl.block_tests[id(inst)]
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
    whole = None if call is None else _call_test(fl, inst, call, field, done)
    _lower_test(fl, inst, code, call is not None)
    passed = _passed(fl, ranges)
    b.store(b.select(passed, I8(PASSED), I8(FAILED)), field)
    tested = b.block
    b.branch(done)
    b.position_at_end(done)
    ok = ll.IRBuilder.phi(b, I1)
    ok.add_incoming(I1(1), before)
    ok.add_incoming(I1(0), failed)  # (FAILED there)
    ok.add_incoming(passed, tested)
    if whole is not None:
        ok.add_incoming(I1(1), whole)
    dest = inst.operands[0]
    fl.write(dest, ok if dest in fl.uniform else b.splat(ok), "pred")
