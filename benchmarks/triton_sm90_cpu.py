"""How fast does Triton's tutorial matmul run on the cpu device when compiled for sm_90
(wgmma, codegen/targets/cpu/gang/wgmma.py) against sm_80 (ldmatrix + mma.sync, gang/mma.py)?

    python benchmarks/triton_sm90_cpu.py [--size 512] [--repeats 5]

f16 inputs, f32 output, 64x64x32 tiles, 4 warps; prints GFLOP/s (median of the repeats after
a warm-up launch, which compiles) for each target and numpy's f32 matmul, side by side.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "frontends"))
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import triton
    from test_triton_sm90 import tutorial_matmul
    from triton.backends.compiler import GPUTarget

    import ptxport.frontends.triton as pt
    from ptxport import Device

    n = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    flops = 2 * n ** 3
    rows = []
    for name, target in (("sm_80 (mma.sync)", GPUTarget("cuda", 80, 32)),
                         ("sm_90 (wgmma)", GPUTarget("cuda", 90, 32))):
        dev = Device("cpu")
        pt.activate(dev, target=target)
        try:
            c = np.zeros((n, n), np.float32)
            da, db, dc = (pt.device_array(x, dev) for x in (a, b, c))

            def launch(da=da, db=db, dc=dc):
                tutorial_matmul[(triton.cdiv(n, 64) ** 2,)](
                    da, db, dc, n, n, n, n, 1, n, 1, n, 1, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64,
                    BLOCK_SIZE_K=32, GROUP_SIZE_M=8, BF16=False, num_warps=4, num_stages=3)
            launch()
            assert np.allclose(dc.numpy(), want, rtol=1e-3, atol=1e-2), name
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                launch()
                times.append(time.perf_counter() - start)
        finally:
            pt.deactivate()
        rows.append((name, statistics.median(times)))
    af, bf = a.astype(np.float32), b.astype(np.float32)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        af @ bf
        times.append(time.perf_counter() - start)
    rows.append(("numpy f32 matmul", statistics.median(times)))
    print(f"{n}^3 f16 matmul on the cpu device")
    for name, seconds in rows:
        print(f"  {name:20} {seconds * 1e3:9.2f} ms  {flops / seconds / 1e9:8.2f} GFLOP/s")


if __name__ == "__main__":
    main()
