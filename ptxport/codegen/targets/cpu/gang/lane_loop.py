"""Warp gangs' loops over lanes: code that must run lane after lane under a mask known only
at run time (a partial cp.async copy, async_copy.py; atomics, atomics.py) visits the set
bits of the mask, lowest first, with one skeleton: a phi of the lanes still to do, cttz for
the next, and clearing its bit.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ptxport.codegen.lower import I32


def lane_loop(fl, lanes, body: Callable, name: str = "lane") -> None:
    """Emit `body(lane, next_block)` once per set bit of the i32 `lanes` (lowest first),
    `lane` the bit's i32 index; the body starts in a fresh block and may branch to
    `next_block` (the next lane) from anywhere, and falls through to it when it leaves its
    last block unterminated. The builder ends after the loop."""
    b, llfn = fl.b, fl.llfn
    entry = b.block
    head, run, next_lane, done = (llfn.append_basic_block(f"{name}_{part}") for part in (
        "head", "run", "next", "done"))
    b.branch(head)
    b.position_at_end(head)
    todo = ll.IRBuilder.phi(b, I32)
    todo.add_incoming(lanes, entry)
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", todo, I32(0)), run, done)
    b.position_at_end(run)
    body(fl.cttz(todo), next_lane)
    if not b.block.is_terminated:
        b.branch(next_lane)
    b.position_at_end(next_lane)
    todo.add_incoming(ll.IRBuilder.and_(b, todo, ll.IRBuilder.sub(b, todo, I32(1))), next_lane)
    b.branch(head)
    b.position_at_end(done)
