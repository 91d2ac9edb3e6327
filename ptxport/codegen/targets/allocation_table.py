"""The binary search of a launch's allocation table, as LLVM IR: the slow path of the access
checks of the CPU target (cpu/target.py's check function) and of the SPIR-V target
(spirv_checks.py), which both keep the launch's allocations as [start, end) pairs of i64
words sorted by start. What each does with the one candidate the search finds (the CPU
remembers it in the access site's cache, SPIR-V only compares the end) stays with it.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I64

__all__ = ["search_allocations"]


def search_allocations(fn: ll.Function, b: ll.IRBuilder, words: ll.Value, first: int,
                       count: ll.Value, address: ll.Value, blocks: tuple[str, str, str],
                       bounds: tuple[str, str] = ("", "")) -> ll.Value:
    """Emit, at `b`, the search of `count` (i64) pairs held from i64 word `first` of
    `words`, for the last pair whose start is <= `address`; returns `lo`, the number of
    pairs that start at or below it (pair lo - 1 is the candidate, where lo > 0), with `b`
    at the end of the search. `blocks` names the loop's head, body and exit blocks and
    `bounds` the lo and hi phis, as each target's IR has always named them."""
    start = b.block
    head, body, done = (fn.append_basic_block(name) for name in blocks)
    b.branch(head)
    b.position_at_end(head)
    lo, hi = b.phi(I64, bounds[0]), b.phi(I64, bounds[1])
    lo.add_incoming(I64(0), start)
    hi.add_incoming(count, start)
    b.cbranch(b.icmp_unsigned("<", lo, hi), body, done)
    b.position_at_end(body)
    mid = b.lshr(b.add(lo, hi), I64(1))
    index = b.mul(mid, I64(2))
    if first:
        index = b.add(index, I64(first))
    below = b.icmp_unsigned("<=", b.load(b.gep(words, [index], source_etype=I64), typ=I64),
                            address)
    lo.add_incoming(b.select(below, b.add(mid, I64(1)), lo), body)
    hi.add_incoming(b.select(below, hi, mid), body)
    b.branch(head)
    b.position_at_end(done)
    return lo
