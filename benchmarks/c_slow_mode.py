"""Is C's stencil (benchmarks/c/stencil.c) slower once ptxport has run in the same process?

cpu_kernels.py and cpu_compare.py time the C baselines in the process where ptxport's device,
buffers and kernels live. On the GPU machine's Xeon C's one-thread stencil took 1.4-2.3 ms in
a fresh process but 4.3-5.3 ms in those processes. This script times C's stencil (the
benchmark's library, its arrays' contents, `--threads` OpenMP threads) in one process after
each step of setting ptxport up: fresh; with the caches evicted before each run (256 MB
touched) or 64 MB of other data touched between runs (what the other side's buffers do);
after importing ptxport, Device("cpu"), the kernel's compile and buffers, its first launch
(the JIT), more launches, a pause, runs alternating with ptxport's, launches on every core,
and on new copies of the arrays. Each row says C's median and least wall time, its thread's
CPU time, its involuntary context switches, the core's clock (a chain of dependent adds
timed), the MXCSR register (flush-to-zero and denormals-are-zero are bits 15 and 6: 0x1f80
is the default, 0x20 only a sticky precision flag) and the process's threads.
`compare` runs cpu_compare.py's child order instead (gemm, transpose, stencil on ptxport,
C's stencil after each). `heap` times it on arrays from fresh mappings, then on arrays
glibc's malloc takes from its heap once 16 MB blocks were freed (its mmap threshold then
rises above their size), then with the threshold fixed (cpu_kernels.fresh_mappings), each
row with the arrays' mappings and their huge pages. Pin it (`taskset -c 0`) for one-core
figures.

    python benchmarks/c_slow_mode.py stages|compare|heap [--threads 1] [--size 2048]
                                     [--reps 9]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PROBE_C = r"""
#include <immintrin.h>
unsigned probe_csr(void) { return _mm_getcsr(); }
long probe_chain(long n)   /* n dependent adds: about n cycles */
{
    long x = 0;
    for (long i = 0; i < n; ++i)
        __asm__ volatile("add $1, %0" : "+r"(x));
    return x;
}
"""


def _probe() -> ctypes.CDLL:
    build = HERE / "build"
    build.mkdir(exist_ok=True)
    source, library = build / "c_slow_mode_probe.c", build / "c_slow_mode_probe.so"
    if not library.exists() or source.read_text() != PROBE_C:
        source.write_text(PROBE_C)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)],
                       check=True)
    probe = ctypes.CDLL(str(library))
    probe.probe_chain.argtypes, probe.probe_chain.restype = [ctypes.c_long], ctypes.c_long
    probe.probe_csr.restype = ctypes.c_uint
    return probe


class Bench:
    def __init__(self, args: argparse.Namespace):
        # the benchmark's C library, built (if need be) in a child process: this one has
        # not imported ptxport (nor llvmlite) yet
        build = "import cpu_kernels; print(cpu_kernels.build_c_library()._name)"
        path = subprocess.run([sys.executable, "-c", build], cwd=HERE, check=True,
                              capture_output=True, text=True).stdout.strip().splitlines()[-1]
        self.lib = ctypes.CDLL(path)
        self.lib.stencil_2d_5pt.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                            ctypes.c_int]
        self.lib.bench_set_threads.argtypes = [ctypes.c_int]
        self.ck, self.args = None, args
        self.probe = _probe()
        self.lib.bench_set_threads(args.threads)
        n = args.size
        self.src = np.random.default_rng(0).random((n, n), dtype=np.float32)
        self.zeros = np.zeros((n, n), np.float32)
        self.a_in, self.a_out = self.src.copy(), self.zeros.copy()
        self.junk = np.ones(64 << 20, np.float32)       # 256 MB: evicts the caches
        self.other = np.ones(16 << 20, np.float32)      # 64 MB: another side's buffers

    def once(self, before=None) -> tuple[float, float, int]:
        self.a_out[...] = self.zeros
        if before is not None:
            before()
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        w0, t0 = time.perf_counter(), time.thread_time()
        n = self.args.size
        self.lib.stencil_2d_5pt(self.a_in.ctypes.data, self.a_out.ctypes.data, n, n)
        w, t = time.perf_counter() - w0, time.thread_time() - t0
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        return w * 1e3, t * 1e3, r1.ru_nivcsw - r0.ru_nivcsw

    def ghz(self) -> float:
        n = 50_000_000
        start = time.perf_counter()
        self.probe.probe_chain(n)
        return n / (time.perf_counter() - start) / 1e9

    def report(self, label: str, before=None, between=None) -> None:
        rows = []
        for _ in range(self.args.reps):
            if between is not None:
                between()
            rows.append(self.once(before))
        wall, cpu = [r[0] for r in rows], [r[1] for r in rows]
        print(f"{label:<30} C wall med {statistics.median(wall):6.2f} min {min(wall):6.2f} | "
              f"thread med {statistics.median(cpu):6.2f} | invol.csw "
              f"{sum(r[2] for r in rows):3d} | {self.ghz():.2f} GHz | "
              f"mxcsr {self.probe.probe_csr():#06x} | "
              f"threads {len(os.listdir('/proc/self/task'))}", flush=True)

    def evict(self) -> None:
        self.junk[::16] += 1.0

    def touch_other(self) -> None:
        self.other[::16] += 1.0


def _import(bench: Bench):
    import cpu_kernels as ck  # (ptxport, llvmlite; no device yet)

    bench.ck = ck
    return ck


def stages(bench: Bench) -> None:
    args = bench.args
    bench.report("fresh")
    bench.report("fresh, 256MB evicted before", before=bench.evict)
    bench.report("fresh, 64MB touched between", between=bench.touch_other)
    ck = _import(bench)
    bench.report("import ptxport")
    device = ck.Device("cpu")
    device.set_current()
    bench.report("Device('cpu')")
    ck.cpu_executor.set_workers(args.threads)
    case = next(c for c in ck.CASES if c.name == "stencil")
    problem = case.make(args.size, np.random.default_rng(0))
    stream = device.create_stream()
    run = ck.PtxportRun(case, problem, device, stream, {})
    bench.report("buffers+compile(PTX)")
    run.first_run()
    bench.report("first launch (JIT)")
    for _ in range(5):
        run.reset()
        run.run()
    bench.report("after 5 launches")
    time.sleep(0.3)
    bench.report("after sleep 0.3")
    bench.report("alternating with ptxport", between=lambda: (run.reset(), run.run()))
    ck.cpu_executor.set_workers(None)
    for _ in range(5):
        run.reset()
        run.run()
    ck.cpu_executor.set_workers(args.threads)
    time.sleep(0.3)
    bench.report("after 5 launches on all cores")
    bench.a_in, bench.a_out = bench.src.copy(), bench.zeros.copy()
    bench.report("new C arrays (copies)")
    wall, cpu = [], []
    for _ in range(args.reps):
        run.reset()
        start = time.thread_time()
        wall.append(run.run() * 1e3)
        cpu.append((time.thread_time() - start) * 1e3)
    print(f"ptxport {args.threads} worker(s) wall med {statistics.median(wall):.2f} "
          f"thread med {statistics.median(cpu):.2f} ms")


def _mapping(address: int) -> str:
    """The mapping that holds `address` (/proc/self/smaps): its name, size and huge pages."""
    found = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            low, high = (int(x, 16) for x in fields[0].split("-"))
            found = (low, high, fields[5] if len(fields) > 5 else "anon") \
                if low <= address < high else None
        elif found and fields and fields[0] == "AnonHugePages:":
            low, high, name = found
            return f"{name} {(high - low) >> 20} MB, {int(fields[1]) >> 10} MB huge"
    return "?"


def heap(bench: Bench) -> None:
    """C's stencil on arrays from fresh mappings, then on arrays glibc takes from its heap
    (after 16 MB blocks were freed its mmap threshold is above their size), then with a
    fixed threshold (cpu_kernels.fresh_mappings) on fresh mappings again."""
    def renew(label: str) -> None:
        bench.a_in, bench.a_out = bench.src.copy(), bench.zeros.copy()
        bench.report(label)
        # (the middle of each array: numpy's madvise splits off the mapping's first page)
        a, b = (x.ctypes.data for x in (bench.a_in, bench.a_out))
        half = bench.src.nbytes // 2
        print(f"{'':<30} in at {a % 4096}: {_mapping(a + half)}; out at {b % 4096}: "
              f"{_mapping(b + half)}")

    bench.report("fresh mappings")
    for _ in range(2):
        freed = [np.ones_like(bench.src) for _ in range(2)]
        del freed
        renew("from the heap (after frees)")
    fixed = ctypes.CDLL(None).mallopt(ctypes.c_int(-3), ctypes.c_int(1 << 20))
    print("mallopt(M_MMAP_THRESHOLD, 1 MiB):", fixed)
    for _ in range(2):
        freed = [np.ones_like(bench.src) for _ in range(2)]
        del freed
        renew("fixed threshold (after frees)")


def compare(bench: Bench) -> None:
    bench.report("fresh")
    ck = _import(bench)
    device = ck.Device("cpu")
    device.set_current()
    ck.cpu_executor.set_workers(bench.args.threads)
    for name in ("gemm", "transpose", "stencil"):
        case = next(c for c in ck.CASES if c.name == name)
        problem = case.make(case.full, np.random.default_rng(0))
        stream = device.create_stream()
        run = ck.PtxportRun(case, problem, device, stream, {})
        run.first_run()
        for _ in range(3):
            run.reset()
            run.run()
        run.close()
        stream.close()
        bench.report(f"after {name} (ptxport)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("stages", "compare", "heap"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    bench = Bench(args)
    {"stages": stages, "compare": compare, "heap": heap}[args.mode](bench)


if __name__ == "__main__":
    main()
