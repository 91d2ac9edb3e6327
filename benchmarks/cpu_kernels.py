"""How fast does ptxport run CUDA kernels on the CPU, next to the same algorithm in plain C?

For kernels of the corpus (tests/kernels/*.cu: elementwise, reductions, tiled GEMM,
transpose, softmax, scans, histogram, stencil) it times ptxport's CPU device against a
straightforward C version of the same computation (benchmarks/c/*.c: loops gcc vectorises,
`omp parallel for` over the outer loop), built with `gcc -O3 -march=native -fopenmp` into a
shared library in benchmarks/build/ and called through ctypes on the same numpy arrays.

For each kernel it launches once untimed (this compiles the kernel for the CPU) and checks
that ptxport's result agrees with C's (exactly for integer results, within float tolerance
otherwise). Then for each core count (one core: set_workers(1) and omp_set_num_threads(1);
then every core this process may use) it times C and ptxport side by side in --rounds
rounds (--order rounds, the default; 6 rounds of one timed run a side by default): blocks of
runs of one side, in the order C ptxport | ptxport C | C ptxport ..., each block after up to
3 untimed runs that warm the caches (the
other side's block evicted them) and, where it follows C's on several cores, after a 0.03 s
pause in which libgomp's spinning threads go to sleep (timed while they spin, ptxport's
workers lost their cores: see ORDERS). Outputs are reset untimed before each run (large
arrays, both sides', are fresh mappings: fresh_mappings), and the process's figure for a
kernel is the median of each side's runs and ptxport / C (the last run at every further
core count is checked too). A ptxport run is launch() + stream.sync().

The host's single cores also run in slow and fast phases (core-bound code 1.5-1.6x slower in
a slow one, within one process too: docs/cpu-target-measurements.md "Session 12: gemm9"), so
each round's blocks are timed with a clock probe of plain Python work on the main thread
(bench_stats.probe_ms) before the first block and after each, and each process's cell keeps
its blocks (runs, warm-up runs, probes). A second table gives per kernel and core count
"probe P/C" (the probe beside ptxport's blocks over beside C's: about 1 where both sides ran
in the same phase), "phase" (the cell's probes over its process's fastest), the
phase-matched ratio -- ptxport / C over only the rounds whose C and ptxport blocks' probes
all lie within 15% of each other (bench_stats.PHASE_TOLERANCE; a rule on the probes alone,
the same for both sides), the median over processes of each one's median, with how many
pairs were kept of all -- and the warm-up's "cold" and "warm" (a block's first and last
untimed run over its timed median: warm about 1 says the warm-up reached the timed runs'
speed). On 16 cores the probe reads the main thread's core only.

The shared host this is quoted from swings whole processes (one ran up to 2x slower than
the next) and stretches of tens of milliseconds within one, so the run is --processes fresh
processes (3 by default, about 10-12 s each on the GPU host plus the first one's compiles;
7 for figures to quote), one after another, each measuring everything (the odd ones in
reverse kernel order), each first running C on every core for --warmup seconds (cores out
of their idle states), and the table gives per kernel and core count the *median over
processes of each process's ratio* (C and ptxport timed in the same process, so a slow
process slows both), with its least and largest; the headline is the geometric mean of
those medians (goal: <= 1.5 on one core), printed with the spread of the processes' own
geometric means and each kernel's noise (its largest ratio over its least). The one-core
figures come from processes pinned to one CPU (--pin, by default the last this process may
use; each process is then two: one pinned for one core, one unpinned for the other core
counts): on the GPU host unpinned processes' one-core geometric means ranged 1.36-1.61x
over 11 processes, pinned ones 1.42-1.51x over 11, on CPU 0 as on CPU 9. Each process
reports its CPU affinity and the CPUs its main thread was seen on after one-core blocks.
--processes 1 --pin none measures in this process.
A kernel whose first launch takes more than --slow seconds is not launched again: its
one-core time is that launch's (JIT included), so that the whole benchmark stays short.
A kernel the CPU target cannot compile yet is reported as "unsupported: <reason>", so the
benchmark can be re-run as support lands. It also times a launch of one block that does no
work, which is the fixed cost every launch pays.

Beside ptxport it times Intel's OpenCL CPU runtime on the same algorithms where an OpenCL
CPU device is present (issue 15's yardstick: no kernel slower than it): the kernels ported
line for line to OpenCL C (benchmarks/opencl/kernels.cl; warp shuffles as 32-lane sub-group
reductions and scans), same launches, checked against C; columns "OCL ms" and "OCL/C".
Intel's runtime chooses its thread count when it starts, so each core count runs in a child
process (one core: pinned to one CPU, DPCPP_CPU_NUM_CUS=1), alternating with C there.
--no-opencl leaves it out.

    python benchmarks/cpu_kernels.py [--quick] [--kernels saxpy,gemm] [--processes 3]
                                   [--reps 6] [--budget 1.0] [--rounds 6] [--slow 10]
                                   [--pin auto|none|CPU] [--no-opencl] [--json PATH]

prints a table and writes benchmarks/results/cpu_kernels.json (or --json): each kernel's
merged cells (c_ms, ptxport_ms and ratio the medians over processes; ratio_min, ratio_max,
noise and the per-process values in per_process; the phase columns probe_ratio, phase,
matched_ratio, pairs, matched, cold, warm), "geomean" (of the medians, and under
"process_geomean" the processes' own), and under "processes" each one's rows as one
process writes them (each cell's "blocks" with their probes). scan_blelloch's C is a
running sum, not the kernel's tree: a line under the table gives the same Blelloch tree in C
(scan.c's scan_blelloch_tiles_i32) and ptxport / it per core count, in its cells as
c_tree_ms and tree_ratio.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import bench_stats  # (a sibling module: benchmarks/ is the script's folder)
import numpy as np

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import PtxportError, UnsupportedFeatureError
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
C_SOURCES = Path(__file__).resolve().parent / "c"
BUILD = Path(__file__).resolve().parent / "build"
RESULTS = Path(__file__).resolve().parent / "results"
CFLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]


def fresh_mappings(threshold: int = 1 << 20) -> bool:
    """Make glibc's malloc give every block of `threshold` bytes or more a mapping of its own
    (mallopt M_MMAP_THRESHOLD; False where the C library has no mallopt).

    By default glibc raises its mmap threshold to the size of each mapped block freed (up to
    32 MiB), so that once one kernel's 16 MB arrays were freed, the next kernel's arrays
    (numpy's, C's and ptxport's device buffers alike) came from the brk heap: pages used
    before, at any offset, which need not get the huge pages numpy asks for on fresh ones.
    On the GPU machine's Xeon C's one-thread stencil took 4.6-4.8 ms in 5 of 6 processes
    that ran saxpy, vector_add and transpose first and 1.3-1.4 ms where it ran alone (its
    16-thread runs 0.41-0.52 ms against 0.19-0.27; not yet timed there with this fixed:
    c_slow_mode.py heap). A fixed threshold keeps every process's large arrays as a fresh
    process's are, whatever ran before."""
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(ctypes.c_int(-3), ctypes.c_int(threshold)))  # M_MMAP_THRESHOLD
    except (AttributeError, OSError):
        return False


fresh_mappings()

# ctypes signatures of benchmarks/c/*.c: "p" a pointer (numpy array), "i" int, "l" long,
# "f" float, "d" double; the first letter is the result ("v" none).
_C_SIGNATURES = {
    "bench_set_threads": "vi",
    "saxpy": "vfppl",
    "vector_add_f32": "vpppl",
    "reduce_sum_i32": "ipl",
    "reduce_sum_f64": "dpl",
    "sgemm": "viiifppfp",
    "transpose": "vppii",
    "softmax_rows": "vppii",
    "scan_exclusive_tiles_i32": "vpppli",
    "scan_blelloch_tiles_i32": "vpppli",
    "scan_inclusive_tiles_f32": "vppli",
    "histogram_u8": "vppl",
    "stencil_2d_5pt": "vppii",
}
_CTYPES = {"v": None, "p": ctypes.c_void_p, "i": ctypes.c_int,
           "l": ctypes.c_long, "f": ctypes.c_float, "d": ctypes.c_double}


# --- how the two sides share the machine -----------------------------------------------------

def add_machine_flags(parser: argparse.ArgumentParser, order: str = "separate",
                      rounds: int | None = None) -> None:
    """The flags cpu_kernels.py and cpu_scaling.py share: run order (`rounds`: --rounds'
    default, ROUNDS if None), libgomp's waiting, ptxport's schedule, and cores kept busy by
    other processes (to see how each side copes)."""
    parser.add_argument("--order", choices=ORDERS, default=order,
                        help="all of C's runs, then all of ptxport's; C and ptxport runs "
                             "alternately; or --rounds rounds of both (see ORDERS)")
    parser.add_argument("--rounds", type=int, default=rounds or ROUNDS,
                        help="with --order rounds: blocks of runs a side, C and ptxport "
                             "taking turns to go first")
    parser.add_argument("--omp-wait", choices=("default", "active", "passive"),
                        default="default",
                        help="OMP_WAIT_POLICY for the C baseline (set before libgomp loads): "
                             "passive threads sleep at once after a parallel loop")
    parser.add_argument("--schedule", choices=cpu_executor.SCHEDULES,
                        default=cpu_executor.SCHEDULES[0],
                        help="how ptxport's workers share a grid's blocks (set_schedule)")
    parser.add_argument("--spin", type=float, default=None,
                        help="seconds ptxport's idle workers watch for the next launch "
                             "before they park (pool.set_spin; default: the pool's)")
    parser.add_argument("--busy", type=int, default=0,
                        help="run this many other processes that spin on the CPU meanwhile "
                             "(cores that something else takes)")


class MachineSettings:
    """`with MachineSettings(args):` the flags of add_machine_flags in force (the C library
    is loaded inside, after OMP_WAIT_POLICY is set)."""

    def __init__(self, args: argparse.Namespace):
        self.args, self.spinners = args, []

    def __enter__(self) -> MachineSettings:
        if self.args.omp_wait != "default":
            os.environ["OMP_WAIT_POLICY"] = self.args.omp_wait
        cpu_executor.set_schedule(self.args.schedule)
        if self.args.spin is not None:
            cpu_pool.set_spin(self.args.spin)
        self.spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                         for _ in range(self.args.busy)]
        return self

    def __exit__(self, *exc) -> None:
        for spinner in self.spinners:
            spinner.kill()
            spinner.wait()
        cpu_executor.set_schedule(cpu_executor.SCHEDULES[0])


# --- the C baselines -------------------------------------------------------------------------

def build_c_library() -> ctypes.CDLL:
    """Compile benchmarks/c/*.c into one shared library (named by a hash of the sources and
    flags, so an edit rebuilds it) and load it with its function signatures."""
    sources = sorted(C_SOURCES.glob("*.c"))
    digest = hashlib.sha256(" ".join(CFLAGS).encode())
    for path in sources:
        digest.update(path.name.encode() + path.read_bytes())
    library = BUILD / f"cpu_kernels_{digest.hexdigest()[:16]}.so"
    if not library.exists():
        BUILD.mkdir(parents=True, exist_ok=True)
        for stale in BUILD.glob("cpu_kernels_*.so"):
            stale.unlink()
        command = ["gcc", *CFLAGS, "-o", str(library), *map(str, sources), "-lm"]
        try:
            subprocess.run(command, check=True, capture_output=True, text=True)
        except FileNotFoundError:
            sys.exit("cpu_kernels.py needs gcc on PATH to build the C baselines")
        except subprocess.CalledProcessError as e:
            sys.exit(f"building the C baselines failed: {' '.join(command)}\n{e.stderr}")
    lib = ctypes.CDLL(str(library))
    for name, signature in _C_SIGNATURES.items():
        function = getattr(lib, name)
        function.restype = _CTYPES[signature[0]]
        function.argtypes = [_CTYPES[c] for c in signature[1:]]
    return lib


def _p(array: np.ndarray) -> int:
    return array.ctypes.data


# --- the problems ----------------------------------------------------------------------------

@dataclass
class Problem:
    """One kernel's launches on one problem, and the C call that computes the same outputs.

    `arrays` holds every buffer's initial contents; the buffers named in `outputs` are reset
    to them (untimed) before each run and compared afterwards. A launch's arguments name
    buffers by key; other arguments are numpy scalars, passed as they are.
    """

    size: str
    arrays: dict[str, np.ndarray]
    outputs: tuple[str, ...]
    launches: list[tuple[LaunchConfig, tuple]]
    c_run: Callable[[ctypes.CDLL, dict[str, np.ndarray]], None]
    rtol: float = 0.0
    atol: float = 0.0
    # The kernel's own algorithm in C where c_run computes the outputs another way (timed
    # beside the table: "c_tree_ms" and "tree_ratio", ptxport / it; measure_side_by_side).
    c_tree: Callable[[ctypes.CDLL, dict[str, np.ndarray]], None] | None = None

    @property
    def blocks(self) -> int:
        return sum(math.prod(config.grid) for config, _ in self.launches)


@dataclass(frozen=True)
class Case:
    name: str          # the table's row and --kernels' name
    algorithm: str
    source: str        # tests/kernels/<source>.cu
    kernel: str
    full: int          # the problem's size parameter, and with --quick
    quick: int
    make: Callable[[int, np.random.Generator], Problem] = field(repr=False)


def _saxpy(n: int, rng: np.random.Generator) -> Problem:
    a = np.float32(2.5)
    arrays = {"x": rng.random(n, dtype=np.float32), "y": rng.random(n, dtype=np.float32)}
    grid = min((n + 255) // 256, 1024)
    return Problem(
        f"n={n}", arrays, ("y",),
        [(LaunchConfig(grid=grid, block=256), (a, "x", "y", np.int32(n)))],
        lambda lib, m: lib.saxpy(a, _p(m["x"]), _p(m["y"]), n), rtol=1e-6)


def _vector_add(n: int, rng: np.random.Generator) -> Problem:
    arrays = {"a": rng.random(n, dtype=np.float32), "b": rng.random(n, dtype=np.float32),
              "c": np.zeros(n, np.float32)}
    return Problem(
        f"n={n}", arrays, ("c",),
        [(LaunchConfig(grid=(n + 127) // 128, block=128), ("a", "b", "c", np.int32(n)))],
        lambda lib, m: lib.vector_add_f32(_p(m["a"]), _p(m["b"]), _p(m["c"]), n))


def _reduce_shared(n: int, rng: np.random.Generator) -> Problem:
    # Small integers: every partial sum fits an int, so the sum is exact in any order.
    arrays = {"x": rng.integers(0, 10, n, dtype=np.int32), "out": np.zeros(1, np.int32)}

    def c_run(lib, m):
        m["out"][0] = lib.reduce_sum_i32(_p(m["x"]), n)

    grid = min((n + 511) // 512, 256)
    return Problem(f"n={n}", arrays, ("out",),
                   [(LaunchConfig(grid=grid, block=256), ("x", "out", np.int32(n)))], c_run)


def _reduce_warp(n: int, rng: np.random.Generator) -> Problem:
    # Integer-valued doubles with a sum below 2**53: exact whatever the order of the atomics.
    arrays = {"x": rng.integers(0, 10, n).astype(np.float64), "out": np.zeros(1, np.float64)}

    def c_run(lib, m):
        m["out"][0] = lib.reduce_sum_f64(_p(m["x"]), n)

    grid = min((n + 255) // 256, 1024)
    return Problem(f"n={n}", arrays, ("out",),
                   [(LaunchConfig(grid=grid, block=256), ("x", "out", np.int32(n)))], c_run)


def _gemm(n: int, rng: np.random.Generator) -> Problem:
    alpha, beta = np.float32(1.5), np.float32(0.5)
    arrays = {"A": rng.standard_normal((n, n), dtype=np.float32),
              "B": rng.standard_normal((n, n), dtype=np.float32),
              "C": rng.standard_normal((n, n), dtype=np.float32)}
    grid = ((n + 15) // 16, (n + 15) // 16)
    args = (np.int32(n), np.int32(n), np.int32(n), alpha, "A", "B", beta, "C")
    # Both sum in k order with fmas, but may round differently where one contracts and the
    # other does not: compare against the size of a row's products.
    return Problem(
        f"{n}x{n}x{n}", arrays, ("C",), [(LaunchConfig(grid=grid, block=(16, 16)), args)],
        lambda lib, m: lib.sgemm(n, n, n, alpha, _p(m["A"]), _p(m["B"]), beta, _p(m["C"])),
        rtol=1e-4, atol=1e-4 * math.sqrt(n))


def _transpose(n: int, rng: np.random.Generator) -> Problem:
    arrays = {"in": rng.random((n, n), dtype=np.float32), "out": np.zeros((n, n), np.float32)}
    grid = ((n + 31) // 32, (n + 31) // 32)
    return Problem(
        f"{n}x{n}", arrays, ("out",),
        [(LaunchConfig(grid=grid, block=(32, 8)), ("in", "out", np.int32(n), np.int32(n)))],
        lambda lib, m: lib.transpose(_p(m["in"]), _p(m["out"]), n, n))


def _softmax(rows: int, rng: np.random.Generator) -> Problem:
    cols = 1024
    arrays = {"x": rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(4),
              "y": np.zeros((rows, cols), np.float32)}
    launches = [(LaunchConfig(grid=(rows + 3) // 4, block=128),
                 ("x", "y", np.int32(rows), np.int32(cols)))]
    return Problem(f"{rows}x{cols}", arrays, ("y",), launches,
                   lambda lib, m: lib.softmax_rows(_p(m["x"]), _p(m["y"]), rows, cols),
                   rtol=1e-5, atol=1e-9)


def _scan_blelloch(n: int, rng: np.random.Generator) -> Problem:
    block, tile = 512, 1024
    tiles = (n + tile - 1) // tile
    arrays = {"x": rng.integers(0, 10, n, dtype=np.int32), "y": np.zeros(n, np.int32),
              "sums": np.zeros(tiles, np.int32)}
    launches = [(LaunchConfig(grid=tiles, block=block, shmem_size=2 * block * 4),
                 ("x", "y", "sums", np.int32(n)))]
    return Problem(
        f"n={n}, tile={tile}", arrays, ("y", "sums"), launches,
        lambda lib, m: lib.scan_exclusive_tiles_i32(_p(m["x"]), _p(m["y"]), _p(m["sums"]), n,
                                                    tile),
        c_tree=lambda lib, m: lib.scan_blelloch_tiles_i32(_p(m["x"]), _p(m["y"]),
                                                          _p(m["sums"]), n, tile))


def _scan_warp(n: int, rng: np.random.Generator) -> Problem:
    block = 256
    # Integer-valued floats: every partial sum of a tile is exact, so any order agrees.
    arrays = {"x": rng.integers(0, 10, n).astype(np.float32), "y": np.zeros(n, np.float32)}
    launches = [(LaunchConfig(grid=(n + block - 1) // block, block=block),
                 ("x", "y", np.int32(n)))]
    return Problem(f"n={n}, tile={block}", arrays, ("y",), launches,
                   lambda lib, m: lib.scan_inclusive_tiles_f32(_p(m["x"]), _p(m["y"]), n,
                                                               block))


def _histogram(n: int, rng: np.random.Generator) -> Problem:
    arrays = {"data": rng.integers(0, 256, n, dtype=np.uint8),
              "hist": np.zeros(256, np.uint32)}
    return Problem(
        f"n={n} bytes", arrays, ("hist",),
        [(LaunchConfig(grid=256, block=256), ("data", "hist", np.int32(n)))],
        lambda lib, m: lib.histogram_u8(_p(m["data"]), _p(m["hist"]), n))


def _stencil(n: int, rng: np.random.Generator) -> Problem:
    arrays = {"in": rng.random((n, n), dtype=np.float32), "out": np.zeros((n, n), np.float32)}
    grid = ((n + 15) // 16, (n + 15) // 16)
    return Problem(
        f"{n}x{n}", arrays, ("out",),
        [(LaunchConfig(grid=grid, block=(16, 16)), ("in", "out", np.int32(n), np.int32(n)))],
        lambda lib, m: lib.stencil_2d_5pt(_p(m["in"]), _p(m["out"]), n, n))


CASES = [
    Case("saxpy", "elementwise", "saxpy", "saxpy", 1 << 22, 1 << 18, _saxpy),
    Case("vector_add", "elementwise", "vector_add", "vector_add_f32", 1 << 22, 1 << 18,
         _vector_add),
    Case("reduce_shared", "reduction (shared-memory tree)", "reduce_shared", "reduce_sum_i32",
         1 << 24, 1 << 20, _reduce_shared),
    Case("reduce_warp", "reduction (warp shuffle)", "reduce_warp", "reduce_sum_warp_f64",
         1 << 23, 1 << 19, _reduce_warp),
    Case("gemm", "tiled GEMM (float)", "gemm_tiled", "sgemm_tiled", 512, 128, _gemm),
    Case("transpose", "transpose (shared memory)", "transpose", "transpose_shared_padded",
         2048, 512, _transpose),
    Case("softmax", "row-wise softmax (warp per row)", "softmax", "softmax_rows_warp", 4096,
         512, _softmax),
    Case("scan_blelloch", "block scan (shared memory)", "scan_blelloch",
         "scan_exclusive_blelloch", 1 << 22, 1 << 18, _scan_blelloch),
    Case("scan_warp", "block scan (warp shuffle)", "scan_warp", "scan_block_inclusive",
         1 << 22, 1 << 18, _scan_warp),
    Case("histogram", "histogram (shared atomics)", "histogram", "histogram_shared", 1 << 24,
         1 << 20, _histogram),
    Case("stencil", "2D 5-point stencil", "stencil_2d", "stencil_2d_5pt", 2048, 512, _stencil),
]


# --- running and timing ----------------------------------------------------------------------

class NotRunnable(Exception):
    """ptxport cannot run this kernel; the message is the table's entry."""


class PtxportRun:
    """A problem's buffers on the CPU device, its kernel, and one timed run."""

    def __init__(self, case: Case, problem: Problem, device: Device, stream, objects: dict):
        self.problem, self.stream = problem, stream
        try:
            if case.source not in objects:
                source = (KERNELS / f"{case.source}.cu").read_text()
                objects[case.source] = Program(source, code_type="c++").compile("native")
            self.kernel = objects[case.source].get_kernel(case.kernel)
        except PtxportError as e:
            raise NotRunnable(f"failed: {_first_line(e)}") from e
        self.buffers = {}
        for name, array in problem.arrays.items():
            buffer = device.allocate(array.nbytes, stream=stream)
            buffer.copy_from(array, stream=stream)
            self.buffers[name] = buffer
        stream.sync()

    def reset(self) -> None:
        for name in self.problem.outputs:
            self.buffers[name].copy_from(self.problem.arrays[name], stream=self.stream)
        self.stream.sync()

    def run(self) -> float:
        """Seconds for the launches and the sync."""
        start = time.perf_counter()
        for config, args in self.problem.launches:
            launch(self.stream, config, self.kernel,
                   *(self.buffers[a] if isinstance(a, str) else a for a in args))
        self.stream.sync()
        return time.perf_counter() - start

    def first_run(self) -> float:
        """The untimed run that compiles the kernel for the CPU; its seconds, JIT included."""
        self.reset()
        try:
            return self.run()
        except UnsupportedFeatureError as e:
            raise NotRunnable(f"unsupported: {_first_line(e)}") from e
        except PtxportError as e:
            raise NotRunnable(f"failed: {_first_line(e)}") from e

    def results(self) -> dict[str, np.ndarray]:
        out = {name: np.empty_like(self.problem.arrays[name]) for name in self.problem.outputs}
        for name, array in out.items():
            self.buffers[name].copy_to(array, stream=self.stream)
        self.stream.sync()
        return out

    def close(self) -> None:
        for buffer in self.buffers.values():
            buffer.close()
        self.stream.sync()


def aligned_copy(array: np.ndarray, alignment: int = 256) -> np.ndarray:
    """A copy of `array` that starts at a multiple of `alignment` bytes, as cudaMalloc's
    memory (and ptxport's device buffers) does. A plain copy of a large array is a fresh
    glibc mapping whose data starts 16 bytes past a page: on the GPU host's Xeon C's sgemm
    took 13.1-13.5 ms on such arrays against 8.2-9.3 on 256-byte aligned ones (session 12,
    benchmarks/cpu_gemm_modes.py), so C was timed slower than its code is."""
    raw = np.empty(array.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    copy = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


class CRun:
    """The same problem on host arrays (aligned as device memory is), computed by the C
    library."""

    def __init__(self, problem: Problem, lib: ctypes.CDLL, call=None):
        self.problem, self.lib, self.call = problem, lib, call or problem.c_run
        self.arrays = {name: aligned_copy(array) for name, array in problem.arrays.items()}

    def reset(self) -> None:
        for name in self.problem.outputs:
            self.arrays[name][...] = self.problem.arrays[name]

    def run(self) -> float:
        start = time.perf_counter()
        self.call(self.lib, self.arrays)
        return time.perf_counter() - start

    def results(self) -> dict[str, np.ndarray]:
        return {name: self.arrays[name] for name in self.problem.outputs}


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def mismatch(problem: Problem, ptx: dict[str, np.ndarray], c: dict[str, np.ndarray]) \
        -> str | None:
    """Where ptxport's outputs differ from C's beyond the problem's tolerance, or None."""
    for name in problem.outputs:
        got, want = ptx[name].astype(np.float64), c[name].astype(np.float64)
        bad = ~np.isclose(got, want, rtol=problem.rtol, atol=problem.atol, equal_nan=True)
        if bad.any():
            index = np.unravel_index(int(np.argmax(bad)), bad.shape)
            return (f"mismatch: {name}{list(index)} ptxport {got[index]!r} C {want[index]!r} "
                    f"({int(bad.sum())} of {bad.size} differ)")
    return None


def set_cores(lib: ctypes.CDLL, cores: int) -> None:
    lib.bench_set_threads(cores)
    cpu_executor.set_workers(cores)


# How the C and ptxport runs of one kernel and core count follow each other (--order):
# "separate", every C run, a pause (SETTLE_S), then every ptxport run; "alternate", C,
# ptxport, C, ...; "rounds" (cpu_kernels.py's default), --rounds rounds of "separate" blocks
# in the order C ptxport | ptxport C | C ptxport ..., each block after its own warm-up runs,
# so that a slow stretch of the host lands on both sides and a drift over the rounds cancels.
# After a parallel loop libgomp's threads spin for a while (GOMP_SPINCOUNT: 300000 pauses by
# default, milliseconds) before they sleep; alternating, they spin through the ptxport run
# that follows and take the cores that ptxport's workers need once both together have more
# threads than there are cores. On the GPU machine's 16 vCPUs that made ptxport on 16 workers
# slower than on 8 (gemm 7.97 ms against 6.60; with OMP_WAIT_POLICY=passive 3.29, separate
# 3.54: data/cpu_scaling_h100host_2fd2abf.txt). Separate blocks time each side alone, C with
# libgomp's default waiting (its threads as hot as in a program that runs parallel loops back
# to back); a ptxport block that follows a C block on more than one core waits SETTLE_S first:
# on the GPU host libgomp's 15 other threads used no more CPU time from 8.1-8.8 ms after the
# end of a 16-thread loop on (session 13, 5 trials, their /proc schedstat sampled about every
# 2.6 ms; cpu_limits.py's spin part: threads asleep after gaps of 10 ms), so 0.03 s (0.1 s
# until session 13) leaves them 3x that.
# cpu_kernels.py's default is 6 rounds of one timed run a block (--reps 6): on the GPU host
# (session 13, 3 processes of 3 rounds x 2 runs against 2 of 6 x 1, one core) the clock
# probe beside ptxport's blocks over that beside C's lay further from 1 with 3 rounds (the
# cells' |log| median 0.030, 90th percentile 0.25; with 6: 0.019 and 0.11), and fewer rounds'
# C and ptxport blocks ran in the same phase (60% against 68%: bench_stats' phase notes).
ORDERS = ("separate", "alternate", "rounds")
SETTLE_S = 0.03
ROUNDS = 6


def time_side_by_side(c_run: CRun, ptx_run: PtxportRun, reps: int, budget: float,
                      order: str = ORDERS[0], rounds: int = ROUNDS,
                      settle: float = SETTLE_S, blocks: list | None = None) \
        -> tuple[list[float], list[float]]:
    """C's and ptxport's run times, in `order` (ORDERS), until `reps` each, or at least 3
    once `budget` seconds have passed; only one if a single run (or pair) takes more than
    half the budget (a kernel ptxport runs very slowly must not hold up the rest). "rounds"
    splits reps and budget over `rounds` blocks a side and stops after the round in which
    the budget ran out, and appends its blocks, with the clock probe beside each, to `blocks`
    (_time_rounds); `settle`: the pause before a ptxport block that follows C's."""
    if order == "rounds":
        return _time_rounds(c_run, ptx_run, reps, budget, rounds, settle, blocks)
    if order == "separate":
        c_times = _time_alone(c_run, reps, budget / 2)
        time.sleep(settle)
        return c_times, _time_alone(ptx_run, reps, budget / 2)
    c_times, ptx_times = [], []
    start = time.perf_counter()
    least = 3
    while len(c_times) < reps:
        elapsed = time.perf_counter() - start
        if len(c_times) == 1 and elapsed > budget / 2:
            least = 1
        if len(c_times) >= least and elapsed >= budget:
            break
        c_run.reset()
        c_times.append(c_run.run())
        ptx_run.reset()
        ptx_times.append(ptx_run.run())
    return c_times, ptx_times


def _time_rounds(c_run: CRun, ptx_run: PtxportRun, reps: int, budget: float, rounds: int,
                 settle: float, blocks: list | None = None) -> tuple[list[float], list[float]]:
    """time_side_by_side's "rounds": blocks of -(-reps // rounds) runs a side in the order
    C P | P C | C P ..., each with budget / (2 * rounds) seconds (_time_alone), and the
    clock probe (bench_stats.probe_ms) before the first block and after each (after the
    settle pause where a ptxport block follows: the probe right before a block is the one
    after the block before it). Each block is appended to `blocks` as bench_stats' phase
    notes describe."""
    per_block, block_budget = -(-reps // rounds), budget / (2 * rounds)
    sides = {"c": c_run, "ptxport": ptx_run}
    times: dict[str, list[float]] = {"c": [], "ptxport": []}
    blocks = [] if blocks is None else blocks
    sequence = [(r, side) for r, order in enumerate(bench_stats.block_order(rounds))
                for side in order]
    start, probe = time.perf_counter(), bench_stats.probe_ms()
    for i, (round_number, side) in enumerate(sequence):
        warm: list[float] = []
        ms = _time_alone(sides[side], per_block, block_budget, least=1, warm=warm)
        times[side] += ms
        following = sequence[i + 1] if i + 1 < len(sequence) else None
        if side == "c" and following and following[1] == "ptxport":
            time.sleep(settle)
        after = bench_stats.probe_ms()
        blocks.append({"side": side, "round": round_number, "ms": [t * 1e3 for t in ms],
                       "warm_ms": [t * 1e3 for t in warm], "probe_ms": [probe, after]})
        probe = after
        if following is None or following[0] == round_number:
            continue
        elapsed = time.perf_counter() - start
        if elapsed >= budget or (round_number == 0 and elapsed > budget / 2):
            break
    return times["c"], times["ptxport"]


# Untimed runs of one side before its timed ones (separate order): at most WARMUP_RUNS, and
# none after a quarter of the side's budget. On the GPU machine's Xeon (three processes of
# one call) C's one-thread stencil took 2.2-2.9 ms in its first runs after ptxport's launch
# and check had run, as with its caches evicted (its 16 MB input from memory), and 1.4-1.8
# ms only after three or four runs, so that the median of 5 timed runs was a cold run's:
# C 2.0-2.4 ms against 1.4 in a process running C alone (benchmarks/c_slow_mode.py;
# docs/cpu-target-measurements.md).
WARMUP_RUNS = 3


def _time_alone(run: CRun | PtxportRun, reps: int, budget: float, least: int = 3,
                warm: list[float] | None = None) -> list[float]:
    """One side's run times (see time_side_by_side), after its warm-up (WARMUP_RUNS, their
    times appended to `warm`): `reps` of them, or at least `least` once `budget` seconds have
    passed."""
    start = time.perf_counter()
    warm = [] if warm is None else warm
    for _ in range(WARMUP_RUNS):
        run.reset()
        warm.append(run.run())
        if time.perf_counter() - start > budget / 4:
            break
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < reps:
        elapsed = time.perf_counter() - start
        if len(times) == 1 and elapsed > budget / 2:
            least = 1
        if len(times) >= least and elapsed >= budget:
            break
        run.reset()
        times.append(run.run())
    return times


def measure_case(case: Case, problem: Problem, lib, device, objects, core_counts,
                 settings: argparse.Namespace) -> dict:
    row = {"kernel": case.name, "algorithm": case.algorithm,
           "corpus": f"tests/kernels/{case.source}.cu:{case.kernel}", "size": problem.size,
           "blocks": problem.blocks, "status": "ok", "cores": {}}
    c_run = CRun(problem, lib)
    stream = device.create_stream()
    try:
        ptx_run = PtxportRun(case, problem, device, stream, objects)
        try:
            measure_side_by_side(row, problem, c_run, ptx_run, lib, core_counts, settings)
        finally:
            ptx_run.close()
    except NotRunnable as e:
        row["status"], row["cores"] = str(e), {}
    except PtxportError as e:
        row["status"] = f"failed: {_first_line(e)}"
    if not row["cores"]:  # C's own time, so the row still says how big the problem is
        set_cores(lib, core_counts[0])
        row["cores"] = {str(core_counts[0]): {"c_ms": median_c_ms(c_run)}}
    stream.close()
    return row


def measure_side_by_side(row: dict, problem: Problem, c_run: CRun, ptx_run: PtxportRun, lib,
                         core_counts, settings: argparse.Namespace) -> None:
    """Fill row["cores"]: per core count, the medians of C and ptxport and their ratio.

    The first launch (one core) compiles the kernel and is checked against C; at other core
    counts the last timed run is checked. A kernel whose first launch takes longer than
    settings.slow seconds is not launched again: its one-core time is that launch's, JIT
    included, which overstates it by the compile time (a second or two)."""
    for cores in core_counts:
        set_cores(lib, cores)
        c_run.reset()
        c_run.run()
        first = cores == core_counts[0]
        if first:
            row["first_launch_ms"] = ptx_run.first_run() * 1e3
            check(row, problem, ptx_run, c_run, cores)
            if row["first_launch_ms"] > settings.slow * 1e3:
                c_ms, ptx_ms = median_c_ms(c_run), row["first_launch_ms"]
                row["cores"][str(cores)] = {"c_ms": c_ms, "ptxport_ms": ptx_ms,
                                            "ratio": ptx_ms / c_ms, "runs": 0}
                return
        blocks: list[dict] = []
        c_times, ptx_times = time_side_by_side(
            c_run, ptx_run, settings.reps, settings.budget, settings.order, settings.rounds,
            SETTLE_S if cores > 1 else 0.0, blocks)
        if cores == 1:
            CPUS_SEEN.add(current_cpu())
        if not first:
            check(row, problem, ptx_run, c_run, cores)
        c_ms, ptx_ms = statistics.median(c_times) * 1e3, statistics.median(ptx_times) * 1e3
        row["cores"][str(cores)] = {
            "c_ms": c_ms, "ptxport_ms": ptx_ms, "ratio": ptx_ms / c_ms, "runs": len(c_times),
            "c_runs_ms": [t * 1e3 for t in c_times],
            "ptxport_runs_ms": [t * 1e3 for t in ptx_times]}
        if blocks:
            row["cores"][str(cores)].update(
                blocks=blocks, **bench_stats.warm_fields(blocks),
                **bench_stats.phase_fields(blocks, lambda b: b["side"] == "c",
                                           lambda b: b["side"] == "ptxport"))
        if problem.c_tree is not None:
            time_tree(row, row["cores"][str(cores)], problem, c_run, lib, settings, cores)


def time_tree(row: dict, cell: dict, problem: Problem, c_run: CRun, lib,
              settings: argparse.Namespace, cores: int) -> None:
    """The kernel's own algorithm in C (Problem.c_tree) timed alone after the table's runs
    at this core count and checked against C's outputs: cell's "c_tree_ms" and "tree_ratio"
    (ptxport's median over it)."""
    tree = CRun(problem, lib, problem.c_tree)
    times = _time_alone(tree, settings.reps, settings.budget / 2)
    wrong = mismatch(problem, tree.results(), c_run.results())
    if wrong and row["status"] == "ok":
        row["status"] = f"C tree {wrong} ({cores} core{'s' * (cores > 1)})"
    cell["c_tree_ms"] = statistics.median(times) * 1e3
    cell["tree_ratio"] = cell["ptxport_ms"] / cell["c_tree_ms"]


def check(row: dict, problem: Problem, ptx_run: PtxportRun, c_run: CRun, cores: int) -> None:
    wrong = mismatch(problem, ptx_run.results(), c_run.results())
    if wrong and row["status"] == "ok":
        row["status"] = f"{wrong} ({cores} core{'s' * (cores > 1)})"


def median_c_ms(c_run: CRun, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        c_run.reset()
        times.append(c_run.run())
    return statistics.median(times) * 1e3


def launch_overhead(device, objects, core_counts, reps: int = 51) -> dict[str, float]:
    """Median ms of launch() + sync() for saxpy on one block of 32 threads and n = 0."""
    case = CASES[0]
    problem = Problem("n=0", {"x": np.zeros(32, np.float32), "y": np.zeros(32, np.float32)},
                      (), [(LaunchConfig(grid=1, block=32),
                            (np.float32(1), "x", "y", np.int32(0)))],
                      lambda lib, m: None)
    stream = device.create_stream()
    try:
        run = PtxportRun(case, problem, device, stream, objects)
        run.first_run()
    except NotRunnable:
        return {}
    result = {}
    for cores in core_counts:
        cpu_executor.set_workers(cores)
        result[str(cores)] = statistics.median(run.run() for _ in range(reps)) * 1e3
    run.close()
    stream.close()
    return result


# --- Intel's OpenCL CPU runtime on the OpenCL C ports ---------------------------------------------

OPENCL_SOURCE = Path(__file__).resolve().parent / "opencl" / "kernels.cl"


class OpenclContext:
    """Intel's OpenCL CPU device (through ptxport's OpenCL backend, which registers the
    runtime from PyPI), a queue, and opencl/kernels.cl built for it."""

    def __init__(self):
        Device("opencl:0")          # (registers the wheel's runtime before pyopencl loads)
        import pyopencl as cl

        devices = [d for p in cl.get_platforms() for d in p.get_devices()
                   if d.type & cl.device_type.CPU]
        if not devices:
            raise NotRunnable("no OpenCL CPU device")
        # Intel's runtime where several CPU platforms are registered (a system PoCL beside it)
        intel = [d for d in devices if "Intel" in d.platform.name]
        self.cl, self.device = cl, (intel or devices)[0]
        self.platform = self.device.platform.name
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context)
        self.program = cl.Program(self.context, OPENCL_SOURCE.read_text()).build()


class OpenclRun:
    """A problem's buffers on the OpenCL CPU device and its OpenCL C port: the same launches
    (a kernel with dynamic shared memory gets it as a last __local argument), timed as
    enqueue + finish."""

    def __init__(self, case: Case, problem: Problem, ocl: OpenclContext):
        cl = ocl.cl
        self.cl, self.queue, self.problem = cl, ocl.queue, problem
        self.kernel = getattr(ocl.program, case.kernel)
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        self.buffers = {name: cl.Buffer(ocl.context, flags, hostbuf=array)
                        for name, array in problem.arrays.items()}

    def reset(self) -> None:
        for name in self.problem.outputs:
            self.cl.enqueue_copy(self.queue, self.buffers[name], self.problem.arrays[name])
        self.queue.finish()

    def run(self) -> float:
        start = time.perf_counter()
        for config, args in self.problem.launches:
            dims = 3 if config.block[2] > 1 or config.grid[2] > 1 else \
                2 if config.block[1] > 1 or config.grid[1] > 1 else 1
            local = tuple(config.block[:dims])
            size = tuple(g * b for g, b in zip(config.grid[:dims], local, strict=True))
            values = [self.buffers[a] if isinstance(a, str) else a for a in args]
            if config.shmem_size:
                values.append(self.cl.LocalMemory(config.shmem_size))
            self.kernel(self.queue, size, local, *values)
        self.queue.finish()
        return time.perf_counter() - start

    def first_run(self) -> float:
        self.reset()
        return self.run()

    def results(self) -> dict[str, np.ndarray]:
        out = {name: np.empty_like(self.problem.arrays[name]) for name in self.problem.outputs}
        for name, array in out.items():
            self.cl.enqueue_copy(self.queue, array, self.buffers[name])
        self.queue.finish()
        return out

    def close(self) -> None:
        for buffer in self.buffers.values():
            buffer.release()


def opencl_child(cases: list[Case], settings: argparse.Namespace, cores: int) -> None:
    """In a child process (the runtime's thread count is set as it starts): each case's
    OpenCL C port on Intel's OpenCL CPU runtime, alternating with C on `cores` threads;
    prints one JSON object, kernel -> {"c_ms", "opencl_ms", "ratio", "runs", "status"}."""
    lib = build_c_library()
    lib.bench_set_threads(cores)
    ocl = OpenclContext()
    out = {}
    for case in cases:
        problem = case.make(case.quick if settings.quick else case.full,
                            np.random.default_rng(0))
        c_run, cell = CRun(problem, lib), {"status": "ok"}
        try:
            run = OpenclRun(case, problem, ocl)
            try:
                run.first_run()
                c_run.reset()
                c_run.run()
                cell["status"] = mismatch(problem, run.results(), c_run.results()) or "ok"
                c_times, ocl_times = time_side_by_side(c_run, run, settings.reps,
                                                       settings.budget)
                c_ms = statistics.median(c_times) * 1e3
                ocl_ms = statistics.median(ocl_times) * 1e3
                cell.update(c_ms=c_ms, opencl_ms=ocl_ms, ratio=ocl_ms / c_ms,
                            runs=len(c_times))
            finally:
                run.close()
        except (NotRunnable, ocl.cl.Error) as e:
            cell["status"] = _first_line(e)
        out[case.name] = cell
    out["_platform"] = ocl.platform
    print(json.dumps(out))


def opencl_columns(cases: list[Case], settings: argparse.Namespace, core_counts) \
        -> dict[str, dict]:
    """cores -> the child's results (opencl_child) for each core count; {} without an
    OpenCL device. One core: the child is pinned to one CPU and DPCPP_CPU_NUM_CUS=1 (Intel's
    runtime's worker count)."""
    try:
        Device("opencl:0")
    except PtxportError as e:
        print(f"  no OpenCL column: {_first_line(e)}", file=sys.stderr)
        return {}
    columns = {}
    for cores in core_counts:
        command = [sys.executable, __file__, "--opencl-child", str(cores),
                   "--kernels", ",".join(c.name for c in cases), "--reps", str(settings.reps),
                   "--budget", str(settings.budget)] + (["--quick"] if settings.quick else [])
        env = dict(os.environ, DPCPP_CPU_NUM_CUS=str(cores))
        pin = None
        if cores == 1 and hasattr(os, "sched_setaffinity"):
            pin = functools.partial(os.sched_setaffinity, 0, sorted(os.sched_getaffinity(0))[:1])
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              preexec_fn=pin)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"  OpenCL on {cores} core(s) failed: {tail}", file=sys.stderr)
            continue
        columns[str(cores)] = json.loads(done.stdout.strip().splitlines()[-1])
        platform_name = columns[str(cores)].get("_platform", "?")
        print(f"  measured OpenCL on {cores} core(s): {platform_name}", file=sys.stderr)
    return columns


def merge_opencl(rows: list[dict], columns: dict[str, dict]) -> None:
    """Each row's OpenCL time and ratio to C (the child's own C runs) per core count."""
    for row in rows:
        for cores, results in columns.items():
            cell = results.get(row["kernel"], {})
            if cell.get("status") != "ok" or "opencl_ms" not in cell:
                row.setdefault("opencl_status", {})[cores] = cell.get("status", "not run")
                continue
            row["cores"].setdefault(cores, {}).update(
                opencl_ms=cell["opencl_ms"], opencl_ratio=cell["ratio"],
                opencl_c_ms=cell["c_ms"], opencl_runs=cell["runs"])


# --- the host's noise: warm cores, where a process ran, several processes --------------------

# Processes of the default run, and the seconds each first runs C on every core (cores that
# idled leave their low-power states and a VM's vCPUs get scheduled before anything is timed).
PROCESSES = 3
WARMUP_S = 0.3
# The CPUs the main thread was found on after its one-core blocks (current_cpu).
CPUS_SEEN: set[int] = set()


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None)


def current_cpu() -> int:
    """The CPU the calling thread runs on (sched_getcpu; -1 where the C library lacks it)."""
    try:
        return int(_libc().sched_getcpu())
    except (AttributeError, OSError):
        return -1


def warm_cores(lib: ctypes.CDLL, cores: int, seconds: float) -> None:
    """C's saxpy on `cores` threads, over and over for `seconds`, untimed."""
    x, y = np.ones(1 << 18, np.float32), np.zeros(1 << 18, np.float32)
    lib.bench_set_threads(cores)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        lib.saxpy(np.float32(1), _p(x), _p(y), x.size)


def process_info(index: int, seconds: float, order: str, core_counts: list[int]) -> dict:
    """Where this process ran: its CPU affinity (taskset's, the caller's choice), the CPUs
    its main thread was seen on after one-core blocks, its kernel order and its seconds."""
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return {"index": index, "pid": os.getpid(), "affinity": bench_stats.cpu_ranges(affinity),
            "cpus_one_core": bench_stats.cpu_ranges(sorted(CPUS_SEEN)), "kernel_order": order,
            "seconds": round(seconds, 2), "cores": ",".join(map(str, core_counts))}


def run_processes(count: int, core_counts: list[int], pin: int | None) -> list[dict]:
    """`count` fresh processes of this script with this command line, one after another
    (each the whole measurement, measure_all; no OpenCL), their results in order. With a
    `pin` CPU and several core counts each is two processes: the one-core figures pinned to
    that CPU (as `taskset -c CPU` would), then the other core counts unpinned."""
    runs = []
    parts = [([1], pin), (core_counts[1:], None)] if pin is not None and len(core_counts) > 1 \
        else [(core_counts, None)]
    for index in range(count):
        for cores, cpu in parts:
            command = [sys.executable, __file__, *sys.argv[1:], "--no-opencl",
                       "--child", str(index), "--child-cores", ",".join(map(str, cores))]
            result = bench_stats.run_child(command, cpu, f"{index + 1} of {count}")
            if result is None:
                continue
            runs.append(result)
            means = bench_stats.process_geomeans([runs[-1]["kernels"]], cores)
            info = runs[-1]["process"]
            print(f"  process {index + 1} of {count}: "
                  + ", ".join(f"{c} core(s) {m['median']:.2f}x" for c, m in means.items()
                              if "median" in m)
                  + f"; {info['seconds']:.1f} s, CPUs {info['affinity']}", file=sys.stderr)
    if not runs:
        sys.exit(f"all {count} processes failed")
    return runs


def pin_cpu(choice: str) -> int | None:
    """--pin's CPU: "none" None, "auto" the last CPU this process may use (None if only
    one: then there is one core count and nothing to split), else that number."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if choice == "none" or not cpus:
        return None
    if choice == "auto":
        return cpus[-1] if len(cpus) > 1 else None
    if not choice.isdigit() or int(choice) not in cpus:
        sys.exit(f"--pin {choice}: not one of this process's CPUs "
                 f"({bench_stats.cpu_ranges(cpus)})")
    return int(choice)


def describe_protocol(args: argparse.Namespace) -> str:
    runs = (f"{args.rounds} rounds of C and ptxport blocks, up to {args.reps} runs a side"
            if args.order == "rounds" else f"up to {args.reps} runs a side ({args.order})")
    if args.processes == 1 and args.pin == "none":
        return f"median of {runs}"
    pinned = "" if args.pin == "none" else ", one core pinned"
    return (f"per kernel the median over {args.processes} processes of each one's median "
            f"ratio ({runs}{pinned})")


def print_processes(processes: list[dict]) -> None:
    for p in processes:
        seen = p["cpus_one_core"] and f", main thread seen on CPU(s) {p['cpus_one_core']}"
        print(f"process {p['index'] + 1}: pid {p['pid']}, cores {p['cores']}, CPUs "
              f"{p['affinity']}{seen or ''}, kernels {p['kernel_order']}, {p['seconds']:.1f} s")


# --- reporting -------------------------------------------------------------------------------

def geometric_means(rows: list[dict], core_counts) -> dict[str, dict]:
    """Per core count: the geometric mean of ptxport / C, of OpenCL / C over the kernels
    both ran, and the kernels where ptxport's ratio to C is above OpenCL's."""
    means = {}
    for cores in map(str, core_counts):
        cells = [(r["kernel"], r["cores"][cores]) for r in rows
                 if r["status"] == "ok" and "ratio" in r["cores"].get(cores, {})]
        both = [(k, c) for k, c in cells if "opencl_ratio" in c]
        geomean = bench_stats.geomean
        means[cores] = {"geomean_ratio": geomean([c["ratio"] for _, c in cells]),
                        "kernels": len(cells), "of": len(rows),
                        "opencl_geomean_ratio": geomean([c["opencl_ratio"] for _, c in both]),
                        "ptxport_geomean_on_those": geomean([c["ratio"] for _, c in both]),
                        "opencl_kernels": len(both),
                        "slower_than_opencl": [k for k, c in both
                                               if c["ratio"] > c["opencl_ratio"]]}
    return means


def print_table(rows, means, core_counts, overhead) -> None:
    def ms(value):
        return f"{value:9.2f}" if value is not None else f"{'-':>9}"

    opencl = any("opencl_ms" in c for r in rows for c in r["cores"].values())
    ranges = any("ratio_min" in c for r in rows for c in r["cores"].values())
    header = f"{'kernel':<14} {'size':<18} {'blocks':>6}"
    for cores in core_counts:
        label = f"{cores} core{'s' * (cores > 1)}"
        header += f" | {label + ': C ms':>15} {'ptxport ms':>10} {'ratio':>9}"
        if ranges:
            header += f" {'min-max':>11}"
        if opencl:
            header += f" {'OCL ms':>9} {'OCL/C':>6}"
    print(header)
    print("-" * len(header))
    for row in rows:
        line = f"{row['kernel']:<14} {row['size']:<18} {row['blocks']:>6}"
        for cores in map(str, core_counts):
            cell = row["cores"].get(cores, {})
            ratio = f"{cell['ratio']:8.2f}" if "ratio" in cell else f"{'-':>8}"
            runs = cell.get("runs", 3)
            ratio += "~" if runs == 0 else "*" if runs < 3 else " "
            line += f" | {ms(cell.get('c_ms')):>15} {ms(cell.get('ptxport_ms')):>10} {ratio}"
            if ranges:
                span = f"{cell['ratio_min']:.2f}-{cell['ratio_max']:.2f}" \
                    if "ratio_min" in cell else "-"
                line += f" {span:>11}"
            if opencl:
                ocl = f"{cell['opencl_ratio']:6.2f}" if "opencl_ratio" in cell else f"{'-':>6}"
                line += f" {ms(cell.get('opencl_ms'))} {ocl}"
        print(line)
        if row["status"] != "ok":
            print(f"{'':<14} {row['status']}")
        for cores, status in row.get("opencl_status", {}).items():
            print(f"{'':<14} OpenCL C port, {cores} core(s): {status}")
    print("-" * len(header))
    print_trees(rows, core_counts)
    for cores in map(str, core_counts):
        mean = means[cores]
        value = f"{mean['geomean_ratio']:.2f}x" if mean["geomean_ratio"] else "n/a"
        goal = "   (goal <= 1.5x)" if cores == "1" else ""
        print(f"geometric mean of ptxport / C on {cores} core(s): {value} over "
              f"{mean['kernels']} of {mean['of']} kernels{goal}")
        spread = mean.get("process_geomean", {})
        if "median" in spread:
            print(f"  per process: {spread['min']:.2f}x to {spread['max']:.2f}x, median "
                  f"{spread['median']:.2f}x ({len(spread['per_process'])} processes)")
        loudest = bench_stats.noisiest(rows, cores)
        if loudest:
            noises = [r["cores"][cores]["noise"] for r in rows
                      if "noise" in r["cores"].get(cores, {})]
            print(f"  noise (a kernel's largest ratio over its least, across processes): "
                  f"median {statistics.median(noises):.2f}, largest {loudest[0]:.2f} "
                  f"({loudest[1]})")
        if mean["opencl_geomean_ratio"]:
            slower = ", ".join(mean["slower_than_opencl"]) or "none"
            print(f"  Intel OpenCL (OpenCL C ports) / C on {cores} core(s): "
                  f"{mean['opencl_geomean_ratio']:.2f}x over {mean['opencl_kernels']} kernels "
                  f"(ptxport on those {mean['ptxport_geomean_on_those']:.2f}x); ptxport "
                  f"slower than Intel OpenCL (ratio to C): {slower}")
    runs = {cell.get("runs", 3) for row in rows for cell in row["cores"].values()}
    if runs & {1, 2}:
        print("* fewer than 3 timed runs (in a process): its runs took too long for --budget")
    if 0 in runs:
        print("~ the first launch only, JIT included: it took longer than --slow seconds, "
              "so the kernel was not launched again")
    for cores, value in overhead.items():
        print(f"launch overhead on {cores} core(s) (saxpy, 1 block of 32 threads, n = 0): "
              f"{value:.3f} ms")


def print_phases(rows, core_counts) -> None:
    """The host's phases beside the table (bench_stats' phase notes): per kernel and core
    count the median over processes of the probe's ratio between ptxport's blocks and C's,
    of the cell's phase (its probes over its process's fastest), the phase-matched ratio with
    its range over processes and the matched pairs out of all, and the warm-up's cold and
    warm (first and last untimed run over the timed median)."""
    cells = [c for r in rows for c in r["cores"].values() if "pairs" in c]
    if not cells:
        return
    tolerance = f"{bench_stats.PHASE_TOLERANCE:.0%}"

    def number(cell, name, width=6):
        return f"{cell[name]:{width}.2f}" if name in cell else f"{'-':>{width}}"

    header = f"{'phases':<14}"
    for cores in core_counts:
        label = f"{cores} core{'s' * (cores > 1)}: probe P/C"
        header += f" | {label:>20} {'phase':>6} {'matched':>7} {'range':>11} {'pairs':>7} " \
                  f"{'cold':>5} {'warm':>5}"
    print(header)
    for row in rows:
        line = f"{row['kernel']:<14}"
        for cores in map(str, core_counts):
            cell = row["cores"].get(cores, {})
            values = cell.get("per_process", {}).get("matched_ratio", [])
            span = f"{min(values):.2f}-{max(values):.2f}" if len(values) > 1 else ""
            pairs = f"{cell['matched']}/{cell['pairs']}" if "pairs" in cell else "-"
            line += f" | {number(cell, 'probe_ratio', 20)} {number(cell, 'phase')} " \
                    f"{number(cell, 'matched_ratio', 7)} {span:>11} {pairs:>7} " \
                    f"{number(cell, 'cold', 5)} {number(cell, 'warm', 5)}"
        print(line)
    for cores in map(str, core_counts):
        both = [(r["cores"][cores]["ratio"], r["cores"][cores]["matched_ratio"])
                for r in rows if r["status"] == "ok"
                and "matched_ratio" in r["cores"].get(cores, {})]
        if both:
            print(f"geometric mean of the phase-matched ratios on {cores} core(s): "
                  f"{bench_stats.geomean(m for _, m in both):.2f}x over {len(both)} kernels "
                  f"(the table's ratios on those {bench_stats.geomean(r for r, _ in both):.2f}x)")
    print(f"probe P/C: the clock probe (bench_stats.probe_ms) beside ptxport's blocks over "
          f"beside C's; phase: the cell's probes over its process's fastest (1.5: a slow "
          f"phase); matched: ptxport / C over only the rounds whose C and ptxport blocks' "
          f"probes agree within {tolerance} (median over processes of each one's median, "
          f"pairs kept of all; on several cores the probe reads the main thread's core "
          f"only); cold, warm: a block's first and last untimed run over its timed runs' "
          f"median")


def print_trees(rows, core_counts) -> None:
    """One line a kernel whose C column is another algorithm than its own (Problem.c_tree):
    the kernel's algorithm in C, its ms and ptxport / it per core count."""
    for row in rows:
        cells = [(c, row["cores"].get(str(c), {})) for c in core_counts]
        cells = [(c, cell) for c, cell in cells if "tree_ratio" in cell]
        if cells:
            print(f"{row['kernel']}, its own algorithm in C (c_tree): "
                  + ", ".join(f"{c} core{'s' * (c > 1)} {cell['c_tree_ms']:.2f} ms, "
                              f"ptxport / it {cell['tree_ratio']:.2f}" for c, cell in cells))


def machine() -> dict:
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout
    return {"cpu": model or platform.processor(), "cores": cpu_executor.worker_count(),
            "gcc": gcc.splitlines()[0] if gcc else "", "cflags": " ".join(CFLAGS),
            "python": platform.python_version()}


def machine_settings(args: argparse.Namespace) -> dict:
    """add_machine_flags' values, for the results file."""
    return {"order": args.order, "omp_wait": args.omp_wait, "schedule": args.schedule,
            "busy": args.busy, "rounds": getattr(args, "rounds", None),
            "processes": getattr(args, "processes", None),
            "warmup_s": getattr(args, "warmup", None), "pin": getattr(args, "pin", None)}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--kernels", help="comma-separated names: "
                        + ",".join(c.name for c in CASES))
    parser.add_argument("--processes", type=int, default=PROCESSES,
                        help="fresh processes, one after another, each measuring everything; "
                             "the table gives per-kernel medians over them (1: this process)")
    parser.add_argument("--reps", type=int, default=6,
                        help="timed runs per side and process (median), split over --rounds")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds of timing per kernel, core count and process, after "
                             "which it stops at the end of a round (default 1.0; 0.5 with "
                             "--quick)")
    parser.add_argument("--warmup", type=float, default=WARMUP_S,
                        help="seconds each process runs C on every core before timing")
    parser.add_argument("--slow", type=float, default=10.0,
                        help="seconds: a kernel whose first launch takes longer is not "
                             "launched again (its one-core time is that launch's)")
    parser.add_argument("--no-opencl", action="store_true",
                        help="leave out Intel's OpenCL CPU runtime (the OpenCL C ports)")
    parser.add_argument("--json", type=Path, default=RESULTS / "cpu_kernels.json",
                        help="where to write the results")
    parser.add_argument("--opencl-child", type=int, metavar="CORES", help=argparse.SUPPRESS)
    parser.add_argument("--pin", default="auto",
                        help="a CPU for the one-core figures: each process is then two, the "
                             "one-core figures pinned to it, the others unpinned; 'auto' "
                             "(default): the last CPU this process may use; 'none': one "
                             "unpinned process measures both")
    parser.add_argument("--child", type=int, metavar="INDEX", help=argparse.SUPPRESS)
    parser.add_argument("--child-cores", help=argparse.SUPPRESS)
    add_machine_flags(parser, order="rounds")
    args = parser.parse_args()
    if args.budget is None:
        args.budget = 0.5 if args.quick else 1.0
    args.cases = CASES
    if args.kernels:
        wanted = [k.strip() for k in args.kernels.split(",") if k.strip()]
        unknown = sorted(set(wanted) - {c.name for c in CASES})
        if unknown:
            parser.error(f"unknown kernel(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(c.name for c in CASES)}")
        args.cases = [c for c in CASES if c.name in wanted]
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    return args


def measure_all(args: argparse.Namespace, core_counts: list[int], index: int = 0) -> dict:
    """This process's measurements: every case at every core count (odd `index`: the cases
    in reverse order, so that no kernel always runs after the same ones), the launch
    overhead, and where the process ran (process_info)."""
    start = time.perf_counter()
    cases = args.cases[::-1] if index % 2 else args.cases
    device = Device("cpu")
    device.set_current()
    objects: dict = {}
    rows = []
    with MachineSettings(args):
        lib = build_c_library()
        warm_cores(lib, core_counts[-1], args.warmup)
        try:
            for case in cases:
                problem = case.make(case.quick if args.quick else case.full,
                                    np.random.default_rng(0))
                rows.append(measure_case(case, problem, lib, device, objects, core_counts,
                                         args))
                print(f"  {'' if args.child is None else f'[{index + 1}] '}measured "
                      f"{case.name}: {rows[-1]['status']}", file=sys.stderr)
            overhead = launch_overhead(device, objects, core_counts)
        finally:
            cpu_executor.set_workers(None)
    order = {c.name: i for i, c in enumerate(args.cases)}
    rows.sort(key=lambda row: order[row["kernel"]])
    bench_stats.phase_levels(cell for row in rows for cell in row["cores"].values())
    return {"kernels": rows, "launch_overhead_ms": overhead,
            "process": process_info(index, time.perf_counter() - start,
                                    "reverse" if index % 2 else "forward", core_counts)}


def main() -> None:
    args = parse_args()
    if args.opencl_child is not None:
        opencl_child(args.cases, args, args.opencl_child)
        return
    all_cores = cpu_executor.worker_count()
    core_counts = [1] if all_cores == 1 else [1, all_cores]
    if args.child is not None:
        if args.child_cores:
            core_counts = [int(c) for c in args.child_cores.split(",")]
        print(json.dumps(measure_all(args, core_counts, args.child)))
        return
    if args.processes == 1 and args.pin == "none":
        measured = measure_all(args, core_counts)
        rows, overhead = measured["kernels"], measured["launch_overhead_ms"]
        processes, spreads = [measured["process"]], None
    else:
        runs = run_processes(args.processes, core_counts, pin_cpu(args.pin))
        rows = bench_stats.merge_rows([r["kernels"] for r in runs])
        overhead = {c: statistics.median(r["launch_overhead_ms"][c] for r in runs
                                         if c in r["launch_overhead_ms"])
                    for c in dict.fromkeys(c for r in runs for c in r["launch_overhead_ms"])}
        processes = [dict(r["process"], kernels=r["kernels"],
                          launch_overhead_ms=r["launch_overhead_ms"]) for r in runs]
        spreads = bench_stats.process_geomeans([r["kernels"] for r in runs], core_counts)
    if not args.no_opencl:
        merge_opencl(rows, opencl_columns(args.cases, args, core_counts))
    means = geometric_means(rows, core_counts)
    for cores, spread in (spreads or {}).items():
        means[cores]["process_geomean"] = spread
    print(f"ptxport CPU device vs C (gcc {' '.join(CFLAGS[:3])}), {describe_protocol(args)}"
          f"{' (quick sizes)' if args.quick else ''}")
    print_table(rows, means, core_counts, overhead)
    print_phases(rows, core_counts)
    print_processes(processes)

    result = {"machine": machine(), "settings": machine_settings(args),
              "quick": args.quick, "reps": args.reps,
              "budget_s": args.budget, "slow_s": args.slow,
              "core_counts": core_counts, "kernels": rows, "geomean": means,
              "launch_overhead_ms": overhead, "processes": processes}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
