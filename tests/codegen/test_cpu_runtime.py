"""The compiler-runtime conversions the CPU target defines itself, exactly rounded, and the
check that compiled code needs nothing the process lacks."""

from __future__ import annotations

import struct

import numpy as np
from llvmlite import ir as ll

from cpu_harness import kernel_ptx, run_ptx
from ptxport.codegen.targets.cpu.runtime_functions import undefined_symbols


def bf16_from_f64(x: float) -> int:
    """Exact round-to-nearest-even of a double to bfloat16 bits (reference)."""
    if np.isnan(x):
        return None
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    sign = bits >> 63
    mag = abs(x)
    # Candidates: the two bfloat16 values around |x|, found through float32 truncation.
    f = np.float32(mag)
    fb = int(np.array(f, np.float32).view(np.uint32))
    lo = fb & 0xFFFF0000
    cands = {lo, lo + 0x10000, (lo - 0x10000) & 0xFFFFFFFF}
    def value(b):
        return float(np.array(b, np.uint32).view(np.float32))
    best = min(cands, key=lambda b: (abs(value(b) - mag), (b >> 16) & 1))
    return ((best >> 16) & 0x7FFF) | (sign << 15)


def test_double_to_bfloat16_is_correctly_rounded():
    ptx = kernel_ptx("""
.reg .b64 %rd<6>; .reg .b32 %r<3>; .reg .f64 %fd1; .reg .b16 %rs1;
ld.param.u64 %rd1, [inp]; ld.param.u64 %rd2, [out];
mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mad.lo.s32 %r1, %r2, 256, %r1;
mul.wide.u32 %rd3, %r1, 8; add.s64 %rd4, %rd1, %rd3; ld.global.f64 %fd1, [%rd4];
cvt.rn.bf16.f64 %rs1, %fd1;
mul.wide.u32 %rd3, %r1, 2; add.s64 %rd5, %rd2, %rd3; st.global.b16 [%rd5], %rs1;
ret;""", ".param .u64 out, .param .u64 inp", target="sm_90", version="8.0")
    rng = np.random.default_rng(3)
    # values just around bfloat16 rounding boundaries, where double rounding would go wrong
    base = rng.integers(0x3F800000, 0x47000000, 4096, dtype=np.uint64)
    halfway = ((base & ~np.uint64(0xFFFF)) | np.uint64(0x8000)).astype(np.uint32)
    near = halfway.view(np.float32).astype(np.float64)
    x = np.concatenate([near * (1 + 2.0 ** -40), near * (1 - 2.0 ** -40), near,
                        rng.standard_normal(4096) * 1e3]).astype(np.float64)
    x = x[: (x.size // 256) * 256]
    out = np.zeros(x.size, np.uint16)
    run_ptx(ptx, "k", grid=(x.size // 256,), block=(256,), args=[out, x])
    expected = np.array([bf16_from_f64(v) for v in x], np.uint16)
    np.testing.assert_array_equal(out, expected)


def test_undefined_symbols_of_an_object_file():
    import llvmlite.binding as llvm

    from ptxport.codegen.targets.cpu.machine import target_machine

    module = ll.Module()
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), []), "f")
    ext = ll.Function(module, ll.FunctionType(ll.VoidType(), []), "ptxport_test_missing")
    b = ll.IRBuilder(fn.append_basic_block())
    b.call(ext, [])
    b.ret_void()
    obj = target_machine().emit_object(llvm.parse_assembly(str(module)))
    assert undefined_symbols(obj) == ["ptxport_test_missing"]
