"""Helpers shared by the cpu gang tests that run a 2D tile kernel `k(src, dst, width,
height)` in 16 x 16 blocks (test_cpu_if_convert.py, test_cpu_gang_blocks.py)."""
from __future__ import annotations

import numpy as np

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse


def module(text: str, name: str):
    """The verified IR module of PTX `text` (file name `name` in messages)."""
    built = build(parse(text, name))
    verify(built)
    return built


def run_tile(ptx: str, width: int, height: int):
    """Run kernel `k` of `ptx` over a width x height f32 image (1, 2, 3, ... row by row) into
    a zeroed one on Device("cpu") with 16 x 16 blocks; return (source, output)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    src = np.arange(width * height, dtype=np.float32).reshape(height, width) + 1
    bufs = [dev.allocate(src.nbytes, stream=stream) for _ in range(2)]
    bufs[0].copy_from(src, stream=stream)
    bufs[1].copy_from(np.zeros_like(src), stream=stream)
    grid = ((width + 15) // 16, (height + 15) // 16)
    launch(stream, LaunchConfig(grid=grid, block=(16, 16)), kernel, *bufs, np.uint32(width),
           np.uint32(height))
    out = np.empty_like(src)
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    return src, out
