"""Cases for pointer_chase.cu: device addresses that travel through device memory.

The launcher puts the device address of a buffer Arg into a struct member (Arg.pointers); the
kernels store those addresses in device memory and dereference them after loading them back.
Every node and row is a buffer of its own that no kernel parameter names (passed=False), so a
backend must make an address valid wherever the kernel finds it. The results are exact.
"""

from __future__ import annotations

import numpy as np

from ._core import KernelCase, inout, inp, out, scalar, struct
from ._numerics import f32, fma32, poison

__all__ = ["CASES"]

NODES, ROWS, WIDTH = 16, 6, 37
NODE = np.dtype({"names": ["value", "key", "next"], "formats": ["<f4", "<i4", "<u8"],
                 "offsets": [0, 4, 8], "itemsize": 16})


def _pointer_struct(prefix: str, count: int, first_index: int):
    """A struct of `count` pointer members (prefix0, prefix1, ...), each holding the device
    address of the buffer Arg at first_index + its number."""
    dtype = np.dtype({"names": [f"{prefix}{k}" for k in range(count)],
                      "formats": ["<u8"] * count, "offsets": [8 * k for k in range(count)],
                      "itemsize": 8 * count})
    return struct(np.zeros(1, dtype=dtype)[0],
                  pointers={f"{prefix}{k}": first_index + k for k in range(count)})


# list_walk ------------------------------------------------------------------------------------

def _list_walk_args(rng):
    nodes = []
    for _ in range(NODES):
        node = np.zeros(1, dtype=NODE)
        node["value"] = rng.integers(-63, 64) / 8.0
        node["key"] = rng.integers(-1000, 1000)
        nodes.append(inp(node, passed=False))
    return [_pointer_struct("node", NODES, 4), inp(rng.permutation(NODES).astype(np.int32)),
            out(poison(NODES, np.float32)), out(poison(2 * NODES, np.int32)), *nodes]


def _list_walk_ref(args):
    order = args[1].value
    nodes = [args[4 + k].value[0] for k in range(NODES)]
    sums, counts = np.empty(NODES, np.float32), np.empty(2 * NODES, np.int32)
    for start in range(NODES):
        walk = order[list(order).index(start):]
        values = f32([nodes[k]["value"] for k in walk])
        sums[start] = np.cumsum(values, dtype=np.float32)[-1]
        counts[start] = len(walk)
        counts[NODES + start] = sum(int(nodes[k]["key"]) * (j + 1) for j, k in enumerate(walk))
    return {2: sums, 3: counts}


# batched_row_fma ------------------------------------------------------------------------------

def _rows_args(rng):
    rows = [inout(f32(rng.standard_normal(WIDTH)), passed=False) for _ in range(ROWS)]
    return [_pointer_struct("row", ROWS, 4), out(poison(ROWS, np.uint64)),
            inp(f32(rng.uniform(-4, 4, ROWS))), scalar(np.int32(WIDTH)), *rows]


def _rows_ref(args):
    factors, i = args[2].value, f32(np.arange(WIDTH))
    return {4 + r: fma32(args[4 + r].value, factors[r], i) for r in range(ROWS)}


CASES = [
    KernelCase("pointer_chase.cu", "list_walk", (1, 1, 1), (32, 1, 1), 0, _list_walk_args,
               _list_walk_ref,
               notes="exact: multiples of 1/8; a linked list of 16 allocations, linked by the "
                     "kernel with addresses from a struct argument, walked after a barrier"),
    KernelCase("pointer_chase.cu", "batched_row_fma", (1, 1, 1), (64, 1, 1), 0, _rows_args,
               _rows_ref,
               notes="exact: one fma; row pointers from a struct argument stored in a float** "
                     "table (not checked: addresses differ per run) and loaded back"),
]
