"""Is this checkout's portable GEMM (the lanes kernel on the CPU target) faster than another
checkout's? Both trees' kernels, side by side with numpy (OpenBLAS) in the same processes.

Runs --rounds rounds; in each, one child process per checkout (the order alternating), with
that checkout's ptxport and its own PTXPORT_CACHE_DIR (--caches), each timing numpy and every
tile (--tiles; `tuned`: the autotuner's pick) at every size and keeping its best call. On one
worker the children are timed by *process CPU time* with one OpenBLAS thread, optionally
pinned to a core (--core): on a shared host the wall time of a whole process moved by up to
2x (numpy's one-thread speed 67 to 152 GFLOP/s in one run on the 16-core Xeon), which the
best call of several processes, alternating, rides out. With more workers, wall time.
Prints per size and tile the median and best GFLOP/s over the rounds of each checkout and
the median's ratio to numpy's median in the same processes. A tile that a checkout does not
have (a shape its kernel refuses) is left out of its column.

    python benchmarks/gemm_cpu_compare.py --other /path/to/main [--rounds 4]
        [--sizes 512 1024 2048] [--tiles tuned lanes:64x256x128/4/u4] [--workers 1]
        [--core 3] [--caches DIR_OTHER DIR_THIS]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(sizes: list[int], tiles: list[str], workers: int) -> None:
    """In a checkout's own process: numpy's and each tile's best GFLOP/s at each size, as
    one JSON line ({"numpy 512": ..., "lanes:... 512": ..., "tuned=lanes:... 512": ...})."""
    import numpy as np

    from ptxport import Device
    from ptxport.blas import _Gemm, portable
    from ptxport.runtime.backends.cpu import executor

    executor.set_workers(workers)
    clock = time.process_time if workers == 1 else time.perf_counter
    device = Device("cpu")
    device.set_current()
    stream, f32 = device.create_stream(), np.dtype(np.float32)

    def best(call, reps: int) -> float:
        times = []
        for _ in range(reps):
            start = clock()
            call()
            times.append(clock() - start)
        return min(times)

    out = {}
    for n in sizes:
        reps, flop = (9 if n <= 1024 else 3), 2 * n ** 3
        a = np.ones((n, n), np.float32)
        out[f"numpy {n}"] = flop / best(lambda a=a: a @ a, reps) / 1e9
        buffers = [device.allocate(n * n * 4, stream=stream) for _ in range(3)]
        for buffer in buffers[:2]:
            buffer.fill(0x3C, 1, stream=stream)   # 0.0115 in f32
        problem = _Gemm(False, False, n, n, n, (n, n, n), (0, 0, 0), 1)
        for label in tiles:
            try:
                config = portable.tile_for(device, problem, f32, f32) if label == "tuned" \
                    else portable.TileConfig.parse(label)
                portable.launch_gemm(stream, config, problem, *buffers, f32, f32, 1.0, 0.0)
                stream.sync()
            except Exception as e:   # a shape this checkout refuses: not in its column
                print(f"{label}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
                continue

            def call(config=config, problem=problem, buffers=buffers):
                portable.launch_gemm(stream, config, problem, *buffers, f32, f32, 1.0, 0.0)
                stream.sync()
            name = f"tuned={config.label}" if label == "tuned" else label
            out[f"{name} {n}"] = flop / best(call, reps) / 1e9
        for buffer in buffers:
            buffer.close(stream)
        stream.sync()
    print(json.dumps(out))


def _run(tree: Path, cache: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), PTXPORT_CACHE_DIR=cache,
               OPENBLAS_NUM_THREADS=str(args.workers))
    command = ([] if args.core is None else ["taskset", "-c", str(args.core)]) + [
        sys.executable, str(HERE / "gemm_cpu_compare.py"), "--child",
        "--sizes", *map(str, args.sizes), "--tiles", *args.tiles,
        "--workers", str(args.workers)]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                          timeout=600)
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        print(f"{tree}: failed\n{done.stderr[-1500:]}", file=sys.stderr)
        return {}


def _table(results: dict[str, list[dict]], rounds: int, workers: int) -> None:
    print(f"\nworkers {workers}: per size and tile, median / best GFLOP/s over {rounds} "
          f"processes a checkout (ratio: the median / numpy's median, same processes)")
    keys = sorted({k for runs in results.values() for run in runs for k in run},
                  key=lambda k: (int(k.split()[-1]), not k.startswith("numpy"), k))
    for key in keys:
        row = [f"{key:>34}"]
        for name, runs in results.items():
            values = [run[key] for run in runs if key in run]
            numpy = [run[f"numpy {key.split()[-1]}"] for run in runs
                     if f"numpy {key.split()[-1]}" in run]
            if values and numpy:
                median = statistics.median(values)
                row.append(f"{name} {median:7.1f} / {max(values):7.1f} "
                           f"({median / statistics.median(numpy):.3f})")
        print("  ".join(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, help="the other checkout (required but in "
                        "--child)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--tiles", nargs="+", default=["tuned", "lanes:64x256x128/4/u4",
                                                       "lanes:64x64x128/4/u4"])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--core", type=int, help="pin the children to this core (taskset)")
    parser.add_argument("--caches", nargs=2, metavar=("OTHER", "THIS"),
                        help="PTXPORT_CACHE_DIR of each (default: two under /tmp)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.sizes, args.tiles, args.workers)
        return
    if args.other is None:
        parser.error("--other is required")
    trees = {"other": args.other.resolve(), "this": HERE.parent}
    caches = dict(zip(trees, args.caches or ("/tmp/gemm_cmp_other", "/tmp/gemm_cmp_this"),
                      strict=True))
    results: dict[str, list[dict]] = {name: [] for name in trees}
    for r in range(args.rounds):
        for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
            results[name].append(_run(trees[name], caches[name], args))
            print(f"round {r} {name}: {json.dumps(results[name][-1])}", flush=True)
    _table(results, args.rounds, args.workers)


if __name__ == "__main__":
    main()
