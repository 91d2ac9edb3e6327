"""How long does a new process take to run its first kernel on the CPU device?

For three programs of the corpus (tests/kernels/*.cu) it starts fresh Python processes that
each do what a user's script does, timing each phase (ms):
  process       the whole process, interpreter start included (measured from outside);
  import        `from ptxport import ...` (numpy included);
  device        Device("cpu"), a stream and the arguments' buffers;
  get_kernel    Program(...).compile().get_kernel(...): NVRTC (or its cache), parsing, IR;
  first_launch  launch + sync: compiling the kernel for the CPU (or loading its image);
  second_launch the same again (the kernel's run alone);
  next_kernel   launch + sync of another kernel of the same program, in the same process;
  event         the first launch's Event time (end - start), which never includes compiling.
First with a cold cache (a new, empty $PTXPORT_CACHE_DIR for every process: NVRTC and LLVM
run), then warm (one shared directory, filled by an untimed process first: NVRTC's PTX and
the kernels' images come from disk). Python's bytecode is cached under
benchmarks/build/pycache (PYTHONPYCACHEPREFIX) and filled before timing, as an installed
package's would be.

    python benchmarks/warm_start.py [--runs 5] [--cold-runs 3]
                                    [--kernels saxpy,softmax_rows_warp,sgemm_tiled]
                                    [--compare OTHER_CHECKOUT]

--compare times another checkout of ptxport too, taking turns process by process (timings
on a shared machine drift; compare only figures measured side by side):
    git archive 25d5f49 | tar -x -C /tmp/before
    python benchmarks/warm_start.py --compare /tmp/before

prints the median of each phase per program and writes benchmarks/results/warm_start.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
PYCACHE = Path(__file__).resolve().parent / "build" / "pycache"

# case -> (source file, [(kernel, grid, block, arguments)]): the second kernel of a case is
# launched after the first, in the same process (what a kernel costs once ptxport and LLVM
# are loaded). Arguments: ("f32" | "f64" | "i32" | "i64", value) or ("buf", bytes).
_MATRIX = 8 * 64 * 64
CASES: dict[str, tuple[str, list]] = {
    "saxpy": ("saxpy.cu", [
        ("saxpy", (64,), (256,), [("f32", 2.0), ("buf", 4 << 14), ("buf", 4 << 14),
                                  ("i32", 1 << 14)]),
        ("daxpy", (64,), (256,), [("f64", 2.0), ("buf", 8 << 14), ("buf", 8 << 14),
                                  ("i64", 1 << 14)])]),
    "softmax_rows_warp": ("softmax.cu", [
        ("softmax_rows_warp", (16,), (128,), [("buf", _MATRIX), ("buf", _MATRIX), ("i32", 64),
                                              ("i32", 64)]),
        ("softmax_rows_block", (64,), (128,), [("buf", _MATRIX), ("buf", _MATRIX),
                                               ("i32", 64), ("i32", 64)])]),
    "sgemm_tiled": ("gemm_tiled.cu", [
        (name, (4, 4), (16, 16), [("i32", 64), ("i32", 64), ("i32", 64), (real, 1.0),
                                  ("buf", _MATRIX), ("buf", _MATRIX), (real, 0.0),
                                  ("buf", _MATRIX)])
        for name, real in (("sgemm_tiled", "f32"), ("dgemm_tiled", "f64"))]),
}
PHASES = ("process", "import", "device", "get_kernel", "first_launch", "second_launch",
          "next_kernel")
_SCALARS = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}


def _arguments(device, stream, spec: list) -> list:
    import numpy as np

    args = []
    for kind, value in spec:
        if kind == "buf":
            buffer = device.allocate(value, stream=stream)
            buffer.copy_from(np.zeros(value, np.uint8), stream=stream)
            args.append(buffer)
        else:
            args.append(getattr(np, _SCALARS[kind])(value))
    return args


def child(case: str) -> None:
    """One user's first launch, timed by phase; prints a JSON object."""
    t0 = time.perf_counter()
    from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
    t1 = time.perf_counter()
    source, kernels = CASES[case]
    (name, grid, block, spec), (name2, grid2, block2, spec2) = kernels
    device = Device("cpu")
    device.set_current()
    stream = device.create_stream()
    args, args2 = _arguments(device, stream, spec), _arguments(device, stream, spec2)
    stream.sync()
    t2 = time.perf_counter()
    code = (ROOT / "tests" / "kernels" / source).read_text()
    program = Program(code, "c++", ProgramOptions(name=source)).compile()
    kernel = program.get_kernel(name)
    t3 = time.perf_counter()
    start, end = (device.create_event({"enable_timing": True}) for _ in range(2))
    stream.record(start)
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, *args)
    stream.record(end)
    stream.sync()
    t4 = time.perf_counter()
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, *args)
    stream.sync()
    t5 = time.perf_counter()
    launch(stream, LaunchConfig(grid=grid2, block=block2), program.get_kernel(name2), *args2)
    stream.sync()
    t6 = time.perf_counter()
    print(json.dumps({"import": t1 - t0, "device": t2 - t1, "get_kernel": t3 - t2,
                      "first_launch": t4 - t3, "second_launch": t5 - t4,
                      "next_kernel": t6 - t5, "event_ms": end - start}))


def _run_child(kernel: str, cache_dir: str, root: Path) -> dict:
    """One timed process importing ptxport from the checkout at `root`."""
    env = dict(os.environ, PTXPORT_CACHE_DIR=cache_dir, PYTHONPYCACHEPREFIX=str(PYCACHE),
               PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", kernel], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"the {kernel} process ({root}) failed:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process"] = elapsed
    return result


def _medians(runs: list[dict]) -> dict:
    return {phase: statistics.median(r[phase] for r in runs) for phase in PHASES + ("event_ms",)}


def measure(kernel: str, runs: int, cold_runs: int, roots: dict[str, Path]) -> dict:
    """Cold, then warm processes for each checkout in `roots`, taking turns (so that the
    load of a shared machine falls on all alike)."""
    cold: dict[str, list] = {label: [] for label in roots}
    warm: dict[str, list] = {label: [] for label in roots}
    for _ in range(cold_runs):
        for label, root in roots.items():
            with tempfile.TemporaryDirectory(prefix="ptxport-cold-") as cache:
                cold[label].append(_run_child(kernel, cache, root))
    caches = {label: tempfile.mkdtemp(prefix="ptxport-warm-") for label in roots}
    for label, root in roots.items():
        _run_child(kernel, caches[label], root)              # fills the cache, untimed
    for _ in range(runs):
        for label, root in roots.items():
            warm[label].append(_run_child(kernel, caches[label], root))
    for cache in caches.values():
        shutil.rmtree(cache, ignore_errors=True)
    return {label: {"cold": _medians(cold[label]), "warm": _medians(warm[label]),
                    "cold_runs": cold[label], "warm_runs": warm[label]} for label in roots}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="warm processes per kernel")
    parser.add_argument("--cold-runs", type=int, default=3, help="cold processes per kernel")
    parser.add_argument("--kernels", default=",".join(CASES),
                        help="cases (each names its first kernel)")
    parser.add_argument("--compare", type=Path,
                        help="another checkout of ptxport (e.g. an older commit from git "
                             "archive) to time alongside, process by process")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child)
        return
    kernels = options.kernels.split(",")
    unknown = [k for k in kernels if k not in CASES]
    if unknown:
        raise SystemExit(f"unknown kernels {unknown}; known: {', '.join(CASES)}")
    roots = {"this": ROOT}
    if options.compare:
        roots["other"] = options.compare.resolve()
    for root in roots.values():                   # fills the bytecode caches
        with tempfile.TemporaryDirectory(prefix="ptxport-pyc-") as cache:
            _run_child(kernels[0], cache, root)
    results = {}
    print(f"{'kernel':18} {'tree':5} {'cache':5} " + " ".join(f"{p[:12]:>12}" for p in PHASES)
          + "  event  (ms)")
    for kernel in kernels:
        results[kernel] = measure(kernel, options.runs, options.cold_runs, roots)
        for label in roots:
            for state in ("cold", "warm"):
                row = results[kernel][label][state]
                print(f"{kernel:18} {label:5} {state:5} "
                      + " ".join(f"{1000 * row[p]:12.1f}" for p in PHASES)
                      + f" {row['event_ms']:6.1f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "warm_start.json"
    path.write_text(json.dumps({"machine": platform.processor() or platform.machine(),
                                "python": platform.python_version(),
                                "trees": {label: str(root) for label, root in roots.items()},
                                "runs": options.runs, "cold_runs": options.cold_runs,
                                "kernels": results}, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
