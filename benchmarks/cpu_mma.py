"""Warp matrix instructions on the CPU target: mma.sync.aligned (m16n8k16 f32.f16.f16.f32) and
ldmatrix, as warp gangs (codegen/targets/cpu/gang/mma.py, native vector code) next to the
thread-by-thread path (each mma a wait completed by the numpy resolver in
runtime/backends/cpu/warps.py), in mma/s and the ratio.

    PYTHONPATH=. python benchmarks/cpu_mma.py [--iterations N] [--blocks B]

The kernel: each of 4 warps a block loads its A (ldmatrix .x4) and B (.x2) fragments from
shared memory once, then runs a loop of N dependent mma.sync (D = A B + D), and stores D.

Then the warp gang alone on tl.dot's pattern (`tile`): each loop step 8 mma.sync of a warp's
32x32 tile (2 A and 4 B fragments, each A read by 4 mmas and each B by 2, as Triton's 64x64
tile with 4 warps has them), the fragments changed every step; in the process's CPU time
(one worker's time where the workers run one at a time), with the cost of one mma in ns:
one m16n8k16 is 2048 f32 FMAs, 128 AVX-512 FMA instructions (64 cycles at two a cycle).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.abi import param_layout
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.backends.cpu.kernels import compile_kernel

PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pout, .param .u32 count)
{
.reg .b32 %r<24>; .reg .f32 %f<8>; .reg .b64 %rd<8>; .reg .pred %p<2>;
.shared .align 16 .b8 tile[4096];
ld.param.u64 %rd1, [pout];
ld.param.u32 %r20, [count];
mov.u32 %r1, %tid.x;
mov.u32 %r2, tile;
shl.b32 %r3, %r1, 4;
add.u32 %r4, %r2, %r3;
cvt.rn.f32.u32 %f1, %r1;
mov.b32 %r5, %f1;
st.shared.v4.b32 [%r4], {%r5, %r5, %r5, %r5};
bar.sync 0;
and.b32 %r6, %r1, 31;
shl.b32 %r6, %r6, 4;
add.u32 %r6, %r2, %r6;
ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r7, %r8, %r9, %r10}, [%r6];
ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r11, %r12}, [%r6];
mov.f32 %f2, 0f00000000; mov.f32 %f3, 0f00000000;
mov.f32 %f4, 0f00000000; mov.f32 %f5, 0f00000000;
mov.u32 %r21, 0;
LOOP:
mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f2, %f3, %f4, %f5},
    {%r7, %r8, %r9, %r10}, {%r11, %r12}, {%f2, %f3, %f4, %f5};
add.u32 %r21, %r21, 1;
setp.lt.u32 %p1, %r21, %r20;
@%p1 bra LOOP;
mul.wide.u32 %rd2, %r1, 16;
add.s64 %rd3, %rd1, %rd2;
st.global.v4.f32 [%rd3], {%f2, %f3, %f4, %f5};
}
"""
THREADS = 128


def _tile_ptx() -> str:
    """TILE: 8 mmas a step over 2 A and 4 B fragments, which a xor changes every step."""
    mmas = []
    for i in range(2):
        for j in range(4):
            d = ", ".join(f"%f{1 + 4 * (4 * i + j) + e}" for e in range(4))
            a = ", ".join(f"%r{10 + 4 * i + e}" for e in range(4))
            b = ", ".join(f"%r{20 + 2 * j + e}" for e in range(2))
            mmas.append(f"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{d}}}, {{{a}}}, "
                        f"{{{b}}}, {{{d}}};")
    fragments = list(range(10, 18)) + list(range(20, 28))
    lines = [".version 8.0", ".target sm_80", ".address_size 64",
             ".visible .entry k(.param .u64 pout, .param .u32 count)", "{",
             ".reg .b32 %r<40>; .reg .f32 %f<40>; .reg .b64 %rd<8>; .reg .pred %p<2>;",
             "ld.param.u64 %rd1, [pout];", "ld.param.u32 %r2, [count];",
             "mov.u32 %r1, %tid.x;", "and.b32 %r1, %r1, 7;"]
    lines += [f"xor.b32 %r{x}, %r1, {0x3C003C00 + x};" for x in fragments]
    lines += [f"mov.f32 %f{x}, 0f00000000;" for x in range(1, 33)]
    lines += ["mov.u32 %r3, 0;", "LOOP:", *mmas]
    lines += [f"xor.b32 %r{x}, %r{x}, 1;" for x in fragments]
    lines += ["add.u32 %r3, %r3, 1;", "setp.lt.u32 %p1, %r3, %r2;", "@%p1 bra LOOP;",
              "mov.u32 %r4, %tid.x;", "mul.wide.u32 %rd2, %r4, 128;",
              "add.s64 %rd3, %rd1, %rd2;"]
    lines += [f"st.global.f32 [%rd3+{4 * x}], %f{x + 1};" for x in range(32)]
    return "\n".join(lines + ["}", ""])


def _binary(gang: bool, ptx: str = PTX):
    module = build(parse(ptx, "cpu_mma.ptx"))
    verify(module)
    return module, compile_kernel(module, "k", CpuOptions(gang=gang))


def _seconds(gang: bool, blocks: int, count: int, out: np.ndarray, ptx: str = PTX,
             clock=time.perf_counter) -> float:
    module, binary = _binary(gang, ptx)
    slots, size = param_layout(module.functions["k"])
    buffer = bytearray(size)
    buffer[slots[0].offset:slots[0].offset + 8] = np.uint64(out.ctypes.data).tobytes()
    buffer[slots[1].offset:slots[1].offset + 4] = np.uint32(count).tobytes()

    def launch() -> None:
        binary.launch((blocks, 1, 1), (THREADS, 1, 1), 0, bytes(buffer),
                      [(out.ctypes.data, out.nbytes)])
    launch()                       # compiles the block shape's code
    best = float("inf")
    for _ in range(3):
        start = clock()
        launch()
        best = min(best, clock() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=256)
    parser.add_argument("--blocks", type=int, default=16)
    args = parser.parse_args()
    warps = args.blocks * THREADS // 32
    mmas = warps * args.iterations
    results = {}
    for gang in (True, False):
        out = np.zeros((args.blocks * THREADS, 4), np.float32)
        results[gang] = (_seconds(gang, args.blocks, args.iterations, out), out)
    np.testing.assert_allclose(results[True][1], results[False][1], rtol=1e-5)
    print(f"{'path':>16} {'ms':>9} {'mma/s':>12} {'GFLOP/s':>8}")
    for gang, name in ((False, "thread+resolver"), (True, "warp gang")):
        seconds = results[gang][0]
        print(f"{name:>16} {seconds * 1e3:9.2f} {mmas / seconds:12.0f} "
              f"{mmas * 2 * 16 * 8 * 16 / seconds / 1e9:8.2f}")
    print(f"ratio (gang / resolver): {results[False][0] / results[True][0]:.1f}x "
          f"({warps} warps x {args.iterations} mma)")
    out = np.zeros((args.blocks * THREADS, 32), np.float32)
    seconds = _seconds(True, args.blocks, args.iterations, out, _tile_ptx(), time.process_time)
    mmas = warps * args.iterations * 8
    print(f"tile (8 mma a step, fragments shared): {mmas / seconds:12.0f} mma/s per CPU-second, "
          f"{mmas * 4096 / seconds / 1e9:.1f} GFLOP/s, {seconds / mmas * 1e9:.1f} ns a mma")


if __name__ == "__main__":
    main()
