"""What decides gemm's one-core mode? (issue 15: on the GPU host ptxport's pinned gemm 512^3
ran ~14 ms in some processes and ~23 ms in others, C's ~13-17.)

One process (pin it: `taskset -c 15`) builds cpu_kernels.py's gemm problem and, for each
buffer set named by --sets, allocates ptxport's A, B and C anew (every set stays alive, so
each set has pages of its own): `4k` as the CPU device allocates them (np.empty: a fresh 1 MiB
mapping each, 4 KiB pages), `huge` on 2 MiB aligned mappings with MADV_HUGEPAGE (each buffer at
offset 256 of its own huge page), `stagger` the same with the k-th buffer at 256 + k * (4 KiB +
256). Each set runs --rounds rounds of: ptxport's launch + sync (wall and the main thread's
CPU time: the kernel runs on it), C's sgemm on its own numpy arrays, C's sgemm on ptxport's
buffers (the same memory), and a clock probe (a Python loop of fixed work). A mode that follows
the buffers' memory shows in C on ptxport's buffers too; one that follows the machine's load
shows in the clock probe and in C's own arrays alike; the threads' CPU ticks show another
thread of the process sharing the core. The probe is bench_stats.probe_ms (cpu_kernels.py
and cpu_scaling.py time it beside each block). One line a set: medians in ms, the buffers'
huge pages (AnonHugePages of their mappings, KiB), their addresses mod 4 KiB and mod 2 MiB,
and the warp frames' and shared window's addresses mod 4 KiB.

    taskset -c 15 python benchmarks/cpu_gemm_modes.py [--sets 4k,huge,stagger] [--rounds 5]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import mmap
import os
import statistics
import sys
import time

import bench_stats  # (sibling modules: benchmarks/ is the script's folder)
import cpu_kernels as ck
import numpy as np

from ptxport import Device
from ptxport.runtime.backends.cpu import backend as cpu_backend
from ptxport.runtime.backends.cpu import executor as cpu_executor

_HUGE = 2 << 20
_MADV_HUGEPAGE = 14


class Placement:
    """Replaces the CPU backend's allocate while a set's buffers are made."""

    def __init__(self) -> None:
        self.kind = "4k"
        self.count = 0
        self.mappings: list[mmap.mmap] = []     # the huge sets' memory: kept to the end
        self._allocate = cpu_backend.Backend.allocate
        self._madvise = ctypes.CDLL(None).madvise
        self._madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        placement = self

        def allocate(backend, ordinal: int, nbytes: int):
            return placement.allocate(backend, ordinal, nbytes)
        cpu_backend.Backend.allocate = allocate

    def allocate(self, backend, ordinal: int, nbytes: int):
        if self.kind == "4k":
            return self._allocate(backend, ordinal, nbytes)
        offset = 256 + (self.count * (4096 + 256) if self.kind == "stagger" else 0)
        self.count += 1
        mapping = mmap.mmap(-1, nbytes + offset + 2 * _HUGE)
        self.mappings.append(mapping)
        raw = np.frombuffer(mapping, np.uint8)
        start = -raw.ctypes.data % _HUGE
        span = -(-(nbytes + offset) // _HUGE) * _HUGE
        self._madvise(raw.ctypes.data + start, span, _MADV_HUGEPAGE)
        start += offset
        allocation = cpu_backend.Allocation(raw.ctypes.data + start, nbytes,
                                            raw[start:start + nbytes])
        with backend._lock:
            backend._live[allocation.address] = nbytes
            backend._ranges = None
        return allocation


def huge_kib(address: int) -> int:
    """AnonHugePages (KiB) of the mapping holding `address`, -1 where none does."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and "-" in fields[0] and ":" not in fields[0]:
                low, high = (int(x, 16) for x in fields[0].split("-"))
                inside = low <= address < high
            elif inside and fields[0] == "AnonHugePages:":
                return int(fields[1])
    return -1


def thread_ticks() -> dict[str, int]:
    ticks = {}
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks[task] = int(fields[11]) + int(fields[12])
    return ticks


def measure_set(ptx: ck.PtxportRun, c_run: ck.CRun, lib, n: int, rounds: int) -> dict:
    alpha, beta = np.float32(1.5), np.float32(0.5)
    address = {name: buffer.handle for name, buffer in ptx.buffers.items()}
    times: dict[str, list[float]] = {"ptx": [], "cpu": [], "c": [], "c_on_ptx": [], "clock": []}
    before = thread_ticks()
    for _ in range(rounds):
        ptx.reset()
        cpu = time.thread_time()
        times["ptx"].append(ptx.run() * 1e3)
        times["cpu"].append((time.thread_time() - cpu) * 1e3)
        c_run.reset()
        times["c"].append(c_run.run() * 1e3)
        ptx.reset()
        start = time.perf_counter()
        lib.sgemm(n, n, n, alpha, address["A"], address["B"], beta, address["C"])
        times["c_on_ptx"].append((time.perf_counter() - start) * 1e3)
        # (session 12's probe: one run of 200,000 loops, as its figures were taken)
        times["clock"].append(bench_stats.probe_ms(200_000, 1))
    after = thread_ticks()
    row = {key: statistics.median(values) for key, values in times.items()}
    row["ptx_range"] = (min(times["ptx"]), max(times["ptx"]))
    row["ticks"] = sorted((after[t] - before.get(t, 0) for t in after), reverse=True)[:3]
    row["address"] = address
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="4k,huge,stagger,4k,huge,stagger")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    placement = Placement()
    lib = ck.build_c_library()
    ck.set_cores(lib, 1)
    cpu_executor.set_workers(1)
    case = next(c for c in ck.CASES if c.name == "gemm")
    problem = case.make(case.full, np.random.default_rng(0))
    device = Device("cpu")
    stream = device.create_stream()
    c_run = ck.CRun(problem, lib)
    print(f"affinity {sorted(os.sched_getaffinity(0))}; C's own arrays mod 4 KiB: "
          f"{ {k: a.ctypes.data % 4096 for k, a in c_run.arrays.items()} }", flush=True)
    objects: dict = {}
    sets = []
    for index, kind in enumerate(args.sets.split(",")):
        placement.kind, placement.count = kind, 0
        ptx = ck.PtxportRun(case, problem, device, stream, objects)
        sets.append(ptx)
        ptx.first_run()
        c_run.reset()
        c_run.run()
        wrong = ck.mismatch(problem, ptx.results(), c_run.results())
        row = measure_set(ptx, c_run, lib, case.full, args.rounds)
        worker = next(o for o in gc.get_objects() if isinstance(o, cpu_executor._Worker))
        addresses = row["address"].values()
        print(f"set {index} {kind:7s} ptxport {row['ptx']:6.2f} [{row['ptx_range'][0]:.1f}-"
              f"{row['ptx_range'][1]:.1f}] (its thread's CPU {row['cpu']:.2f})  C {row['c']:6.2f}"
              f"  C on ptxport's buffers {row['c_on_ptx']:6.2f}  clock {row['clock']:5.2f}"
              f"  huge KiB {','.join(str(huge_kib(a)) for a in addresses)}"
              f"  mod 4K {','.join(str(a % 4096) for a in addresses)}"
              f"  mod 2M {','.join(f'{a % _HUGE:x}' for a in addresses)}"
              f"  frames/shared mod 4K {worker.frames.ctypes.data % 4096}/"
              f"{worker.shared.ctypes.data % 4096}  ticks {row['ticks']}"
              f"{'' if wrong is None else '  WRONG ' + wrong}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
