"""What bounds parallel efficiency on this machine, whatever runs on it: memory bandwidth,
clock speed per core, and how long libgomp's threads stay awake between parallel loops.

Its parts, all in C with OpenMP (gcc -O3 -march=native -fopenmp), at 1, 2, 4, ... threads
up to every core:
  bandwidth  c[i] = a[i] + b[i] (vector_add's traffic: 12 bytes an element, counted without
             the write-allocate read) and a read-only sum, at cpu_kernels.py's vector_add size
             (n = 4M floats, 48 MB) and at 64M floats (768 MB): GB/s and the speed-up over
             one thread. When 16 threads move only k times the bytes of one, no kernel that
             streams memory can have a parallel efficiency above k / 16, in C or in ptxport.
  compute    each thread runs 8 independent chains of 16-float fused multiply-adds in
             registers (no memory): GFLOP/s per thread. Lower per thread with more threads:
             the cores' clock drops when all run (turbo), or they share physical cores.
  clocks     (--parts clocks) what slows each thread when all run: one dependent chain of
             integer adds (the clock: a hyperthread sibling hardly slows it), one of 512-bit
             FMAs (the clock under 512-bit code), 8 chains of 256-bit FMAs (gcc's width for
             this CPU) and of 512-bit ones (ptxport's), per thread over one thread's, with the
             hypervisor's steal time (/proc/stat) meanwhile.
  pairs      (--parts pairs) two threads pinned to CPU 0 and CPU k run the compute part's
             chains: CPU 0's rate for each k (halved where k is its hyperthread sibling).
  spin       after a parallel loop the launching thread busy-waits `gap` ms, then opens
             the next loop: when the last thread entered it (us after the opening) and the
             CPU time the other threads used during the gap (share of threads x gap):
             libgomp's threads spin (GOMP_SPINCOUNT, 300000 rounds of `pause` by default)
             before they sleep, so up to some gap they start at once and cost a core each.

    python benchmarks/cpu_limits.py [--threads 1,2,4,8,16] [--reps 7] [--parts bandwidth,
                                     compute,spin,clocks,pairs] [--sizes 4M,64M]
                                     [--gaps 0.1,0.5,1,2,3,5,10,20]

prints the tables and writes benchmarks/results/cpu_limits.json.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BUILD = HERE.parent / "build" / "bench"
RESULTS = HERE / "results"
CFLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]

SOURCE = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <omp.h>
#include <time.h>
#include <sys/resource.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

double add_pass(const float *a, const float *b, float *c, long n, int threads)
{
    double start = now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < n; i++)
        c[i] = a[i] + b[i];
    return now() - start;
}

double read_pass(const float *a, long n, int threads, float *out)
{
    double start = now();
    float sum = 0.0f;
#pragma omp parallel for simd num_threads(threads) schedule(static) reduction(+:sum)
    for (long i = 0; i < n; i++)
        sum += a[i];
    *out = sum;
    return now() - start;
}

typedef float v16 __attribute__((vector_size(64)));

/* 8 independent chains of 16-float FMAs, `rounds` long (one thread's FMA rate), summed */
static float fma_chains(long rounds, int seed)
{
    v16 x[8];
    for (int k = 0; k < 8; k++)
        for (int l = 0; l < 16; l++)
            x[k][l] = seed + k + l * 1e-3f;
    for (long r = 0; r < rounds; r++)
        for (int k = 0; k < 8; k++)
            x[k] = x[k] * 0.999999f + 1e-6f;
    float s = 0.0f;
    for (int k = 0; k < 8; k++)
        for (int l = 0; l < 16; l++)
            s += x[k][l];
    return s;
}

double fma_pass(long rounds, int threads, float *sink)
{
    double start = now();
#pragma omp parallel num_threads(threads)
    {
        sink[omp_get_thread_num() * 16] = fma_chains(rounds, omp_get_thread_num());
    }
    return now() - start;
}

/* fma_pass on two threads pinned to CPUs `a` and `b` (the same FMA chains); the first
   thread's seconds. Two CPUs that are hyperthreads of one core share its FMA units. */
double fma_pair(long rounds, int a, int b, float *sink)
{
    double seconds[2] = {0.0, 0.0};
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(me == 0 ? a : b, &set);
        sched_setaffinity(0, sizeof set, &set);
#pragma omp barrier
        double start = now();
        sink[me * 16] = fma_chains(rounds, me);
        seconds[me] = now() - start;
    }
    return seconds[0];
}

/* What slows a thread when all run (--parts clocks): `kind` 0, one dependent chain of
   integer adds (4 a round; a cycle each: the clock, which a hyperthread sibling hardly
   slows); 1, one dependent chain of 16-float FMAs (the clock with 512-bit code: a core's
   AVX-512 frequency); 2, 8 independent chains of 8-float FMAs (the FMA units, 256-bit, as
   gcc's code for this CPU); 3, 8 chains of 16-float FMAs (fma_chains: 512-bit, as
   ptxport's). Per thread the operations a nanosecond; *cpu the process's CPU seconds. */
typedef float v8 __attribute__((vector_size(32)));

static double int_chain(long rounds, long seed)
{
    long x = seed;
    for (long r = 0; r < rounds; r++)
        __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
                         : "+r"(x) : "r"(seed));
    return (double)x;
}

static float fma_one(long rounds, int seed)
{
    v16 x;
    for (int l = 0; l < 16; l++)
        x[l] = seed + l * 1e-3f;
    for (long r = 0; r < rounds; r++)
        x = x * 0.999999f + 1e-6f;
    float s = 0.0f;
    for (int l = 0; l < 16; l++)
        s += x[l];
    return s;
}

static float fma_chains8(long rounds, int seed)
{
    v8 x[8];
    for (int k = 0; k < 8; k++)
        for (int l = 0; l < 8; l++)
            x[k][l] = seed + k + l * 1e-3f;
    for (long r = 0; r < rounds; r++)
        for (int k = 0; k < 8; k++)
            x[k] = x[k] * 0.999999f + 1e-6f;
    float s = 0.0f;
    for (int k = 0; k < 8; k++)
        for (int l = 0; l < 8; l++)
            s += x[k][l];
    return s;
}

double clock_pass(int kind, long rounds, int threads, float *sink)
{
    double start = now();
#pragma omp parallel num_threads(threads)
    {
        int me = omp_get_thread_num();
        sink[me * 16] = kind == 0 ? (float)int_chain(rounds, me + 1)
                      : kind == 1 ? fma_one(rounds, me)
                      : kind == 2 ? fma_chains8(rounds, me) : fma_chains(rounds, me);
    }
    return now() - start;
}

static double cpu_seconds(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec
        + r.ru_stime.tv_usec * 1e-6;
}

/* A parallel loop, `gap` seconds of busy waiting on this thread, then another loop: when its
   last thread entered it (seconds after the opening); *cpu: the process's CPU seconds during
   the gap. */
double spin_probe(int threads, double gap, double *cpu)
{
    double entered[1024];
#pragma omp parallel num_threads(threads)
    entered[omp_get_thread_num()] = 0.0;
    double cpu_start = cpu_seconds(), start = now();
    while (now() - start < gap)
        ;
    *cpu = cpu_seconds() - cpu_start;
    double open = now();
#pragma omp parallel num_threads(threads)
    entered[omp_get_thread_num()] = now();
    double late = 0.0;
    for (int i = 0; i < threads; i++)
        if (entered[i] - open > late)
            late = entered[i] - open;
    return late;
}
"""


def build() -> ctypes.CDLL:
    digest = hashlib.sha256((" ".join(CFLAGS) + SOURCE).encode()).hexdigest()[:16]
    library = BUILD / f"cpu_limits_{digest}.so"
    if not library.exists():
        BUILD.mkdir(parents=True, exist_ok=True)
        source = BUILD / f"cpu_limits_{digest}.c"
        source.write_text(SOURCE)
        subprocess.run(["gcc", *CFLAGS, "-o", str(library), str(source)], check=True)
    lib = ctypes.CDLL(str(library))
    p, d, i, lg = ctypes.c_void_p, ctypes.c_double, ctypes.c_int, ctypes.c_long
    for name, args in {"add_pass": [p, p, p, lg, i], "read_pass": [p, lg, i, p],
                       "fma_pass": [lg, i, p], "spin_probe": [i, d, p],
                       "fma_pair": [lg, i, i, p], "clock_pass": [i, lg, i, p]}.items():
        getattr(lib, name).restype = d
        getattr(lib, name).argtypes = args
    return lib


def bandwidth(lib, counts, reps: int, sizes=(1 << 22, 1 << 26)) -> list[dict]:
    rows = []
    for n in sizes:
        a, b = np.ones(n, np.float32), np.ones(n, np.float32)
        c, out = np.zeros(n, np.float32), np.zeros(1, np.float32)
        for k in counts:
            lib.add_pass(a.ctypes.data, b.ctypes.data, c.ctypes.data, n, k)     # (warm)
            add = statistics.median(lib.add_pass(a.ctypes.data, b.ctypes.data, c.ctypes.data,
                                                 n, k) for _ in range(reps))
            read = statistics.median(lib.read_pass(a.ctypes.data, n, k, out.ctypes.data)
                                     for _ in range(reps))
            rows.append({"n": n, "threads": k, "add_ms": add * 1e3,
                         "add_gbs": 12 * n / add / 1e9, "read_gbs": 4 * n / read / 1e9})
    for row in rows:
        one = next(r for r in rows if r["n"] == row["n"] and r["threads"] == 1)
        row["add_speedup"] = row["add_gbs"] / one["add_gbs"]
        row["read_speedup"] = row["read_gbs"] / one["read_gbs"]
    return rows


def compute(lib, counts, reps: int) -> list[dict]:
    sink = np.zeros(16 * 1024, np.float32)
    rounds = 20_000_000
    rows = []
    for k in counts:
        seconds = statistics.median(lib.fma_pass(rounds, k, sink.ctypes.data)
                                    for _ in range(max(3, reps // 2)))
        rows.append({"threads": k, "gflops_per_thread": rounds * 8 * 16 * 2 / seconds / 1e9})
    for row in rows:
        row["ratio"] = row["gflops_per_thread"] / rows[0]["gflops_per_thread"]
    return rows


# clock_pass's kinds: (name, rounds, operations a round)
CLOCK_KINDS = (("int add chain", 50_000_000, 4), ("zmm FMA, 1 chain", 12_000_000, 1),
               ("ymm FMA, 8 chains", 20_000_000, 8), ("zmm FMA, 8 chains", 20_000_000, 8))


def steal_jiffies() -> tuple[int, int]:
    """The whole machine's (steal, total) jiffies from /proc/stat ((0, 0) without it):
    time the hypervisor ran something else while these vCPUs wanted to run."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def clocks(lib, counts, reps: int) -> list[dict]:
    """Per thread count and clock_pass kind: operations a nanosecond per thread, its ratio
    to one thread's, and the share of the vCPUs' time the hypervisor stole meanwhile."""
    sink = np.zeros(16 * 1024, np.float32)
    rows = []
    for kind, (name, rounds, ops) in enumerate(CLOCK_KINDS):
        for k in counts:
            lib.clock_pass(kind, rounds // 10, k, sink.ctypes.data)         # (warm)
            steal0, total0 = steal_jiffies()
            seconds = statistics.median(lib.clock_pass(kind, rounds, k, sink.ctypes.data)
                                        for _ in range(max(3, reps // 2)))
            steal1, total1 = steal_jiffies()
            rows.append({"kind": name, "threads": k, "ops_per_ns": rounds * ops / seconds / 1e9,
                         "steal": (steal1 - steal0) / max(1, total1 - total0)})
    for row in rows:
        one = next(r for r in rows if r["kind"] == row["kind"] and r["threads"] == 1)
        row["ratio"] = row["ops_per_ns"] / one["ops_per_ns"]
    return rows


def pairs(lib, cores: int) -> list[dict]:
    """CPU 0's FMA rate alone (against itself: 0 and 0 take turns, so half) and beside
    each other CPU, over its rate beside CPU 1... as a share of the best pair."""
    sink = np.zeros(64, np.float32)
    rounds = 10_000_000
    rows = [{"cpu": k, "seconds": statistics.median(lib.fma_pair(rounds, 0, k, sink.ctypes.data)
                                                     for _ in range(3))}
            for k in range(1, cores)]
    best = min(r["seconds"] for r in rows)
    for row in rows:
        row["rate"] = best / row["seconds"]
    return rows


def spin(lib, threads: int, gaps, reps: int) -> list[dict]:
    rows = []
    cpu = ctypes.c_double()
    for gap in gaps:
        late, used = [], []
        for _ in range(reps):
            late.append(lib.spin_probe(threads, gap / 1e3, ctypes.byref(cpu)) * 1e6)
            # (the launching thread's own busy wait is the gap itself)
            used.append(max(0.0, cpu.value - gap / 1e3) / ((threads - 1) * gap / 1e3))
        rows.append({"gap_ms": gap, "late_us": statistics.median(late),
                     "helpers_cpu": statistics.median(used)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", help="comma-separated thread counts (default 1, 2, 4, "
                                          "... up to every core)")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--parts", default="bandwidth,compute,spin")
    parser.add_argument("--sizes", default="4M,64M",
                        help="bandwidth: element counts (floats; K and M suffixes)")
    parser.add_argument("--gaps", default="0.1,0.5,1,2,3,5,10,20", help="spin: gaps in ms")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    counts = [int(k) for k in args.threads.split(",")] if args.threads else \
        sorted({1, *(2 ** i for i in range(8) if 2 ** i < cores), cores})
    parts = set(args.parts.split(","))
    lib = build()
    result: dict = {"cores": cores, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                    "gomp_spincount": os.environ.get("GOMP_SPINCOUNT")}
    if "bandwidth" in parts:
        sizes = [int(v[:-1]) << {"K": 10, "M": 20}[v[-1]] if v[-1] in "KM" else int(v)
                 for v in args.sizes.split(",")]
        result["bandwidth"] = bandwidth(lib, counts, args.reps, sizes)
        print("bandwidth (GB/s, median; speed-up over 1 thread): c = a + b | read-only sum")
        for r in result["bandwidth"]:
            print(f"  n={r['n']:>9} threads {r['threads']:>3}: add {r['add_ms']:8.3f} ms "
                  f"{r['add_gbs']:7.1f} GB/s ({r['add_speedup']:5.2f}x) | read "
                  f"{r['read_gbs']:7.1f} GB/s ({r['read_speedup']:5.2f}x)")
    if "compute" in parts:
        result["compute"] = compute(lib, counts, args.reps)
        print("compute (16-float FMAs in registers): GFLOP/s per thread, and over 1 thread's")
        for r in result["compute"]:
            print(f"  threads {r['threads']:>3}: {r['gflops_per_thread']:7.1f} ({r['ratio']:4.2f})")
    if "clocks" in parts:
        result["clocks"] = clocks(lib, counts, args.reps)
        print("clocks: per thread, operations a ns (its ratio to 1 thread's; steal: the "
              "hypervisor's share of the vCPUs' time meanwhile)")
        for r in result["clocks"]:
            print(f"  {r['kind']:<18} threads {r['threads']:>3}: {r['ops_per_ns']:7.2f} "
                  f"({r['ratio']:4.2f}) steal {r['steal']:5.1%}")
    if "pairs" in parts:
        result["pairs"] = pairs(lib, cores)
        print("FMA rate of CPU 0 beside CPU k (both busy), over the best pair's: about 0.5 "
              "where k is CPU 0's hyperthread sibling")
        print("  " + " ".join(f"{r['cpu']}:{r['rate']:.2f}" for r in result["pairs"]))
    if "spin" in parts:
        gaps = [float(g) for g in args.gaps.split(",")]
        result["spin"] = spin(lib, counts[-1], gaps, args.reps)
        print(f"libgomp between loops, {counts[-1]} threads (OMP_WAIT_POLICY="
              f"{result['omp_wait_policy']}, GOMP_SPINCOUNT={result['gomp_spincount']}): "
              "last thread's entry (us after the opening) | helpers' CPU over the gap")
        for r in result["spin"]:
            print(f"  gap {r['gap_ms']:5g} ms: late {r['late_us']:8.1f} us | helpers' CPU "
                  f"{r['helpers_cpu']:5.0%}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cpu_limits.json").write_text(json.dumps(result, indent=2) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
