"""A numba-cuda saxpy on the CPU through ptxport, checked against numpy.

    python examples/numba_saxpy.py [--n N] [--device cpu]

The kernel is written with numba.cuda's device API; ptxport.frontends.numba.jit compiles it
with numba's compile_ptx (no GPU needed) and runs the PTX on a ptxport device.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import cuda

from ptxport import Device
from ptxport.frontends import numba as pnb


@pnb.jit
def saxpy(a, x, y, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = a * x[i] + y[i]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--device", default="cpu", help="a ptxport device: cpu, opencl:0")
    args = parser.parse_args()
    Device(args.device).set_current()

    rng = np.random.default_rng(0)
    x, y = rng.random(args.n, dtype=np.float32), rng.random(args.n, dtype=np.float32)
    out = np.zeros_like(x)
    start = time.perf_counter()
    saxpy[256, 256](np.float32(2), x, y, out)
    first = time.perf_counter() - start
    start = time.perf_counter()
    saxpy[256, 256](np.float32(2), x, y, out)
    again = time.perf_counter() - start
    assert np.allclose(out, np.float32(2) * x + y, rtol=1e-6), "saxpy differs from numpy"
    print(f"saxpy of {args.n} floats on {args.device}: first call {first * 1e3:.0f} ms "
          f"(numba and ptxport compile), then {again * 1e3:.2f} ms")
    print("result matches numpy")


if __name__ == "__main__":
    main()
