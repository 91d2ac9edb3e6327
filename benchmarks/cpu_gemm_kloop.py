"""What bounds gemm's k loop on the CPU target? (issue 15: is it the latency of each warp's
FMA chains, which running several warps' k loops together would hide, or something else?)

cpu_kernels.py's gemm (gemm_tiled.cu's sgemm_tiled, 16x16 tiles, 512^3) as PTX variants made
from its own PTX by editing the k loop (the code between the tile loop's two barriers: 16
loads of As, 16 of Bs, 16 dependent FMAs a thread), all timed in one process, alternating
(the order reversed every other round), so that the host's slow and fast phases hit every
variant alike:

- `as_is`: the kernel as it is;
- `no_k`: no k loop (what the rest of the kernel costs);
- `no_loads`, `no_a`, `no_b`: the FMAs (all 16, in their order) with some or all of their
  shared loads replaced by a register the thread holds (the loads' cost);
- `split2`, `split4`: each thread's chain of 16 FMAs as 2 or 4 partial sums added at the end:
  as many independent chains as two or four warps' k loops run together would give (NOT
  the kernel's result; what hiding the chains' latency is worth);
- `rows2` (and `rows2_no_k`, without its k loop): two warps' work fused by hand
  (gemm_tiled.cu with block 16x8, each thread rows ty and ty + 8, its two FMA chains
  interleaved in one k loop, B's tile element loaded once for both): the same result bit
  for bit, and what fusing two warps whole is worth.

One worker: process CPU time (pin it: `taskset -c 15`); --workers N: wall time.

    python benchmarks/cpu_gemm_kloop.py [--variants as_is,no_k,split2] [--rounds 9]
                                        [--workers 1] [--size 512] [--ptx gemm_tiled.ptx]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import time

import cpu_kernels as ck  # (a sibling module: benchmarks/ is the script's folder)
import numpy as np

from ptxport import Device, LaunchConfig, Program
from ptxport.runtime.backends.cpu import executor as cpu_executor

ROWS2 = r"""
extern "C" __global__ void sgemm_tiled(int M, int N, int K, float alpha, const float* A,
                                       const float* B, float beta, float* C)
{
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    int ty = threadIdx.y, tx = threadIdx.x;
    int row0 = blockIdx.y * 16 + ty, row1 = row0 + 8, col = blockIdx.x * 16 + tx;
    float acc0 = 0, acc1 = 0;
    for (int k0 = 0; k0 < K; k0 += 16) {
        int ka = k0 + tx, kb0 = k0 + ty, kb1 = kb0 + 8;
        As[ty][tx] = row0 < M && ka < K ? A[row0 * K + ka] : 0.f;
        As[ty + 8][tx] = row1 < M && ka < K ? A[row1 * K + ka] : 0.f;
        Bs[ty][tx] = kb0 < K && col < N ? B[kb0 * N + col] : 0.f;
        Bs[ty + 8][tx] = kb1 < K && col < N ? B[kb1 * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            float b = Bs[k][tx];
            acc0 += As[ty][k] * b;
            acc1 += As[ty + 8][k] * b;
        }
        __syncthreads();
    }
    if (row0 < M && col < N)
        C[row0 * N + col] = alpha * acc0 + beta * C[row0 * N + col];
    if (row1 < M && col < N)
        C[row1 * N + col] = alpha * acc1 + beta * C[row1 * N + col];
}
"""
VARIANTS = ("as_is", "no_k", "no_loads", "no_a", "no_b", "split2", "split4", "rows2",
            "rows2_no_k")


class Kernel:
    """sgemm_tiled's PTX, its k loop's lines and what the k loop reads."""

    def __init__(self, ptx: str):
        start = ptx.index(".visible .entry sgemm_tiled(")
        end = ptx.index("\n}", start) + 2
        self.before, self.after = ptx[:start], ptx[end:]
        self.lines = ptx[start:end].split("\n")
        bars = [i for i, line in enumerate(self.lines) if "bar.sync" in line]
        if len(bars) != 2:
            raise SystemExit(f"sgemm_tiled has {len(bars)} barriers, not the 2 expected")
        self.first, self.second = bars
        body = range(self.first + 1, self.second)
        self.fmas = [i for i in body if "fma.rn.f32" in self.lines[i]]
        loads = [i for i in body if "ld.shared.f32" in self.lines[i]]
        stores = [re.search(r"(%f\d+);", self.lines[i]).group(1)
                  for i in range(self.first) if "st.shared.f32" in self.lines[i]]
        if len(self.fmas) != 16 or len(loads) != 32 or len(stores) != 2:
            raise SystemExit("sgemm_tiled's k loop is not 16 FMAs of 32 shared loads")
        # (B's rows are 64 bytes apart, A's elements 4)
        base = {i: re.search(r"\[([^\]+]+)", self.lines[i]).group(1) for i in loads}
        text = "\n".join(self.lines)
        b_base = next(r for r in set(base.values()) if f"[{r}+64]" in text)
        self.loads = {"a": [i for i in loads if base[i] != b_base],
                      "b": [i for i in loads if base[i] == b_base]}
        self.held = {"a": stores[0], "b": stores[1]}     # (what the thread stored)

    def text(self, lines: list[str]) -> str:
        # (room for the split chains' registers, %f100 on)
        body = re.sub(r"\.reg \.f32(\s+)%f<(\d+)>;",
                      lambda m: f".reg .f32{m.group(1)}%f<{max(int(m.group(2)), 128)}>;",
                      "\n".join(lines))
        return self.before + body + self.after

    def no_k(self) -> str:
        return self.text(self.lines[:self.first + 1] + self.lines[self.second:])

    def without(self, which: str) -> str:
        lines = list(self.lines)
        for kind in which:
            for i in self.loads[kind]:
                dest = re.search(r"ld\.shared\.f32\s+(%f\d+),", lines[i]).group(1)
                lines[i] = f"\tmov.f32 \t{dest}, {self.held[kind]};"
        return self.text(lines)

    def split(self, parts: int) -> str:
        """The chain as `parts` partial sums (the first one's from the accumulator), added
        pairwise after the last FMA."""
        lines, sums = list(self.lines), []
        per = len(self.fmas) // parts
        for p in range(parts):
            first, last = self.fmas[p * per], self.fmas[p * per + per - 1]
            if p:
                lines[first] = re.sub(r", %f\d+;$", ", 0f00000000;", lines[first])
            dest = re.search(r"fma\.rn\.f32\s+(%f\d+),", lines[last]).group(1)
            lines[last] = lines[last].replace(f"{dest},", f"%f{100 + p},", 1)
            sums.append((f"%f{100 + p}", dest))
        final = sums[-1][1]
        level, spare = [s for s, _ in sums], 110
        adds = []
        while len(level) > 1:
            following = []
            for a, b in zip(level[::2], level[1::2], strict=True):
                dest = final if len(level) == 2 else f"%f{spare}"
                spare += 1
                adds.append(f"\tadd.f32 \t{dest}, {a}, {b};")
                following.append(dest)
            level = following
        return self.text(lines[:self.second] + adds + lines[self.second:])


def _rows2_no_k(ptx: str) -> str:
    """rows2's PTX without the code between its tile loop's two barriers."""
    lines = ptx.split("\n")
    first, second = [i for i, line in enumerate(lines) if "bar.sync" in line][:2]
    return "\n".join(lines[:first + 1] + lines[second:])


def variant_ptx(name: str, kernel: Kernel) -> str:
    if name == "as_is":
        return kernel.text(kernel.lines)
    if name == "no_k":
        return kernel.no_k()
    if name.startswith("no_"):
        return kernel.without({"no_loads": "ab", "no_a": "a", "no_b": "b"}[name])
    if name.startswith("split"):
        return kernel.split(int(name[5:]))
    rows2 = Program(ROWS2, code_type="c++").compile("ptx").code
    return rows2 if name == "rows2" else _rows2_no_k(rows2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--ptx", default=None,
                        help="gemm_tiled's PTX from this file (NVRTC's differ between hosts)")
    args = parser.parse_args()
    names = args.variants.split(",")
    cpu_executor.set_workers(args.workers)
    clock = time.process_time if args.workers == 1 else time.perf_counter
    if args.ptx:
        with open(args.ptx) as f:
            kernel = Kernel(f.read())
    else:
        source = (ck.KERNELS / "gemm_tiled.cu").read_text()
        kernel = Kernel(Program(source, code_type="c++").compile("ptx").code)
    case = next(c for c in ck.CASES if c.name == "gemm")
    problem = case.make(args.size, np.random.default_rng(0))
    device = Device("cpu")
    device.set_current()
    stream = device.create_stream()
    runs, first = {}, None
    for name in names:
        ptx = variant_ptx(name, kernel)
        ck.Program = lambda _source, code_type=None, ptx=ptx: Program(ptx, code_type="ptx")
        run = ck.PtxportRun(case, problem, device, stream, {})
        if name.startswith("rows2"):
            run.problem = dataclasses.replace(problem, launches=[
                (LaunchConfig(grid=c.grid, block=(16, 8)), a) for c, a in problem.launches])
        run.first_run()
        out = np.empty_like(problem.arrays["C"])
        run.buffers["C"].copy_to(out, stream=stream)
        stream.sync()
        first = out if first is None else first
        print(f"{name}: C bitwise as {names[0]}'s: {np.array_equal(out, first)}", flush=True)
        runs[name] = run
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            runs[name].reset()
            start = clock()
            runs[name].run()
            times[name].append((clock() - start) * 1e3)
    print(f"gemm {args.size}^3, {args.workers} worker(s), {args.rounds} rounds "
          f"({'process CPU' if args.workers == 1 else 'wall'} ms)")
    base = {s: f(times[names[0]]) for s, f in (("least", min), ("median", statistics.median))}
    for name in names:
        least, median = min(times[name]), statistics.median(times[name])
        print(f"{name:10s} least {least:7.2f} ({least / base['least']:.3f})  median "
              f"{median:7.2f} ({median / base['median']:.3f})  "
              f"{' '.join(f'{t:.1f}' for t in times[name])}")


if __name__ == "__main__":
    main()
