"""Stopping a running CPU launch: the code compiled kernels run to look at the launch's stop
word, which a watchdog (LaunchConfig(timeout=...)) sets through the block context's "stop"
field (abi.py's CTX). Loops look at it (target.py's loop_header, gang/'s loop-header
segments), and so do the block loops between blocks; cpu_executor.py then leaves the blocks
and reports KernelTimeoutError.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, FunctionLowering

__all__ = ["STOPPED", "POLL_PERIOD", "branch_on_stop", "poll_stop"]

# What a thread function returns when the launch was asked to stop (as it returns a trap's
# number or cpu.FAULTED).
STOPPED = -(1 << 26)


def branch_on_stop(b: ll.IRBuilder, stop, stopping: ll.Block, going_on: ll.Block) -> None:
    """Branch to `stopping` if the launch's stop word (at pointer `stop`) is set. The load is
    atomic (monotonic) so that LLVM reads it on every pass instead of once before a loop
    that writes no memory; the branch is weighted as rarely taken."""
    word = b.load_atomic(stop, "monotonic", 4, typ=I32)
    branch = b.cbranch(b.icmp_unsigned("!=", word, I32(0)), stopping, going_on)
    branch.set_weights([1, 1 << 20])


# Loops look at the stop word once in this many passes (a few microseconds of a tight loop).
POLL_PERIOD = 1024


def poll_stop(fl: FunctionLowering, stop, stopping: ll.Block, going_on: ll.Block) -> None:
    """In a loop: branch to `stopping` if the launch's stop word is set, looked at once in
    POLL_PERIOD passes (a countdown in a register the rest of the time, so that the atomic
    load, which LLVM counts as a write to any memory, stays off the loop's hot path)."""
    countdown = getattr(fl, "stop_countdown", None)
    if countdown is None:
        countdown = fl.stop_countdown = fl.entry_alloca(I32, "stop_countdown")
        with fl.b.goto_entry_block():
            fl.b.position_at_end(fl.entry)
            if fl.entry.is_terminated:
                fl.b.position_before(fl.entry.terminator)
            fl.b.store(I32(1), countdown)
    b = fl.b
    left = b.sub(b.load(countdown, typ=I32), I32(1))
    b.store(left, countdown)
    look = fl.llfn.append_basic_block("look_at_stop")
    branch = b.cbranch(b.icmp_unsigned("==", left, I32(0)), look, going_on)
    branch.set_weights([1, POLL_PERIOD])
    b.position_at_end(look)
    b.store(I32(POLL_PERIOD), countdown)
    branch_on_stop(b, stop, stopping, going_on)
