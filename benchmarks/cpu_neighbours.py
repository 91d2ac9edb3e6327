"""What slows one worker's blocks when every core is busy, and how this machine's vCPUs share
their cores (issue 15: gemm's blocks ran 1.9x longer on 16 workers than on one).

part `rates`: small loops in C (the SOURCE below) on 1, 2, 4, 8 and 16 threads pinned one a
CPU, all running at once for --seconds: each thread's rate over one thread's alone. Kinds:
int_dep (one dependent add chain: the clock), int_tp (8 add chains: integer throughput),
fma512 / fma256 (16 independent FMAs of 512 / 256 bits), ld512 (512-bit loads from L1),
bcast (the tiled GEMM's k loop shape: 512-bit FMAs with a broadcast memory operand and a
row loaded), l2rd / l3rd (512-bit reads over 1 MiB / 64 MiB a thread), pause. Per kind and
thread count: the mean, least and largest rate over one thread's, and how many threads ran
at most 0.65 of it ("halved": a vCPU whose core's other hyperthread was busy too).
part `beside`: a cpu_kernels.py case on one worker (the main thread pinned to the last CPU),
alone and beside a spinner of each kind (or plain Python: `py`) on every other CPU, and on
4, 8 and all workers (on the last CPUs), in rounds alternating the configurations; traced
runs (pool.trace_shares): wall time, efficiency against the one worker alone, and `work`
(the workers' summed share time over one worker's: above 1, each block took longer).

    python benchmarks/cpu_neighbours.py [--parts rates,beside] [--seconds 0.25]
                                        [--kinds int_dep,fma512,...] [--case gemm:1024]
                                        [--rounds 3] [--runs 2]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import cpu_kernels as ck  # (a sibling module: benchmarks/ is the script's folder)
import numpy as np

from ptxport import Device
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

BUILD = Path(__file__).resolve().parent.parent / "build" / "bench"
CFLAGS = ["-O2", "-mavx512f", "-pthread"]
KINDS = ("int_dep", "int_tp", "fma512", "fma256", "ld512", "bcast", "l2rd", "l3rd", "pause")
CPUS = sorted(os.sched_getaffinity(0))

SOURCE = r"""
/* probe rates SECONDS CPU,CPU,... [KINDS]: per kind, each pinned thread's rate (units a
 * microsecond); probe spin KIND: runs KIND for ever (a busy neighbour) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* each kernel does one batch of work and returns its units (adds, FMAs, loads, lines) */
#define R16(x) x x x x x x x x x x x x x x x x
static long k_int_dep(char *buf)
{
    long a = 0, one = 1;
    for (int i = 0; i < 1000; i++)
        __asm__ volatile(R16("addq %1, %0\n\t") : "+r"(a) : "r"(one));
    return 16000;
}
#define ADD8 "addq %8,%0\n\taddq %8,%1\n\taddq %8,%2\n\taddq %8,%3\n\t" \
             "addq %8,%4\n\taddq %8,%5\n\taddq %8,%6\n\taddq %8,%7\n\t"
static long k_int_tp(char *buf)
{
    long a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, one = 1;
    for (int i = 0; i < 1000; i++)
        __asm__ volatile(ADD8 ADD8 : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f),
                         "+r"(g), "+r"(h) : "r"(one));
    return 16000;
}
#define F512(r) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #r "\n\t"
static long k_fma512(char *buf)
{
    __asm__ volatile("vpxord %%zmm30,%%zmm30,%%zmm30\n\tvpxord %%zmm31,%%zmm31,%%zmm31\n\t"
                     ::: "xmm30", "xmm31");
    for (int i = 0; i < 1000; i++)
        __asm__ volatile(F512(0) F512(1) F512(2) F512(3) F512(4) F512(5) F512(6) F512(7)
                         F512(8) F512(9) F512(10) F512(11) F512(12) F512(13) F512(14) F512(15)
                         ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                         "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    return 16000;
}
#define F256(r) "vfmadd231ps %%ymm14, %%ymm15, %%ymm" #r "\n\t"
static long k_fma256(char *buf)
{
    __asm__ volatile("vxorps %%xmm14,%%xmm14,%%xmm14\n\tvxorps %%xmm15,%%xmm15,%%xmm15\n\t"
                     ::: "xmm14", "xmm15");
    for (int i = 0; i < 1000; i++)
        __asm__ volatile(F256(0) F256(1) F256(2) F256(3) F256(4) F256(5) F256(6) F256(7)
                         F256(8) F256(9) F256(10) F256(11) F256(0) F256(1) F256(2) F256(3)
                         ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                         "xmm8", "xmm9", "xmm10", "xmm11");
    return 16000;
}
#define L512(o, r) "vmovups " #o "(%0), %%zmm" #r "\n\t"
#define LOADS16 L512(0, 0) L512(64, 1) L512(128, 2) L512(192, 3) L512(256, 4) L512(320, 5) \
    L512(384, 6) L512(448, 7) L512(512, 0) L512(576, 1) L512(640, 2) L512(704, 3)          \
    L512(768, 4) L512(832, 5) L512(896, 6) L512(960, 7)
static long k_ld512(char *buf)
{
    for (int i = 0; i < 1000; i++)
        __asm__ volatile(LOADS16 :: "r"(buf) : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
                         "xmm6", "xmm7");
    return 16000;
}
/* the tiled GEMM's k loop: B's row loaded, FMAs with A's element broadcast from memory */
#define BC(o, r) "vfmadd231ps " #o "(%0)%{1to16%}, %%zmm20, %%zmm" #r "\n\t"
static long k_bcast(char *buf)
{
    __asm__ volatile("vpxord %%zmm20,%%zmm20,%%zmm20\n\t" ::: "xmm20");
    for (int i = 0; i < 1000; i++)
        __asm__ volatile("vmovups 1024(%0), %%zmm20\n\t" BC(4, 0) BC(8, 1) BC(12, 2) BC(16, 3)
                         BC(20, 4) BC(24, 5) BC(28, 6) BC(32, 7)
                         "vmovups 1088(%0), %%zmm20\n\t" BC(36, 0) BC(40, 1) BC(44, 2)
                         BC(48, 3) BC(52, 4) BC(56, 5) BC(60, 6) BC(64, 7)
                         :: "r"(buf) : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                         "xmm7", "xmm20");
    return 16000;
}
static long k_rd(char *buf, long bytes)
{
    for (long o = 0; o < bytes; o += 1024)
        __asm__ volatile(LOADS16 :: "r"(buf + o) : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4",
                         "xmm5", "xmm6", "xmm7");
    return bytes / 64;
}
static long k_l2rd(char *buf) { return k_rd(buf, 1 << 20); }
static long k_l3rd(char *buf) { return k_rd(buf, 64L << 20); }
static long k_pause(char *buf)
{
    for (int i = 0; i < 1000; i++)
        __asm__ volatile("pause");
    return 1000;
}

typedef long (*kern)(char *);
static const char *names[] = {"int_dep", "int_tp", "fma512", "fma256", "ld512", "bcast",
                              "l2rd", "l3rd", "pause"};
static kern kerns[] = {k_int_dep, k_int_tp, k_fma512, k_fma256, k_ld512, k_bcast, k_l2rd,
                       k_l3rd, k_pause};
#define NK 9
static int find(const char *n)
{
    for (int i = 0; i < NK; i++)
        if (!strcmp(n, names[i]))
            return i;
    return -1;
}

struct arg { int cpu, kind; volatile int *stop; pthread_barrier_t *bar; double rate; };
/* 1.0f everywhere (a byte pattern would be denormal floats: assists) */
static char *make_buf(int kind)
{
    long bytes = kind == find("l3rd") ? (64L << 20) : (2L << 20);
    float *b = aligned_alloc(4096, bytes);
    for (long i = 0; i < bytes / 4; i++)
        b[i] = 1.0f;
    return (char *)b;
}
static void *thread(void *p)
{
    struct arg *a = p;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(a->cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
    char *buf = make_buf(a->kind);
    kern k = kerns[a->kind];
    k(buf);
    pthread_barrier_wait(a->bar);
    double t0 = now();
    long done = 0;
    while (!*a->stop)
        done += k(buf);
    a->rate = done / ((now() - t0) * 1e6);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "spin")) {
        int kind = find(argv[2]);
        if (kind < 0)
            return 2;
        char *buf = make_buf(kind);
        for (;;)
            kerns[kind](buf);
    }
    if (argc < 4) {
        fprintf(stderr, "probe rates SECONDS CPUS [KINDS]\n");
        return 2;
    }
    double secs = atof(argv[2]);
    int cpus[1024], n = 0;
    for (char *t = strtok(argv[3], ","); t && n < 1024; t = strtok(0, ","))
        cpus[n++] = atoi(t);
    for (int kind = 0; kind < NK; kind++) {
        if (argc > 4 && !strstr(argv[4], names[kind]))
            continue;
        volatile int stop = 0;
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, 0, n + 1);
        struct arg a[1024];
        pthread_t th[1024];
        for (int i = 0; i < n; i++) {
            a[i] = (struct arg){cpus[i], kind, &stop, &bar, 0};
            pthread_create(&th[i], 0, thread, &a[i]);
        }
        pthread_barrier_wait(&bar);
        usleep((useconds_t)(secs * 1e6));
        stop = 1;
        printf("%s %d", names[kind], n);
        for (int i = 0; i < n; i++) {
            pthread_join(th[i], 0);
            printf(" %d:%.1f", cpus[i], a[i].rate);
        }
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
"""


def build() -> str:
    digest = hashlib.sha256((" ".join(CFLAGS) + SOURCE).encode()).hexdigest()[:16]
    program = BUILD / f"cpu_neighbours_{digest}"
    if not program.exists():
        BUILD.mkdir(parents=True, exist_ok=True)
        source = BUILD / f"cpu_neighbours_{digest}.c"
        source.write_text(SOURCE)
        subprocess.run(["gcc", *CFLAGS, "-o", str(program), str(source)], check=True)
    return str(program)


def rates(probe: str, seconds: float, kinds: list[str]) -> None:
    counts = [k for k in (1, 2, 4, 8, 16, len(CPUS)) if k <= len(CPUS)]
    counts = sorted(set(counts))
    alone: dict[str, float] = {}
    print(f"== rates: each thread's over one thread's alone (CPU {CPUS[-1]}); "
          f"{seconds} s a kind")
    print(f"{'kind':8s} {'threads':>7s} {'mean':>5s} {'least':>5s} {'most':>5s} halved  "
          "CPUs halved")
    for k in counts:
        cpus = ",".join(str(c) for c in CPUS[-k:])
        out = subprocess.run([probe, "rates", str(seconds), cpus, ",".join(kinds)],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            kind, _n, *cells = line.split()
            per = {int(c.split(":")[0]): float(c.split(":")[1]) for c in cells}
            if k == 1:
                alone[kind] = next(iter(per.values()))
            ratios = {cpu: r / alone[kind] for cpu, r in per.items()}
            halved = sorted(cpu for cpu, r in ratios.items() if r <= 0.65)
            print(f"{kind:8s} {k:7d} {statistics.mean(ratios.values()):5.2f} "
                  f"{min(ratios.values()):5.2f} {max(ratios.values()):5.2f} {len(halved):6d}  "
                  f"{','.join(map(str, halved))}", flush=True)


class Spinners:
    """A spinner of one kind on every CPU but the last."""

    def __init__(self, probe: str):
        self.probe, self.kind, self.procs = probe, None, []

    def set(self, kind: str | None) -> None:
        if kind == self.kind:
            return
        self.stop()
        if kind:
            command = ([sys.executable, "-c", "while 1: pass"] if kind == "py"
                       else [self.probe, "spin", kind])
            self.procs = [subprocess.Popen(["taskset", "-c", str(cpu), *command])
                          for cpu in CPUS[:-1]]
            time.sleep(0.1)
        self.kind = kind

    def stop(self) -> None:
        for process in self.procs:
            process.kill()
        for process in self.procs:
            process.wait()
        self.procs, self.kind = [], None


def _pin_all(cpus) -> None:
    """Every thread of this process (the pool's too) to `cpus`."""
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), set(cpus))
        except OSError:
            pass


def _traced(run: ck.PtxportRun) -> tuple[float, float]:
    run.reset()
    seconds = run.run()
    record = cpu_pool.last_shares()
    shares = [s for s in record["shares"] if s is not None]
    return seconds * 1e6, sum(end - begin for begin, end in shares)


def beside(probe: str, spec: str, kinds: list[str], rounds: int, runs: int) -> None:
    name, _, size = spec.partition(":")
    case = next(c for c in ck.CASES if c.name == name)
    problem = case.make(int(size) if size else case.full, np.random.default_rng(0))
    device = Device("cpu")
    device.set_current()
    stream = device.create_stream()
    run = ck.PtxportRun(case, problem, device, stream, {})
    run.first_run()
    configs = {"w1": (1, None), **{f"w1+{k}": (1, k) for k in kinds}}
    configs.update({f"w{k}": (k, None) for k in (4, 8, len(CPUS)) if k <= len(CPUS)})
    rows: dict[str, list[tuple[float, float]]] = {c: [] for c in configs}
    spinners = Spinners(probe)
    cpu_pool.trace_shares(True)
    try:
        for r in range(rounds):
            for config in configs if r % 2 == 0 else list(configs)[::-1]:
                workers, kind = configs[config]
                spinners.set(kind)
                cpu_executor.set_workers(workers)
                _pin_all(CPUS[-workers:])
                _traced(run)                       # (after the switch: untimed)
                rows[config] += [_traced(run) for _ in range(runs)]
    finally:
        cpu_pool.trace_shares(False)
        spinners.stop()
        _pin_all(CPUS)
        cpu_executor.set_workers(None)
        run.close()
    one_wall = statistics.median(w for w, _ in rows["w1"])
    one_busy = statistics.median(b for _, b in rows["w1"])
    print(f"== beside: {spec} ({problem.size}, {problem.blocks} blocks), {rounds} rounds x "
          f"{runs} runs; work and eff against w1 (alone)")
    print(f"{'config':12s} {'wall us':>10s} {'eff':>5s} {'work':>5s} {'least-most':>11s}")
    for config, values in rows.items():
        workers = configs[config][0]
        wall = statistics.median(w for w, _ in values)
        works = [b / one_busy for _, b in values]
        print(f"{config:12s} {wall:10.1f} {one_wall / (workers * wall):5.2f} "
              f"{statistics.median(works):5.2f} {min(works):5.2f}-{max(works):5.2f}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="rates,beside")
    parser.add_argument("--seconds", type=float, default=0.25)
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="the loops (rates) and spinners (beside; also `py`)")
    parser.add_argument("--case", default="gemm:1024")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    probe = build()
    kinds = args.kinds.split(",")
    parts = args.parts.split(",")
    if "rates" in parts:
        rates(probe, args.seconds, [k for k in kinds if k in KINDS])
    if "beside" in parts:
        beside(probe, args.case, kinds, args.rounds, args.runs)


if __name__ == "__main__":
    main()
