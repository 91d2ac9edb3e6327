"""GEMM speed: ptxport's BLAS routes and its portable GEMM kernels next to the vendor's, ratios
side by side in one run (issue 17).

CPU mode (default):
  (a) n x n x n GEMMs (C = A B, column-major NN) through the drop-in libcublas
      (cublasSgemm/Dgemm under `ptxport run --device cpu`, each call followed by
      cudaDeviceSynchronize) and through ptxport.blas.gemm on the cpu device (each call
      followed by stream.sync), against numpy's own matmul (its OpenBLAS) in this process:
      f32 and f64 at --sizes (default 256 512 1024 2048 4096); goal >= 0.95 of numpy.
  (b) the portable GEMM kernel (ptxport/blas/kernels/gemm.cu) compiled for the CPU target,
      launched on the cpu device, against numpy at --kernel-sizes (default 256 512 1024):
      the lanes kernel (gemm_lanes.cuh, what cpu devices take) for each of its candidate
      tiles and the autotuner's pick (`tuned`), and the SIMT kernel's 64x64x8/4x4 tile for
      comparison, f32 NN. --workers N runs the kernel's blocks on N host threads (default: one
      per core); give numpy as many (OPENBLAS_NUM_THREADS=N) for a per-core comparison.
      --kernel-only skips (a); --cpu-time times by the process's CPU time instead of the
      wall's (one worker and OPENBLAS_NUM_THREADS=1: a core's throughput on a loaded machine);
      --c-lanes adds the kernel's blocking written by hand in C (benchmarks/c/gemm_lanes.c,
      gcc -O3 -march=native, as many OpenMP threads as workers): what its shape reaches as
      native code.
GPU mode (--gpu, for an NVIDIA GPU such as the H100): benchmarks/gemm_gpu.py (its docstring
  says what): (c) the portable GEMM through ptxport's NVPTX (Device("cuda:0")) against cuBLAS
  at FP32 and BF16, layout TN, n = --gpu-sizes (default 1024 2048 4096 8192), in TFLOP/s, for
  each tile of --tiles ('all': every candidate of ptxport.blas.portable), with --native the
  same kernels without ptxport's lowering, and per size the best tile and gemm()'s pick.

CPU times are medians of --repeats calls after a warm-up call. Results go to
benchmarks/results/gemm.json (gemm_gpu.json for --gpu).

    python benchmarks/gemm.py [--repeats 5] [--sizes ...] [--kernel-sizes ...]
        [--workers N] [--kernel-only] [--cpu-time] [--c-lanes] [--tiles TILE ...]
    python benchmarks/gemm.py --gpu [--gpu-sizes 1024 2048 4096 8192] [--tiles all | TILE ...]
        [--dtypes float32 bfloat16] [--native]
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
INCLUDE = HERE.parent / "ptxport" / "compat" / "native" / "include"


# the clock of the timings: wall time, or with --cpu-time the process's CPU time (all its
# threads: with one worker and one OpenBLAS thread, a core's work, which other load on a
# shared machine changes far less than the wall time)
CLOCK = time.perf_counter


def _median_ms(call, repeats: int) -> float:
    call()   # warm-up (and compile)
    times = []
    for _ in range(repeats):
        start = CLOCK()
        call()
        times.append((CLOCK() - start) * 1e3)
    return float(np.median(times))


def _gflops(n: int, ms: float) -> float:
    return 2 * n ** 3 / ms / 1e6


# -- (a) BLAS routes on the CPU ---------------------------------------------------------------

def build_shim_program() -> Path:
    """benchmarks/compat/gemm_shim.cu built against ptxport's libcublas (again when changed)."""
    from compat_overhead import _nvcc

    from ptxport.compat.build import shim_directory

    source, binary = HERE / "compat" / "gemm_shim.cu", HERE / "build" / "gemm_shim"
    if binary.exists() and binary.stat().st_mtime > source.stat().st_mtime:
        return binary
    binary.parent.mkdir(exist_ok=True)
    nvcc = _nvcc()
    env = {**os.environ, "PATH": f"{nvcc.parent}:{os.environ.get('PATH', '')}"}
    subprocess.run([str(nvcc), "-arch=sm_80", f"-I{INCLUDE}", str(source), "-o", str(binary),
                    f"-L{shim_directory()}", "-lcublas"], check=True, env=env)
    return binary


def shim_ms(precision: str, sizes: list[int], repeats: int) -> dict[int, float]:
    result = subprocess.run(
        [sys.executable, "-m", "ptxport.cli", "run", "--device", "cpu", "--",
         str(build_shim_program()), str(repeats), precision, *map(str, sizes)],
        capture_output=True, text=True, check=True)
    return {int(line.split()[0]): float(line.split()[1]) for line in result.stdout.splitlines()}


def blas_ms(dtype, n: int, repeats: int) -> float:
    from ptxport import Device, blas

    dev = Device("cpu")
    stream = dev.create_stream()
    size = n * n * np.dtype(dtype).itemsize
    a, b, c = (dev.allocate(size, stream=stream) for _ in range(3))
    a.fill(0, 4, stream=stream)
    b.fill(0, 4, stream=stream)

    def call() -> None:
        blas.gemm("N", "N", n, n, n, 1.0, a, n, b, n, 0.0, c, n, stream=stream,
                  dtype=np.dtype(dtype).name)
        stream.sync()

    return _median_ms(call, repeats)


def numpy_ms(dtype, n: int, repeats: int) -> float:
    a = np.ones((n, n), dtype)
    b, c = a.copy(), a.copy()
    return _median_ms(lambda: np.matmul(a, b, out=c), repeats)


def cpu_routes(sizes: list[int], repeats: int) -> list[dict]:
    rows = []
    print(f"{'dtype':>7} {'n':>5} {'numpy GF/s':>11} {'shim GF/s':>10} {'ratio':>6} "
          f"{'blas GF/s':>10} {'ratio':>6}")
    for dtype, precision in ((np.float32, "s"), (np.float64, "d")):
        shim = shim_ms(precision, sizes, repeats)
        for n in sizes:
            ref, via_blas = numpy_ms(dtype, n, repeats), blas_ms(dtype, n, repeats)
            row = {"dtype": np.dtype(dtype).name, "n": n, "numpy_ms": ref, "shim_ms": shim[n],
                   "blas_ms": via_blas, "shim_ratio": ref / shim[n], "blas_ratio": ref / via_blas}
            rows.append(row)
            print(f"{row['dtype']:>7} {n:5d} {_gflops(n, ref):11.1f} {_gflops(n, shim[n]):10.1f} "
                  f"{row['shim_ratio']:6.2f} {_gflops(n, via_blas):10.1f} {row['blas_ratio']:6.2f}",
                  flush=True)
    return rows


# -- (b) the portable kernel on the CPU target ------------------------------------------------

def _kernel_ms(device, config, n: int, in_type: np.dtype, out_type: np.dtype, ta: bool,
               repeats: int, buffers) -> float:
    from ptxport.blas import _Gemm, portable

    stream, a, b, c = buffers
    problem = _Gemm(ta, False, n, n, n, (n, n, n), (0, 0, 0), 1)

    def call() -> None:
        portable.launch_gemm(stream, config, problem, a, b, c, in_type, out_type, 1.0, 0.0)
        stream.sync()

    return _median_ms(call, repeats)


def _buffers(device, n: int, in_type: np.dtype, out_type: np.dtype, values: np.ndarray | None):
    stream = device.create_stream()
    a, b = (device.allocate(n * n * in_type.itemsize, stream=stream) for _ in range(2))
    c = device.allocate(n * n * out_type.itemsize, stream=stream)
    for buf in (a, b):
        if values is None:   # bytes 0x3c: 0.0115 in f32 and bf16 (not zeros, which may run
            buf.fill(0x3C, 1, stream=stream)   # cooler on tensor cores)
        else:
            buf.copy_from(values, stream=stream)
    stream.sync()
    return stream, a, b, c


def c_lanes_ms(n: int, tn: int, repeats: int, workers: int | None) -> float:
    """The lanes kernel's blocking by hand in C (benchmarks/c/gemm_lanes.c, gcc -O3
    -march=native, 64 x 64 x 64 tiles, `tn` columns a group) on `workers` OpenMP threads
    (None: one per core): what the kernel's shape reaches as native code."""
    import ctypes

    from cpu_kernels import build_c_library

    lib = build_c_library()
    lib.bench_set_threads(workers or os.cpu_count())
    p, i = ctypes.c_void_p, ctypes.c_int
    lib.sgemm_lanes.argtypes = [i, i, i, p, i, p, i, p, i, i]
    a = np.ones((n, n), np.float32, order="F")
    b, c = a.copy(order="F"), a.copy(order="F")
    status = []
    ms = _median_ms(lambda: status.append(lib.sgemm_lanes(
        n, n, n, a.ctypes.data, n, b.ctypes.data, n, c.ctypes.data, n, tn)), repeats)
    if any(status) or not np.all(c == n):
        raise RuntimeError(f"sgemm_lanes failed at n = {n} (whole 64 x 64 x 64 tiles only)")
    return ms


def cpu_kernel(sizes: list[int], repeats: int, labels: list[str] | None,
               c_lanes: bool = False, workers: int | None = None) -> list[dict]:
    from ptxport import Device
    from ptxport.blas import _Gemm
    from ptxport.blas.portable import LANES_CANDIDATES, SIMT_CANDIDATES, TileConfig, tile_for

    device, f32 = Device("cpu"), np.dtype(np.float32)
    # (LLVM spends minutes on the SIMT kernel's 8x8 micro-tiles on the CPU target: only its
    # 4x4 one, which it took untuned before the lanes kernel)
    if labels:
        tiles = [(label, None if label == "tuned" else TileConfig.parse(label))
                 for label in labels]
    else:
        tiles = [("tuned", None),
                 *((c.label, c) for c in LANES_CANDIDATES), (SIMT_CANDIDATES[0].label,
                                                             SIMT_CANDIDATES[0])]
    rows = []
    print(f"\n{'n':>5} {'tile':>24} {'numpy GF/s':>11} {'kernel GF/s':>12} {'ratio':>6}")
    for n in sizes:
        ref = numpy_ms(np.float32, n, repeats)
        buffers = _buffers(device, n, f32, f32, None)
        for name, config in tiles:
            if name == "tuned":   # the autotuner's pick for this size (tuned now if not yet)
                started = time.perf_counter()
                config = tile_for(device, _Gemm(False, False, n, n, n, (n, n, n), (0, 0, 0),
                                                1), f32, f32)
                print(f"{'':5} (tile_for: {time.perf_counter() - started:.2f} s)")
            tile = name if name != "tuned" else f"tuned ({config.label.split(':')[1]})"
            try:
                ms = _kernel_ms(device, config, n, f32, f32, False, repeats, buffers)
            except Exception as e:   # a tile the CPU target refuses: reported, not fatal
                rows.append({"n": n, "tile": tile, "error": f"{type(e).__name__}: {e}"})
                print(f"{n:5d} {tile:>24} failed: {type(e).__name__}: {str(e)[:80]}")
                continue
            rows.append({"n": n, "tile": tile, "numpy_ms": ref, "kernel_ms": ms,
                         "ratio": ref / ms})
            print(f"{n:5d} {tile:>24} {_gflops(n, ref):11.1f} {_gflops(n, ms):12.1f} "
                  f"{ref / ms:6.3f}", flush=True)
        for tn in (2, 4) if c_lanes else ():
            ms, tile = c_lanes_ms(n, tn, repeats, workers), f"C gcc 64x64x64/{tn}"
            rows.append({"n": n, "tile": tile, "numpy_ms": ref, "kernel_ms": ms,
                         "ratio": ref / ms})
            print(f"{n:5d} {tile:>24} {_gflops(n, ref):11.1f} {_gflops(n, ms):12.1f} "
                  f"{ref / ms:6.3f}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="CPU mode: calls timed")
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    parser.add_argument("--kernel-sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--workers", type=int,
                        help="CPU mode: host threads running the kernel's blocks")
    parser.add_argument("--cpu-time", action="store_true",
                        help="CPU mode: time by the process's CPU time, not the wall's (for "
                             "--workers 1 with OPENBLAS_NUM_THREADS=1 on a loaded machine)")
    parser.add_argument("--kernel-only", action="store_true",
                        help="CPU mode: only (b), the portable kernel on the CPU target")
    parser.add_argument("--c-lanes", action="store_true",
                        help="CPU mode: (b) also times the lanes kernel's blocking written "
                             "by hand in C (benchmarks/c/gemm_lanes.c, gcc -O3 -march=native)")
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--gpu-sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--tiles", nargs="+",
                        help="with --gpu: tile configurations to measure instead of the "
                             "autotuner's choice, named simt:BMxBNxBK/TMxTN[/ahead] and "
                             "mma:BMxBNxBK/WMxWN/sSTAGES[/late], or 'all' (every candidate); "
                             "CPU mode: tiles for (b) instead of the lanes candidates "
                             "(lanes:BMxBNxBK/TN/uU, simt:..., 'tuned': the autotuner's pick)")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"],
                        choices=["float32", "bfloat16"], help="with --gpu: the precisions")
    parser.add_argument("--native", action="store_true",
                        help="with --gpu: also time each tile's kernel as NVRTC's PTX, "
                             "without ptxport's lowering (see gemm_gpu.py)")
    args = parser.parse_args()
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    machine = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
               "loadavg": os.getloadavg()}
    if args.gpu:
        from gemm_gpu import gpu

        report = {**machine, **gpu(args.gpu_sizes, args.tiles, tuple(args.dtypes),
                                   args.native)}
        (out_dir / "gemm_gpu.json").write_text(json.dumps(report, indent=1))
        return
    from ptxport.runtime.backends.cpu import executor

    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    executor.set_workers(args.workers)
    machine["workers"] = args.workers or os.cpu_count()
    machine["openblas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    machine["clock"] = "process CPU time" if args.cpu_time else "wall"
    routes = [] if args.kernel_only else cpu_routes(args.sizes, args.repeats)
    report = {**machine, "routes": routes,
              "cpu_kernel": cpu_kernel(args.kernel_sizes, args.repeats, args.tiles,
                                        args.c_lanes, args.workers)}
    (out_dir / "gemm.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
