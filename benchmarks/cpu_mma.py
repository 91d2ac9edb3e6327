"""Warp matrix instructions on the CPU target: mma.sync.aligned (m16n8k16 f32.f16.f16.f32) and
ldmatrix, as warp gangs (codegen/targets/cpu/gang/mma.py, native vector code) next to the
thread-by-thread path (each mma a wait completed by the numpy resolver in
runtime/backends/cpu/warps.py), in mma/s and the ratio.

    PYTHONPATH=. python benchmarks/cpu_mma.py [--iterations N] [--blocks B]

The kernel: each of 4 warps a block loads its A (ldmatrix .x4) and B (.x2) fragments from
shared memory once, then runs a loop of N dependent mma.sync (D = A B + D), and stores D.
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


def _binary(gang: bool):
    module = build(parse(PTX, "cpu_mma.ptx"))
    verify(module)
    return module, compile_kernel(module, "k", CpuOptions(gang=gang))


def _seconds(gang: bool, blocks: int, count: int, out: np.ndarray) -> float:
    module, binary = _binary(gang)
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
        start = time.perf_counter()
        launch()
        best = min(best, time.perf_counter() - start)
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


if __name__ == "__main__":
    main()
