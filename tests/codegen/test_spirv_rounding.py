"""The shared rounding core (ptxport/codegen/ops/convert.py) on the SPIR-V target: LLVM's
SPIR-V backend cannot select 128-bit integers, so directed-rounding conversions and the
16-bit float atomics must be lowered with integers of at most 64 bits. Their results are
checked on the CPU target (test_convert_ops.py, test_atomic_ops.py) and run on OpenCL by
tests/test_corpus_opencl.py; here, that the IR is narrow enough and becomes SPIR-V.

The video instructions' exact intermediates (ops/video.py: vmad's up to 66 bits, vshl's 65)
likewise: checked against the manual's reference on the CPU target (test_video_ops.py), and
here narrow enough, and the same on opencl:0 as on the CPU target, bit for bit.
"""

from __future__ import annotations

import itertools
import re
import struct

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets import spirv
from ptxport.frontends import nvrtc
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.backends import availability

needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0],
                                 reason="NVRTC is needed for the corpus's PTX")

SPIRV_MAGIC = 0x07230203
WIDER_THAN_64 = re.compile(r"\bi(?:6[5-9]|[7-9]\d|\d{3,})\b")

# Every path into the rounding core: float -> float in each directed mode (f64 sources drop
# up to a thousand bits), integers into 16-bit floats, the narrow packed formats and the
# 16-bit float atomics, which round an f32 sum.
ROUNDING = """.version 8.1
.target sm_90
.address_size 64

.visible .entry rounding(.param .u64 out)
{
    .reg .b16 %h<12>;
    .reg .b32 %r<8>;
    .reg .f32 %f<6>;
    .reg .f64 %fd<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.global.f64 %fd1, [%rd1];
    ld.global.f32 %f1, [%rd1+8];
    ld.global.u64 %rd2, [%rd1+16];
    cvt.rz.f32.f64 %f2, %fd1;
    cvt.rm.f32.f64 %f3, %fd1;
    cvt.rp.f32.f64 %f4, %fd1;
    cvt.rz.f16.f32 %h1, %f1;
    cvt.rm.f16.f64 %h2, %fd1;
    cvt.rp.bf16.f64 %h3, %fd1;
    cvt.rn.bf16.f64 %h4, %fd1;
    cvt.rz.f16.u64 %h5, %rd2;
    cvt.rm.bf16.s32 %h6, %r1;
    cvt.rn.satfinite.e4m3x2.f32 %h7, %f1, %f2;
    cvt.rn.satfinite.e5m2x2.f32 %h8, %f3, %f4;
    cvt.rz.satfinite.bf16.f32 %h9, %f1;
    mov.b32 %r2, {%h1, %h2};
    atom.global.add.noftz.f16x2 %r3, [%rd1+24], %r2;
    atom.global.add.noftz.bf16 %h10, [%rd1+28], %h3;
    st.global.f32 [%rd1+32], %f2;
    st.global.f32 [%rd1+36], %f3;
    st.global.f32 [%rd1+40], %f4;
    st.global.b16 [%rd1+44], %h4;
    st.global.b16 [%rd1+46], %h5;
    st.global.b16 [%rd1+48], %h6;
    st.global.b16 [%rd1+50], %h7;
    st.global.b16 [%rd1+52], %h8;
    st.global.b16 [%rd1+54], %h9;
    st.global.b16 [%rd1+56], %h10;
    st.global.b32 [%rd1+60], %r3;
    ret;
}
"""

# The corpus kernels that needed 128-bit integers before (tests/test_corpus_opencl.py).
CORPUS_KERNELS = [("atomics_float.cu", "atomic_add_half2"),
                  ("conversions.cu", "float_conversions"),
                  ("half_precision.cu", "half_convert")]


def _module(ptx: str, name: str):
    module = build(parse(ptx, name))
    verify(module)
    return module


def _assert_narrow_and_compiles(module, kernel: str) -> None:
    llmod, _ = spirv.build_llvm(module, kernels=[kernel])
    wide = sorted({m.group() for m in WIDER_THAN_64.finditer(str(llmod))})
    assert not wide, f"{kernel}: the SPIR-V target's LLVM IR uses {', '.join(wide)}"
    binary, layouts = spirv.compile_module(module, kernels=[kernel])
    assert struct.unpack("<I", binary[:4])[0] == SPIRV_MAGIC
    assert kernel in layouts


def test_every_rounding_path_stays_within_64_bits():
    _assert_narrow_and_compiles(_module(ROUNDING, "rounding.ptx"), "rounding")


@needs_nvrtc
@pytest.mark.parametrize(("file", "kernel"), CORPUS_KERNELS, ids=[k for _, k in CORPUS_KERNELS])
def test_corpus_kernels_with_directed_rounding_compile(file, kernel):
    ptx = corpus_ptx(KERNEL_DIR / file, "sm_80")
    _assert_narrow_and_compiles(_module(ptx, file), kernel)


# vshl/vshr in both modes (an unsigned word shifted left by 32 needs 65 bits) with .sat, the
# secondary operations and a merge; vmad with .sat, .po, .shr7/.shr15 and every kind of
# negation (-(u32 * u32) + s32 needs 66 bits). Thread i reads a, b, c from in[3i..3i+2] and
# writes its 14 results to out[14i..14i+13].
VIDEO = """.version 8.0
.target sm_80
.address_size 64

.visible .entry video(.param .u64 in, .param .u64 out)
{
    .reg .b32 %a, %b, %c, %t, %r<15>;
    .reg .b64 %in, %out, %off;
    ld.param.u64 %in, [in];
    ld.param.u64 %out, [out];
    mov.u32 %t, %tid.x;
    mul.wide.u32 %off, %t, 12;
    add.u64 %in, %in, %off;
    ld.global.u32 %a, [%in];
    ld.global.u32 %b, [%in+4];
    ld.global.u32 %c, [%in+8];
    vshl.u32.u32.u32.clamp %r1, %a, %b;
    vshl.s32.u32.u32.sat.clamp.max %r2, %a, %b, %c;
    vshl.s32.s32.u32.wrap.add %r3, %a, %b, %c;
    vshl.u32.u32.u32.sat.clamp.min %r4, %a, %b, %c;
    vshr.s32.s32.u32.clamp %r5, %a, %b;
    vshr.u32.u32.u32.sat.wrap.min %r6, %a, %b, %c;
    vshl.u32.u32.u32.sat.clamp %r7.h1, %a.b2, %b, %c;
    vmad.s32.s32.s32.sat.shr7 %r8, %a, %b, %c;
    vmad.u32.u32.u32.sat.shr15 %r9, %a, %b, -%c;
    vmad.s32.u32.u32.sat %r10, -%a, %b, %c;
    vmad.u32.u32.u32.po.sat %r11, %a, %b, %c;
    vmad.s32.s32.u32.shr15 %r12, %a.h1, -%b, %c;
    vmad.u32.u32.u32.sat %r13, %a, %b, %c;
    vmad.s32.u32.s32.sat.shr7 %r14, %a, %b, -%c;
    mul.wide.u32 %off, %t, 56;
    add.u64 %out, %out, %off;
    st.global.v4.u32 [%out], {%r1, %r2, %r3, %r4};
    st.global.v4.u32 [%out+16], {%r5, %r6, %r7, %r8};
    st.global.v4.u32 [%out+32], {%r9, %r10, %r11, %r12};
    st.global.v2.u32 [%out+48], {%r13, %r14};
    ret;
}
"""
VIDEO_RESULTS = 14
_OPENCL, _NO_OPENCL = availability("opencl")


def test_video_intermediates_stay_within_64_bits():
    _assert_narrow_and_compiles(_module(VIDEO, "video.ptx"), "video")


def _video_operands() -> np.ndarray:
    """Every (a, b, c) of the 32-bit extremes and shift amounts around 32, then random words:
    256 threads' operands, row by row."""
    edges = [0, 1, 31, 32, 33, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF]
    rows = list(itertools.product(edges, repeat=3))[:200]
    rng = np.random.default_rng(7)
    random_rows = rng.integers(0, 1 << 32, size=(256 - len(rows), 3), dtype=np.uint64)
    return np.concatenate([np.array(rows, dtype=np.uint32), random_rows.astype(np.uint32)])


def _run_video(device_name: str, operands: np.ndarray) -> np.ndarray:
    device = Device(device_name)
    device.set_current()
    kernel = Program(VIDEO, code_type="ptx").compile("native").get_kernel("video")
    stream = device.create_stream()
    threads = len(operands)
    source = device.allocate(operands.nbytes, stream=stream)
    source.copy_from(operands.view(np.uint8).reshape(-1), stream=stream)
    results = np.zeros((threads, VIDEO_RESULTS), dtype=np.uint32)
    target = device.allocate(results.nbytes, stream=stream)
    target.copy_from(results.view(np.uint8).reshape(-1), stream=stream)
    launch(stream, LaunchConfig(grid=1, block=threads), kernel, source, target)
    target.copy_to(results.view(np.uint8).reshape(-1), stream=stream)
    stream.sync()
    source.close()
    target.close()
    return results


@pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_NO_OPENCL}")
def test_video_intermediates_on_opencl_match_the_cpu_target():
    operands = _video_operands()
    on_cpu, on_opencl = _run_video("cpu", operands), _run_video("opencl:0", operands)
    differ = np.argwhere(on_cpu != on_opencl)
    if len(differ):
        thread, k = differ[0]
        a, b, c = (int(x) for x in operands[thread])
        pytest.fail(f"{len(differ)} results differ; the first: result {k + 1} (%r{k + 1}) for "
                    f"a={a:#x} b={b:#x} c={c:#x}: opencl:0 {int(on_opencl[thread, k]):#x}, "
                    f"cpu {int(on_cpu[thread, k]):#x}")


# 64-bit mul.hi and mad.hi: the SPIR-V target (widest_integer 64) builds the high half from
# 32-bit halves; a product by a constant is what nvcc makes of a division by a constant.
MULHI = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry mulhi(.param .u64 ops, .param .u64 out)
{
    .reg .u32 %t;
    .reg .u64 %p, %q, %a, %b, %r<6>;
    ld.param.u64 %p, [ops];
    ld.param.u64 %q, [out];
    mov.u32 %t, %tid.x;
    mad.wide.u32 %p, %t, 16, %p;
    mad.wide.u32 %q, %t, 40, %q;
    ld.global.v2.u64 {%a, %b}, [%p];
    mul.hi.u64 %r1, %a, %b;
    mul.hi.s64 %r2, %a, %b;
    mad.hi.s64 %r3, %a, %b, %a;
    mul.hi.s64 %r4, %a, -5270498306774157605;
    mul.hi.u64 %r5, %a, 13176245766935394011;
    st.global.v2.u64 [%q], {%r1, %r2};
    st.global.v2.u64 [%q+16], {%r3, %r4};
    st.global.u64 [%q+32], %r5;
    ret;
}
"""


def _mulhi_reference(a: int, b: int) -> list[int]:
    def signed(v: int) -> int:
        return v - (1 << 64) if v >> 63 else v

    mask = (1 << 64) - 1
    sa, sb = signed(a), signed(b)
    return [(a * b) >> 64 & mask, (sa * sb) >> 64 & mask, ((sa * sb >> 64) + sa) & mask,
            (sa * -5270498306774157605) >> 64 & mask, (a * 13176245766935394011) >> 64 & mask]


def test_64bit_mul_hi_stays_within_64_bits():
    _assert_narrow_and_compiles(_module(MULHI, "mulhi.ptx"), "mulhi")


@pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_NO_OPENCL}")
def test_64bit_mul_hi_on_opencl_is_exact():
    edges = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, (1 << 63) - 1,
             1 << 63, (1 << 63) + 1, (1 << 64) - 1, (1 << 64) - 2]
    rows = list(itertools.product(edges, repeat=2))
    rng = np.random.default_rng(64)
    rows += [tuple(int(v) for v in rng.integers(0, 1 << 63, 2, dtype=np.uint64) * 2 + 1)
             for _ in range(256 - len(rows))]
    operands = np.array(rows, dtype=np.uint64)
    device = Device("opencl:0")
    kernel = Program(MULHI, code_type="ptx").compile("native").get_kernel("mulhi")
    stream = device.create_stream()
    source = device.allocate(operands.nbytes, stream=stream)
    source.copy_from(operands, stream=stream)
    results = np.zeros((len(rows), 5), dtype=np.uint64)
    target = device.allocate(results.nbytes, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=len(rows)), kernel, source, target)
    target.copy_to(results, stream=stream)
    stream.sync()
    for (a, b), got in zip(rows, results, strict=True):
        assert [int(v) for v in got] == _mulhi_reference(a, b), (hex(a), hex(b))
