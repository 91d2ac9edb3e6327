"""Run examples/saxpy.cu on the CPU with ptxport's cuda.core-shaped API, and check it.

    python examples/saxpy.py [--n N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from ptxport import Device, LaunchConfig, Program, launch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1 << 20, help="number of elements")
    n = parser.parse_args().n

    dev = Device("cpu")
    dev.set_current()
    stream = dev.create_stream()
    print(f"device: {dev.name} ({dev.properties.multiprocessor_count} cores)")

    source = (Path(__file__).parent / "saxpy.cu").read_text()
    start = time.perf_counter()
    code = Program(source, code_type="c++").compile("native")
    saxpy, block_sum = code.get_kernel("saxpy"), code.get_kernel("block_sum")
    print(f"compiled saxpy.cu with NVRTC and ptxport in {time.perf_counter() - start:.2f} s")

    rng = np.random.default_rng(0)
    x_host = rng.random(n, dtype=np.float32)
    y_host = rng.random(n, dtype=np.float32)
    x = dev.allocate(x_host.nbytes, stream=stream)
    x.copy_from(x_host, stream=stream)
    y = dev.allocate(y_host.nbytes, stream=stream)
    y.copy_from(y_host, stream=stream)

    blocks = (n + 255) // 256
    start = time.perf_counter()
    launch(stream, LaunchConfig(grid=blocks, block=256), saxpy, np.float32(2), x, y,
           np.int32(n))
    partial = dev.allocate(blocks * 4, stream=stream)
    launch(stream, LaunchConfig(grid=blocks, block=256), block_sum, y, partial, np.int32(n))
    result, sums = np.empty_like(y_host), np.empty(blocks, np.float32)
    y.copy_to(result, stream=stream)
    partial.copy_to(sums, stream=stream)
    stream.sync()
    elapsed = time.perf_counter() - start

    expected = np.float32(2) * x_host + y_host
    assert np.allclose(result, expected, rtol=1e-6), "saxpy differs from numpy"
    block_expected = np.add.reduceat(expected.astype(np.float64), np.arange(0, n, 256))
    assert np.allclose(sums, block_expected, rtol=1e-4), "block_sum differs from numpy"
    print(f"saxpy and block_sum on {n} elements ({blocks} blocks of 256 threads) ran in "
          f"{elapsed * 1e3:.1f} ms (first launch includes compiling for the CPU)")
    print("results match numpy")


if __name__ == "__main__":
    main()
