"""Run a PTX kernel on the CPU target directly (below the runtime API), for codegen tests.

    run_ptx(ptx, "k", grid=(2,), block=(64,), args=[out_array, np.int32(5)])

numpy arrays are passed as pointers to their data (the kernel reads and writes them in
place); numpy scalars and structured scalars are passed by value.
"""

from __future__ import annotations

import numpy as np

from ptxport.codegen.targets.cpu import compile_kernel
from ptxport.ir.abi import param_layout
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

_CACHE: dict = {}


def compile_ptx(ptx: str, kernel: str):
    key = (ptx, kernel)
    if key not in _CACHE:
        module = build(parse(ptx, "test.ptx"))
        verify(module)
        _CACHE[key] = (module, compile_kernel(module, kernel))
    return _CACHE[key]


def _dims(d) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, int) else tuple(d)
    return d + (1,) * (3 - len(d))


def run_ptx(ptx: str, kernel: str, grid, block, args: list, shared: int = 0) -> None:
    module, binary = compile_ptx(ptx, kernel)
    slots, size = param_layout(module.functions[kernel])
    assert len(slots) == len(args), f"{kernel} takes {len(slots)} arguments"
    buffer = bytearray(size)
    for slot, arg in zip(slots, args, strict=True):
        if isinstance(arg, np.ndarray):
            data = np.uint64(arg.ctypes.data).tobytes()
        else:
            data = np.asarray(arg).tobytes()
        assert len(data) == slot.size, f"argument for {slot.name}: {len(data)} bytes"
        buffer[slot.offset:slot.offset + slot.size] = data
    allocations = [(a.ctypes.data, a.nbytes) for a in args if isinstance(a, np.ndarray)]
    binary.launch(_dims(grid), _dims(block), shared, bytes(buffer), allocations)


def kernel_ptx(body: str, params: str, extra: str = "", target: str = "sm_80",
               version: str = "8.0") -> str:
    """A module with one kernel `k`, for small tests."""
    return (f".version {version}\n.target {target}\n.address_size 64\n{extra}\n"
            f".visible .entry k({params})\n{{\n{body}\n}}\n")
