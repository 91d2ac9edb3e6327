"""How fast do Triton kernels run on the CPU through ptxport?

Triton's vector add (`add`: BLOCK=1024 with 4 warps, 8 elements per thread, as Triton's
tutorial: n a multiple of 16, so each thread's 4 contiguous elements are one predicated
ld/st.v4, a warp's two float4s 2 KiB apart; `add_odd`: n - 1 elements, one predicated
scalar ld/st per element; `add_1`: BLOCK=128, one element per thread; `add_4`: BLOCK=512,
one float4 per thread, so that the warps of a block read memory in order) and fused softmax
(GB/s: bytes read + written per second; `softmax` with 4 warps a row, whose reductions meet
in shared memory at barriers, `softmax_1w` with one; min(rows, 16 x cores) programs, each
looping over rows as the tutorial's do: SOFTMAX_PROGRAMS_PER_CORE) and its matmul
(tl.dot, f32 in IEEE mode, 32x32x32 tiles: FMAs per thread; GFLOP/s) from
tests/frontends/triton_kernels.py, and Triton's tutorial matmul (`matmul_f16_N`: N^3, f16
inputs and f32 output, tl.dot as ldmatrix + mma.sync on sm_80, 64x64x32 tiles with 4 warps
and 3 cp.async stages, against numpy's and torch's f32 matmul of the same inputs: the same
products summed in f32) from tests/frontends/test_triton_sm90.py, launched through
ptxport as Triton's driver on Device("cpu"), next to the same operation in numpy, in torch
(CPU) where torch is installed, and in Triton's own interpreter (TRITON_INTERPRET=1, which
takes torch tensors: torch needed). Outputs are allocated once, as Triton's are (`out=`
for numpy's and torch's add and matmul; softmax has no `out=` in either).

Each engine runs in a process of its own, one after another, so that no library's threads
share the cores with another's: numpy's BLAS, torch's OpenMP team and ptxport's workers
each keep spinning for a while after a call, and measured in one process taking turns,
numpy's 256^3 matmul ran at 20 GFLOP/s on 16 cores instead of ~100 and torch's at 3.
Each figure is the fastest of --runs timed calls after one untimed call (Triton's compile
and ptxport's are cached, so not timed); the interpreter gets fewer runs and is given up
after --interpreter-limit seconds.

    python benchmarks/python_kernels.py [--runs 5] [--small] [--interpreter-limit 600]
                                        [--only softmax,softmax_1w]

prints a table and writes benchmarks/results/python_kernels.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(ROOT / "tests" / "frontends"))

SIZES = {"add": 1 << 22, "softmax": (4096, 1024), "matmul": 256,
         "matmul_f16": (256, 1024, 2048)}
# The softmax kernel loops over rows, program_id(0) + k * num_programs(0) (Triton's tutorial,
# which launches NUM_SM x occupancy programs on a GPU). On the cpu device a worker runs one
# block at a time and claims blocks in decreasing chunks: with 16 programs per core the
# workers share the rows evenly (GPU machine's host, 16 cores, 4096 x 1024, 4 warps: 64
# programs 0.71 ms, 256 0.60 ms, 4096 (a row each) 0.66 ms; 1 warp: 0.49, 0.47, 0.49 ms).
SOFTMAX_PROGRAMS_PER_CORE = 16
SMALL = {"add": 1 << 16, "softmax": (256, 512), "matmul": 64, "matmul_f16": (64, 128)}
# the tutorial matmul's tile on the cpu device: 64x64x32 with 4 warps (each warp 32x32 of
# C: 2 x 4 m16n8k16 mma.sync a k-step), 3 cp.async stages
F16_TILE = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
            "num_warps": 4, "num_stages": 3}


def _best_seconds(calls: dict, runs: int) -> dict[str, float]:
    """The fastest of `runs` timed calls of each callable, after one untimed call each (the
    callables of one engine take turns)."""
    for call in calls.values():
        call()
    best = {name: float("inf") for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def _inputs(sizes):
    rng = np.random.default_rng(0)
    n, (rows, cols), m = sizes["add"], sizes["softmax"], sizes["matmul"]
    return {"add": (rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)),
            "softmax": rng.standard_normal((rows, cols), dtype=np.float32),
            "matmul": (rng.standard_normal((m, m), dtype=np.float32),
                       rng.standard_normal((m, m), dtype=np.float32)),
            "matmul_f16": {size: tuple(rng.standard_normal((size, size)).astype(np.float16)
                                       for _ in range(2)) for size in sizes["matmul_f16"]}}


def _f16_ops(sizes) -> list[str]:
    return [f"matmul_f16_{size}" for size in sizes["matmul_f16"]]


def _work(sizes) -> dict[str, tuple[float, str]]:
    """Per operation: the amount of work per call and its unit's name."""
    n, (rows, cols), m = sizes["add"], sizes["softmax"], sizes["matmul"]
    return {"add": (3 * 4 * n / 1e9, "GB/s"), "add_odd": (3 * 4 * (n - 1) / 1e9, "GB/s"),
            "add_1": (3 * 4 * n / 1e9, "GB/s"), "add_4": (3 * 4 * n / 1e9, "GB/s"),
            "softmax": (2 * 4 * rows * cols / 1e9, "GB/s"),
            "softmax_1w": (2 * 4 * rows * cols / 1e9, "GB/s"),
            "matmul": (2 * m ** 3 / 1e9, "GFLOP/s"),
            **{f"matmul_f16_{size}": (2 * size ** 3 / 1e9, "GFLOP/s")
               for size in sizes["matmul_f16"]}}


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
    programs = min(rows, SOFTMAX_PROGRAMS_PER_CORE * (os.cpu_count() or 1))

    def add():
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        sync()

    def add_odd():  # n - 1: not a multiple of 16, so Triton loads element by element
        add_kernel[(triton.cdiv(n - 1, 1024),)](x, y, out, n - 1, BLOCK=1024)
        sync()

    def add_1():    # one element per thread: BLOCK = 32 * num_warps
        add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128, num_warps=4)
        sync()

    def add_4():    # one float4 per thread: BLOCK = 4 * 32 * num_warps
        add_kernel[(triton.cdiv(n, 512),)](x, y, out, n, BLOCK=512, num_warps=4)
        sync()

    def softmax():
        softmax_kernel[(programs,)](s_out, s_in, cols, cols, rows, cols,
                                    BLOCK=triton.next_power_of_2(cols), num_warps=4)
        sync()

    def softmax_1w():   # one warp a row: its reductions are shuffles, with no barrier
        softmax_kernel[(programs,)](s_out, s_in, cols, cols, rows, cols,
                                    BLOCK=triton.next_power_of_2(cols), num_warps=1)
        sync()

    # 32x32x32 with 4 warps: 8 accumulators a thread, 16 vector registers a warp on the
    # cpu device; the tutorial's autotune tiles (32 to 128 a thread) spill there (docs/triton.md)
    def matmul():
        matmul_kernel[(triton.cdiv(m, 32), triton.cdiv(m, 32))](
            a, b, c, m, m, m, m, 1, m, 1, m, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
            num_warps=4)
        sync()

    return {"add": add, "add_odd": add_odd, "add_1": add_1, "add_4": add_4,
            "softmax": softmax, "softmax_1w": softmax_1w, "matmul": matmul,
            **_tutorial_matmuls(data, make_array)}


def _tutorial_matmuls(data, make_array) -> dict:
    """Triton's tutorial matmul (03-matrix-multiplication) on f16 inputs with f32 output:
    tl.dot is ldmatrix + mma.sync.m16n8k16 on sm_80, the cpu device's default target."""
    import triton
    from test_triton_sm90 import tutorial_matmul

    calls = {}
    for size, (a16, b16) in data["matmul_f16"].items():
        a, b = make_array(a16), make_array(b16)
        c = make_array(np.zeros((size, size), np.float32))
        grid = (triton.cdiv(size, F16_TILE["BLOCK_SIZE_M"])
                * triton.cdiv(size, F16_TILE["BLOCK_SIZE_N"]),)

        def call(a=a, b=b, c=c, size=size, grid=grid):
            tutorial_matmul[grid](a, b, c, size, size, size, size, 1, size, 1, size, 1,
                                  BF16=False, **F16_TILE)
        calls[f"matmul_f16_{size}"] = call
    return calls


def _f32_matmuls(data, matmul) -> dict:
    """numpy's or torch's f32 matmul of the tutorial matmul's f16 inputs (converted before:
    the same products, summed in f32), into an output allocated once."""
    calls = {}
    for size, pair in data["matmul_f16"].items():
        a, b = (x.astype(np.float32) for x in pair)
        calls[f"matmul_f16_{size}"] = matmul(a, b, np.zeros_like(a))
    return calls


def _numpy_calls(data):
    x, y = data["add"]
    out = np.zeros_like(x)
    s = data["softmax"]
    a, b = data["matmul"]
    c = np.zeros_like(a)

    def softmax():
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def add():
        np.add(x, y, out=out)

    return {"add": add, "add_odd": lambda: np.add(x[:-1], y[:-1], out=out[:-1]),
            "add_1": add, "add_4": add, "softmax": softmax, "softmax_1w": softmax,
            "matmul": lambda: np.matmul(a, b, out=c),
            **_f32_matmuls(data, lambda x, y, out: lambda: np.matmul(x, y, out=out))}


def _torch_calls(data):
    import torch

    x, y = (torch.from_numpy(v) for v in data["add"])
    out = torch.zeros_like(x)
    s = torch.from_numpy(data["softmax"])
    a, b = (torch.from_numpy(v) for v in data["matmul"])
    c = torch.zeros_like(a)

    def add():
        torch.add(x, y, out=out)

    return {"add": add, "add_odd": lambda: torch.add(x[:-1], y[:-1], out=out[:-1]),
            "add_1": add, "add_4": add, "softmax": lambda: torch.softmax(s, dim=1),
            "softmax_1w": lambda: torch.softmax(s, dim=1),
            "matmul": lambda: torch.matmul(a, b, out=c),
            **_f32_matmuls(data, _torch_matmul)}


def _torch_matmul(a, b, out):
    import torch

    ta, tb, tout = (torch.from_numpy(v) for v in (a, b, out))
    return lambda: torch.matmul(ta, tb, out=tout)


def _engine_calls(engine: str, data) -> dict:
    if engine == "ptxport":
        import ptxport.frontends.triton as pt
        from ptxport import Device

        device = Device("cpu")
        pt.activate(device)
        return _triton_calls(data, lambda v: pt.device_array(v, device), lambda: None)
    if engine == "interpreter":
        import torch

        return _triton_calls(data, torch.from_numpy, lambda: None)
    if engine == "torch":
        return _torch_calls(data)
    return _numpy_calls(data)


OPERATIONS = ("add", "add_odd", "add_1", "add_4", "softmax", "softmax_1w", "matmul")


def _measure(engines: list[str], sizes, runs: int,
             ops: tuple[str, ...] = OPERATIONS) -> dict[str, dict[str, float]]:
    """Seconds per call, per engine and operation, measured in this process."""
    data = _inputs(sizes)
    calls = {engine: _engine_calls(engine, data) for engine in engines}
    results: dict[str, dict[str, float]] = {engine: {} for engine in engines}
    for op in ops:
        best = _best_seconds({engine: calls[engine][op] for engine in engines}, runs)
        for engine, seconds in best.items():
            results[engine][op] = seconds
    return results


def _in_subprocess(engines: list[str], small: bool, runs: int, ops: tuple[str, ...],
                   limit: float | None = None) -> dict:
    """_measure in a fresh process (Triton's interpreter is chosen by TRITON_INTERPRET at
    import), or for each engine why it could not run (or finish within `limit` seconds)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if engines == ["interpreter"]:
        env["TRITON_INTERPRET"] = "1"
    args = [sys.executable, __file__, "--engines", ",".join(engines), "--runs", str(runs),
            "--only", ",".join(ops)]
    try:
        out = subprocess.run(args + (["--small"] if small else []), env=env,
                             capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {engine: f"did not finish in {limit:.0f} s" for engine in engines}
    if out.returncode:
        why = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
        return {engine: why for engine in engines}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="small sizes (a quick check)")
    parser.add_argument("--interpreter-limit", type=float, default=600,
                        help="seconds Triton's interpreter may take (default 600)")
    parser.add_argument("--only", help="the operations to measure, comma-separated (default: "
                        "all: " + ",".join(OPERATIONS + tuple(_f16_ops(SIZES))) + ")")
    parser.add_argument("--engines", help=argparse.SUPPRESS)
    options = parser.parse_args()
    sizes = SMALL if options.small else SIZES
    known = OPERATIONS + tuple(_f16_ops(sizes))
    ops = tuple(options.only.split(",")) if options.only else known
    unknown = [op for op in ops if op not in known]
    if unknown:
        parser.error(f"unknown operation(s) {', '.join(unknown)}; choose from "
                     + ", ".join(known))
    if options.engines:
        print(json.dumps(_measure(options.engines.split(","), sizes, options.runs, ops)))
        return
    results = {}
    for engine in ["ptxport", "numpy"] + (["torch"] if _have("torch") else []):
        results.update(_in_subprocess([engine], options.small, options.runs, ops))
    if _have("torch"):
        results.update(_in_subprocess(["interpreter"], options.small, max(1, options.runs // 3),
                                      ops, options.interpreter_limit))
    engines = list(results)
    work = {op: w for op, w in _work(sizes).items() if op in ops}
    print(f"Triton kernels on the CPU ({platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores); sizes {sizes}")
    print(f"{'operation':14} {'unit':8} " + " ".join(f"{e:>12}" for e in engines)
          + "   ptxport/numpy" + ("   ptxport/torch" if "torch" in engines else ""))
    table = {}
    for op, (amount, unit) in work.items():
        rates = {e: (amount / r[op] if isinstance(r, dict) else None)
                 for e, r in results.items()}
        table[op] = {"unit": unit, **rates}
        cells = " ".join(f"{rates[e]:12.2f}" if rates[e] else f"{'n/a':>12}" for e in engines)
        ratios = [f"{rates['ptxport'] / rates[e]:15.2f}" if rates["ptxport"] and rates[e]
                  else f"{'n/a':>15}" for e in ("numpy", "torch") if e in engines]
        print(f"{op:14} {unit:8} {cells} " + " ".join(ratios))
    print("each engine measured in a process of its own (no other library's threads on the "
          f"cores); fastest of {options.runs} calls; outputs allocated once")
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
