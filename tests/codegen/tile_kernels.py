"""Helpers shared by the cpu gang tests that run a 2D tile kernel `k(src, dst, width,
height)` in 16 x 16 blocks (test_cpu_if_convert.py, test_cpu_gang_blocks.py)."""
from __future__ import annotations

import numpy as np

from cpu_harness import index_outside
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse


def module(text: str, name: str):
    """The verified IR module of PTX `text` (file name `name` in messages)."""
    built = build(parse(text, name))
    verify(built)
    return built


def run_tile(ptx, width: int, height: int):
    """Run kernel `k` of `ptx` over a width x height f32 image (1, 2, 3, ... row by row) into
    a zeroed one on Device("cpu") with 16 x 16 blocks; return (source, output). `ptx` may be
    a function of (device, source buffer) giving the text: a fault test places an address
    relative to the buffer's (cpu_harness.index_outside)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    src = np.arange(width * height, dtype=np.float32).reshape(height, width) + 1
    bufs = [dev.allocate(src.nbytes, stream=stream) for _ in range(2)]
    if callable(ptx):
        ptx = ptx(dev, bufs[0])
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    bufs[0].copy_from(src, stream=stream)
    bufs[1].copy_from(np.zeros_like(src), stream=stream)
    grid = ((width + 15) // 16, (height + 15) // 16)
    launch(stream, LaunchConfig(grid=grid, block=(16, 16)), kernel, *bufs, np.uint32(width),
           np.uint32(height))
    out = np.empty_like(src)
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    return src, out


def far_offset(ptx: str):
    """`ptx` as run_tile's function of the source buffer: its OFFSET a byte offset at which
    the whole image lies 1 MiB or more from every live range (cpu_harness.index_outside),
    so that each access there faults, whatever else is alive (a fixed offset such as
    -(1 << 30) may land in another allocation)."""
    return lambda dev, src: ptx.replace(
        "OFFSET", str(index_outside(dev, src, itemsize=1, span=src.size)))
