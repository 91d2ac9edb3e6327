"""How fast do Triton kernels run on the CPU through ptxport?

Triton's vector add and fused softmax (GB/s: bytes read + written per second) and its matmul
(tl.dot, f32 in IEEE mode; GFLOP/s) from tests/frontends/triton_kernels.py, launched through
ptxport as Triton's driver on Device("cpu"), next to the same operation in numpy, in torch
(CPU) where torch is installed, and in Triton's own interpreter (TRITON_INTERPRET=1, which
takes torch tensors: torch needed). Each figure is the median of --runs timed calls after
one warm-up call (Triton's compile and ptxport's are cached, so not timed).

    python benchmarks/python_kernels.py [--runs 5] [--small]

prints a table and writes benchmarks/results/python_kernels.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(ROOT / "tests" / "frontends"))

SIZES = {"add": 1 << 22, "softmax": (4096, 1024), "matmul": 256}
SMALL = {"add": 1 << 16, "softmax": (256, 512), "matmul": 64}


def _median_seconds(call, runs: int) -> float:
    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _inputs(sizes):
    rng = np.random.default_rng(0)
    n, (rows, cols), m = sizes["add"], sizes["softmax"], sizes["matmul"]
    return {"add": (rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)),
            "softmax": rng.standard_normal((rows, cols), dtype=np.float32),
            "matmul": (rng.standard_normal((m, m), dtype=np.float32),
                       rng.standard_normal((m, m), dtype=np.float32))}


def _work(sizes) -> dict[str, tuple[float, str]]:
    """Per operation: the amount of work per call and its unit's name."""
    n, (rows, cols), m = sizes["add"], sizes["softmax"], sizes["matmul"]
    return {"add": (3 * 4 * n / 1e9, "GB/s"), "softmax": (2 * 4 * rows * cols / 1e9, "GB/s"),
            "matmul": (2 * m ** 3 / 1e9, "GFLOP/s")}


def _triton_calls(data, make_array, sync):
    """Callables running each Triton kernel; `make_array` puts a host array where the
    kernel can use it (a DeviceArray for ptxport, a torch tensor for the interpreter)."""
    import triton
    from triton_kernels import add_kernel, matmul_kernel, softmax_kernel

    x, y = (make_array(a) for a in data["add"])
    out = make_array(np.zeros_like(data["add"][0]))
    n = data["add"][0].size
    s_in = make_array(data["softmax"])
    s_out = make_array(np.zeros_like(data["softmax"]))
    rows, cols = data["softmax"].shape
    a, b = (make_array(v) for v in data["matmul"])
    m = data["matmul"][0].shape[0]
    c = make_array(np.zeros((m, m), np.float32))
    programs = min(rows, 4 * (os.cpu_count() or 1))

    def add():
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        sync()

    def softmax():
        softmax_kernel[(programs,)](s_out, s_in, cols, cols, rows, cols,
                                    BLOCK=triton.next_power_of_2(cols), num_warps=4)
        sync()

    def matmul():
        matmul_kernel[(triton.cdiv(m, 32), triton.cdiv(m, 32))](
            a, b, c, m, m, m, m, 1, m, 1, m, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
            num_warps=4)
        sync()

    return {"add": add, "softmax": softmax, "matmul": matmul}


def _numpy_calls(data):
    x, y = data["add"]
    s = data["softmax"]
    a, b = data["matmul"]

    def softmax():
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return {"add": lambda: np.add(x, y), "softmax": softmax, "matmul": lambda: a @ b}


def _torch_calls(data):
    import torch

    x, y = (torch.from_numpy(v) for v in data["add"])
    s = torch.from_numpy(data["softmax"])
    a, b = (torch.from_numpy(v) for v in data["matmul"])
    return {"add": lambda: torch.add(x, y), "softmax": lambda: torch.softmax(s, dim=1),
            "matmul": lambda: a @ b}


def _measure(engine: str, sizes, runs: int) -> dict[str, float]:
    """Seconds per call of each operation in `engine` (this process)."""
    data = _inputs(sizes)
    if engine == "ptxport":
        import ptxport.frontends.triton as pt
        from ptxport import Device

        device = Device("cpu")
        pt.activate(device)
        calls = _triton_calls(data, lambda v: pt.device_array(v, device), lambda: None)
    elif engine == "interpreter":
        import torch

        calls = _triton_calls(data, torch.from_numpy, lambda: None)
    elif engine == "torch":
        calls = _torch_calls(data)
    else:
        calls = _numpy_calls(data)
    return {op: _median_seconds(call, runs) for op, call in calls.items()}


def _in_subprocess(engine: str, small: bool, runs: int) -> dict[str, float] | str:
    """_measure in a fresh process (the interpreter is chosen by TRITON_INTERPRET at
    import), or why it could not run."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if engine == "interpreter":
        env["TRITON_INTERPRET"] = "1"
    args = [sys.executable, __file__, "--engine", engine, "--runs", str(runs)]
    out = subprocess.run(args + (["--small"] if small else []), env=env, capture_output=True,
                         text=True)
    if out.returncode:
        return out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    return json.loads(out.stdout.strip().splitlines()[-1])


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="small sizes (a quick check)")
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    options = parser.parse_args()
    sizes = SMALL if options.small else SIZES
    if options.engine:
        print(json.dumps(_measure(options.engine, sizes, options.runs)))
        return
    engines = ["ptxport", "numpy"] + (["torch", "interpreter"] if _have("torch") else [])
    results = {e: _in_subprocess(e, options.small, options.runs) for e in engines}
    work = _work(sizes)
    print(f"Triton kernels on the CPU ({platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores); sizes {sizes}")
    print(f"{'operation':10} {'unit':8} " + " ".join(f"{e:>12}" for e in engines)
          + "   ptxport/numpy" + ("   ptxport/torch" if "torch" in engines else ""))
    table = {}
    for op, (amount, unit) in work.items():
        rates = {e: (amount / r[op] if isinstance(r, dict) else None)
                 for e, r in results.items()}
        table[op] = {"unit": unit, **rates}
        cells = " ".join(f"{rates[e]:12.2f}" if rates[e] else f"{'n/a':>12}" for e in engines)
        ratios = [f"{rates['ptxport'] / rates[e]:15.2f}" if rates["ptxport"] and rates[e]
                  else f"{'n/a':>15}" for e in ("numpy", "torch") if e in engines]
        print(f"{op:10} {unit:8} {cells} " + " ".join(ratios))
    for e, r in results.items():
        if not isinstance(r, dict):
            print(f"{e}: not measured: {r}")
    if not _have("torch"):
        print("torch and Triton's interpreter (which takes torch tensors): not measured, "
              "torch is not installed")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "python_kernels.json").write_text(json.dumps(
        {"sizes": {k: v for k, v in sizes.items()}, "runs": options.runs, "rates": table},
        indent=1))


if __name__ == "__main__":
    main()
