"""The shared rounding core (ptxport/codegen/ops/convert.py) on the SPIR-V target: LLVM's
SPIR-V backend cannot select 128-bit integers, so directed-rounding conversions and the
16-bit float atomics must be lowered with integers of at most 64 bits. Their results are
checked on the CPU target (test_convert_ops.py, test_atomic_ops.py) and run on OpenCL by
tests/test_corpus_opencl.py; here, that the IR is narrow enough and becomes SPIR-V.
"""

from __future__ import annotations

import re
import struct

import pytest

from corpus import KERNEL_DIR, corpus_ptx
from ptxport.codegen.targets import spirv
from ptxport.frontends import nvrtc
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

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
