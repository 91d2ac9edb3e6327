"""A Triton fused softmax (Triton's tutorial kernel) on the CPU through ptxport, checked.

    python examples/triton_softmax.py [--rows R] [--cols C] [--device cpu]

ptxport becomes Triton's active driver: Triton compiles the kernel to PTX for sm_80 (no GPU
needed; its cache keeps it), and ptxport runs that PTX on the device.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import triton
import triton.language as tl

import ptxport.frontends.triton as pt
from ptxport import Device


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                   BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=mask)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--cols", type=int, default=781)
    parser.add_argument("--device", default="cpu", help="a ptxport device: cpu, opencl:0")
    args = parser.parse_args()

    device = Device(args.device)
    pt.activate(device)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, args.cols), dtype=np.float32)
    x_dev = pt.device_array(x, device)
    y_dev = pt.device_array(np.empty_like(x), device)
    block = triton.next_power_of_2(args.cols)
    programs = min(args.rows, 4 * device.properties.multiprocessor_count)

    start = time.perf_counter()
    softmax_kernel[(programs,)](y_dev, x_dev, args.cols, args.cols, args.rows, args.cols,
                                BLOCK=block, num_warps=4)
    first = time.perf_counter() - start
    start = time.perf_counter()
    softmax_kernel[(programs,)](y_dev, x_dev, args.cols, args.cols, args.rows, args.cols,
                                BLOCK=block, num_warps=4)
    again = time.perf_counter() - start

    e = np.exp(x - x.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    assert np.allclose(y_dev.numpy(), expected, rtol=1e-5, atol=1e-7), "softmax differs"
    print(f"softmax of {args.rows}x{args.cols} on {device}: first call {first * 1e3:.0f} ms "
          f"(compiles unless cached), then {again * 1e3:.2f} ms "
          f"({2 * x.nbytes / again / 1e9:.2f} GB/s)")
    print("result matches numpy")


if __name__ == "__main__":
    main()
