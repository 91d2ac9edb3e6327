"""The allocation tables of a launch's workers: each worker's kernel code checks its memory
accesses against a table of [start, end) ranges, sorted and disjoint, made of the launch's
live allocations, the module's variables and the parameter buffer (the same for every
worker) and the worker's own memory (its shared memory and frames).

A launch after an allocation was made or freed needs new tables; built one worker after
another in Python they cost about 8 us each (a program that allocates between launches paid
130 us more per launch on 16 workers than on one), so worker_tables builds them all with a
few numpy operations.
"""

from __future__ import annotations

import numpy as np

__all__ = ["disjoint", "worker_tables"]


def disjoint(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[start, end) ranges, sorted, with overlapping ones merged: the access check looks at
    the last range starting at or below an address only, so a range inside another (host
    memory wrapped twice, a buffer's view wrapped as a buffer) must not hide the outer one.
    Ranges that only touch stay apart (an access across both is still outside each)."""
    merged: list[list[int]] = []
    for start, end in sorted(ranges):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def worker_tables(shared: list[tuple[int, int]], own: list[list[tuple[int, int]]]) \
        -> np.ndarray | None:
    """Row i: worker i's table, disjoint(shared + own[i]) as flat uint64 words, for every
    worker at once; None when the workers have different numbers of own ranges or one
    overlaps a shared range or another (then each worker merges its own: disjoint)."""
    widths = {len(ranges) for ranges in own}
    if len(widths) != 1:
        return None
    common = np.array(disjoint(shared), dtype=np.uint64).reshape(-1, 2)
    mine = np.array(own, dtype=np.uint64).reshape(len(own), widths.pop(), 2)
    tables = np.concatenate([np.broadcast_to(common, (len(own), *common.shape)), mine], axis=1)
    order = np.argsort(tables[..., 0], axis=1, kind="stable")
    tables = np.take_along_axis(tables, order[..., None], axis=1)
    if (tables[:, 1:, 0] < tables[:, :-1, 1]).any():
        return None
    return np.ascontiguousarray(tables.reshape(len(own), -1))
