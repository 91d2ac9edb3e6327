"""mbarrier (PTX ISA 9.7.13.15): barrier objects in shared memory with phases, arrival counts
and transaction counts, used by cuda::barrier, cuda::pipeline and asynchronous copies.

PTX leaves the 64-bit object's layout opaque; ptxport's (every target that lowers mbarrier
itself, i.e. all but NVPTX, which keeps the instructions):

    bits  0..20  pending arrivals of the current phase      (PTX: count is at most 2^20 - 1)
    bits 21..41  expected arrivals (the count a phase starts with; arrive_drop lowers it)
    bits 42..62  pending transaction count, two's complement (PTX: |tx-count| < 2^20)
    bit  63      the current phase's parity

Every update is one compare-and-swap of the whole word. A phase completes when its pending
arrivals and its transaction count are both zero: the parity flips and the pending count
starts again from the expected count. The opaque `state` an arrive returns is the word before
the arrive, so it holds the phase it arrived on; a wait on `state` completes once the phase
has moved on, a `.parity` wait once the current parity differs from the operand (the phase of
that parity has completed). Waiting itself goes through the target: `poll` for test_wait (non-
blocking), `wait_until` for try_wait (which may block until the phase completes: allowed, as
its time limit is the implementation's), so that a target that runs a block's threads one at a
time (the CPU) can let the others run.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I64, FunctionLowering, lowering
from ptxport.codegen.ops.atomic import cas_loop
from ptxport.codegen.ops.data import state_space
from ptxport.ir import nodes as ir
from ptxport.ptx.ast import Sink

__all__ = ["mbarrier", "PENDING_BITS"]

PENDING_BITS = 21
_MASK = (1 << PENDING_BITS) - 1
_EXPECTED_SHIFT, _TX_SHIFT, _PHASE_SHIFT = 21, 42, 63


def _field(b, word, shift: int):
    return b.and_(b.lshr(word, I64(shift)), I64(_MASK))


def _tx(b, word):
    """The transaction count, sign-extended from its 21 bits."""
    return b.ashr(b.shl(word, I64(64 - _TX_SHIFT - PENDING_BITS)), I64(64 - PENDING_BITS))


def _phase(b, word):
    return b.lshr(word, I64(_PHASE_SHIFT))


def _word(b, pending, expected, tx, phase):
    word = b.or_(b.and_(pending, I64(_MASK)), b.shl(b.and_(expected, I64(_MASK)),
                                                     I64(_EXPECTED_SHIFT)))
    word = b.or_(word, b.shl(b.and_(tx, I64(_MASK)), I64(_TX_SHIFT)))
    return b.or_(word, b.shl(phase, I64(_PHASE_SHIFT)))


def _advance(b, pending, expected, tx, phase, may_complete: bool):
    """The word after an update left `pending` arrivals and `tx`: the phase completes (and the
    next starts) when both are zero."""
    if not may_complete:
        return _word(b, pending, expected, tx, phase)
    complete = b.and_(b.icmp_unsigned("==", pending, I64(0)), b.icmp_signed("==", tx, I64(0)))
    return _word(b, b.select(complete, expected, pending), expected, tx,
                 b.select(complete, b.xor(phase, I64(1)), phase))


def _count(fl: FunctionLowering, operand) -> ll.Value:
    value = fl.read(operand, "b32")
    return fl.b.zext(value, I64)


@lowering("mbarrier")
def mbarrier(fl: FunctionLowering, inst: ir.Instruction) -> None:
    spec = inst.spec
    ops = spec.get("op")
    ops = (ops,) if isinstance(ops, str) else tuple(ops or ())
    if spec.get("multicast") or "check_layout" in ops or spec.get("mbar_layout"):
        raise fl.unsupported(inst, "mbarrier multicast and layout forms are not implemented")
    b = fl.b
    operands = list(inst.operands)
    if ops == ("pending_count",):
        state = fl.read(operands[1], "b64")
        fl.write(operands[0], b.trunc(b.and_(state, I64(_MASK)), ll.IntType(32)), "u32")
        return
    dest = None
    if ops[0] in ("arrive", "arrive_drop", "test_wait", "try_wait"):
        dest = operands.pop(0)
    address = operands.pop(0)
    if ops[0] in ("test_wait", "try_wait"):
        parity = spec.has("parity")

        def completed():
            # everything read again: a target may have let other threads run in between
            pointer = fl.pointer(address, state_space(inst), 8)
            if parity:
                wanted = b.and_(b.zext(fl.read(operands[0], "b32"), I64), I64(1))
            else:
                wanted = _phase(b, fl.read(operands[0], "b64"))
            word = b.load_atomic(pointer, "acquire", 8, typ=I64)
            return b.icmp_unsigned("!=", _phase(b, word), wanted)

        if ops[0] == "test_wait":
            done = fl.target.poll(fl, inst, completed)
        else:
            fl.target.wait_until(fl, inst, completed)
            done = ll.Constant(I1, 1)
        fl.write(dest, done, "pred")
        return
    pointer = fl.pointer(address, state_space(inst), 8, write=True)
    if ops == ("init",):
        count = _count(fl, operands[0])
        fl.store_atomic(_word(b, count, count, I64(0), I64(0)), pointer, "release", 8)
        return
    if ops == ("inval",):
        fl.store_atomic(I64(0), pointer, "release", 8)
        return
    if ops in (("expect_tx",), ("complete_tx",)):
        amount = _count(fl, operands[0])

        def transact(word):
            tx = _tx(b, word)
            tx = b.add(tx, amount) if ops == ("expect_tx",) else b.sub(tx, amount)
            return _advance(b, _field(b, word, 0), _field(b, word, _EXPECTED_SHIFT), tx,
                            _phase(b, word), ops == ("complete_tx",))

        cas_loop(fl, pointer, I64, transact, "acq_rel")
        return
    if ops[0] in ("arrive", "arrive_drop"):
        _arrive(fl, inst, ops, dest, pointer, operands)
        return
    raise fl.unsupported(inst, f"mbarrier.{'.'.join(ops)}")


def _arrive(fl: FunctionLowering, inst, ops, dest, pointer, operands) -> None:
    """arrive{.expect_tx | .noComplete}, arrive_drop{...}: state, [a]{, count | txCount}."""
    b = fl.b
    expect_tx = "expect_tx" in ops
    no_complete = inst.spec.has("noComplete")
    tx_count = _count(fl, operands.pop(0)) if expect_tx else I64(0)
    count = _count(fl, operands.pop(0)) if operands else I64(1)
    drop = ops[0] == "arrive_drop"

    def arrive(word):
        expected = _field(b, word, _EXPECTED_SHIFT)
        if drop:
            expected = b.sub(expected, count)
        tx = b.add(_tx(b, word), tx_count)
        pending = b.sub(_field(b, word, 0), count)
        return _advance(b, pending, expected, tx, _phase(b, word), not no_complete)

    old = cas_loop(fl, pointer, I64, arrive, "acq_rel")
    if dest is not None and not isinstance(dest, Sink):
        fl.write(dest, old, "b64")
