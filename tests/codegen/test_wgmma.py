"""wgmma.mma_async on the CPU's warp gangs (codegen/targets/cpu/gang/wgmma.py), SPIR-V and
AMDGPU (codegen/targets/thread_wgmma.py) and NVPTX (passed through): hand-written
kernels (tests/codegen/wgmma_cases.py) for each swizzle mode, K- and MN-major operands, A in
registers, bf16, tf32, f16 accumulators, scale-d and negated inputs, against numpy results
computed from the PTX ISA's descriptor and fragment rules. Inputs are small multiples of powers
of two, so every sum is exact and the comparison is bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import wgmma_cases as wc

from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError, IrVerificationError, UnsupportedFeatureError
from ptxport.ir.abi import param_layout
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.backends import availability
from ptxport.runtime.backends.cpu.kernels import compile_kernel

_OPENCL, _WHY = availability("opencl")

_BINARIES: dict = {}


def _binary(ptx: str, gang: bool = True):
    key = (ptx, gang)
    if key not in _BINARIES:
        module = build(parse(ptx, "wgmma.ptx"))
        verify(module)
        _BINARIES[key] = (module, compile_kernel(module, "wgmma_test", CpuOptions(gang=gang)))
    return _BINARIES[key]


def run_case(case: wc.Case, seed: int = 0, desc_a=None, gang: bool = True
             ) -> tuple[np.ndarray, np.ndarray]:
    """(out, want) of one launch of the case's kernel on the CPU (desc_a: another A
    descriptor; gang=False: thread by thread)."""
    args = wc.arguments(case, seed)
    module, binary = _binary(wc.ptx(case), gang)
    assert (binary.gang_refusal is None) == gang, binary.gang_refusal
    image, out, ain = args["image"], args["out"], args["ain"]
    desc_a = args["desc_a"] if desc_a is None else desc_a
    values = [image.ctypes.data, image.size, out.ctypes.data, desc_a, args["desc_b"],
              ain.ctypes.data, args["scale_d"]]
    slots, size = param_layout(module.functions["wgmma_test"])
    buffer = bytearray(size)
    for slot, value in zip(slots, values, strict=True):
        width = 4 if slot.size == 4 else 8
        buffer[slot.offset:slot.offset + width] = int(value).to_bytes(width, "little")
    binary.launch((1, 1, 1), (wc.THREADS, 1, 1), 0, bytes(buffer),
                  [(a.ctypes.data, a.nbytes) for a in (image, out, ain)])
    return out, args["want"]


@pytest.mark.parametrize("case", wc.cases(), ids=lambda c: c.name)
def test_wgmma_against_the_descriptor_rules(case):
    out, want = run_case(case)
    np.testing.assert_array_equal(out, want)


def test_a_descriptor_outside_the_shared_window_faults():
    """An SBO that puts A's last rows past the 32 KiB window: the kernel stops with
    IllegalAddressError instead of reading past the window."""
    case = wc.cases()[0]
    bad = wc.descriptor(wc.Operand(0, True, lbo=4096, sbo=8192), 0)
    with pytest.raises(IllegalAddressError, match="line"):
        run_case(case, desc_a=bad)


@pytest.mark.parametrize("text, why", [
    ("{%d0}, %rd10, %rd11, %p1, 1, 1, 0, 0", "d needs 32 registers"),
    ("{%d0}, %rd10, %rd11, %p1, 1, 1, 0",
     "8 operands for .f16 inputs with A in shared memory, not 7"),
    ("{%d0}, %rd10, %rd11, %p1, 2, 1, 0, 0", "must be 1 or -1"),
])
def test_malformed_forms_are_refused_by_the_verifier(text, why):
    case = wc.Case(a=wc.Operand(), b=wc.Operand())
    source = wc.ptx(case)
    head, tail = source.split("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 ")
    tail = tail.split(";", 1)[1]
    bad = head + "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " + text + ";" + tail
    with pytest.raises(IrVerificationError, match=why):
        verify(build(parse(bad, "bad.ptx")))


@pytest.mark.parametrize("case", [
    wc.Case(n=8, a=wc.Operand(1, True, lbo=16, sbo=1024, start=32),
            b=wc.Operand(2, False, lbo=1024, sbo=512)),
    wc.Case(n=8, ab_type="tf32", a=wc.Operand(3, True, lbo=16, sbo=256),
            b=wc.Operand(0, True, lbo=4096, sbo=128), scale_b=-1, scale_d=False),
], ids=lambda c: c.name)
def test_wgmma_thread_by_thread(case):
    """Kernels the gang refuses (CpuOptions(gang=False) here) compute wgmma per thread
    (codegen/targets/thread_wgmma.py), every element's address checked."""
    out, want = run_case(case, gang=False)
    np.testing.assert_array_equal(out, want)


def test_thread_by_thread_refuses_a_in_registers_by_name():
    case = wc.Case(n=8, a=None, b=wc.Operand())
    with pytest.raises(UnsupportedFeatureError, match="wgmma with A in registers"):
        compile_kernel(build(parse(wc.ptx(case), "w.ptx")), "wgmma_test", CpuOptions(gang=False))


# --- the other targets --------------------------------------------------------------------------

def test_nvptx_keeps_wgmma_for_sm_90a_and_ptxas_accepts_it():
    """NVPTX passes wgmma through as inline PTX (d tied as input and output) and compiles a
    module with it for sm_90a when asked for sm_90; ptxas of the nvcc wheel accepts it."""
    from corpus import ptxas_errors, ptxas_path
    from ptxport.codegen.targets.nvptx import compile_module

    for case in (wc.cases()[0], wc.Case(a=None, b=wc.Operand())):
        out = compile_module(build(parse(wc.ptx(case), "w.ptx")), "sm_90")
        assert ".target sm_90a" in out
        assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" in out
        if ptxas_path() is not None:
            assert ptxas_errors(out, "sm_90a") == ""


def test_nvptx_refuses_wgmma_for_other_architectures_by_name():
    from ptxport.codegen.targets.nvptx import compile_module

    module = build(parse(wc.ptx(wc.cases()[0]), "w.ptx"))
    with pytest.raises(UnsupportedFeatureError, match="wgmma.*nvptx for sm_80.*sm_90a"):
        compile_module(module, "sm_80")


_N8_CASES = [
    wc.Case(n=8, a=wc.Operand(1, True, lbo=16, sbo=1024, start=32),
            b=wc.Operand(2, False, lbo=1024, sbo=512)),
    wc.Case(n=8, a=None, b=wc.Operand(3, True, lbo=16, sbo=256), ab_type="bf16", scale_a=-1),
    wc.Case(n=8, a=None, b=wc.Operand(0, True, lbo=4096, sbo=128), ab_type="tf32",
            scale_d=False),
]


@pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}")
@pytest.mark.parametrize("case", _N8_CASES, ids=lambda c: c.name)
def test_wgmma_on_opencl(case):
    """SPIR-V (codegen/targets/thread_wgmma.py): each work-item computes its own accumulators,
    reading shared memory through the descriptors and A's registers by sub-group shuffles.
    N = 8 keeps Intel's finalization of the SPIR-V to seconds."""
    from ptxport import Device, LaunchConfig, Program, launch

    dev = Device("opencl:0")
    args = wc.arguments(case)
    stream = dev.default_stream
    buffers = []
    for name in ("image", "out", "ain"):
        buffer = dev.allocate(args[name].nbytes, stream=stream)
        buffer.copy_from(np.ascontiguousarray(args[name]).reshape(-1).view(np.uint8),
                         stream=stream)
        buffers.append(buffer)
    kernel = Program(wc.ptx(case), "ptx").compile().get_kernel("wgmma_test")
    launch(stream, LaunchConfig(grid=1, block=wc.THREADS), kernel, buffers[0],
           np.uint32(args["image"].size), buffers[1], np.uint64(args["desc_a"]),
           np.uint64(args["desc_b"]), buffers[2], np.uint32(args["scale_d"]))
    got = np.empty_like(args["out"])
    buffers[1].copy_to(got.reshape(-1).view(np.uint8), stream=stream)
    stream.sync()
    np.testing.assert_array_equal(got, args["want"])


@pytest.mark.parametrize("case", _N8_CASES[:2], ids=lambda c: c.name)
def test_amdgpu_makes_a_code_object_for_wgmma(case):
    from ptxport.codegen.targets.amdgpu import compile_module

    code = compile_module(build(parse(wc.ptx(case), "w.ptx")))
    assert code[:4] == b"\x7fELF"


def test_other_wgmma_forms_are_refused_by_name_on_gpus():
    from ptxport.codegen.support import unsupported

    source = wc.ptx(wc.cases()[0]).replace("m64n64k16.f32.f16.f16", "m64n64k32.f32.e4m3.e4m3")
    source = source.replace("%p1, 1, 1, 0, 0;", "%p1, 1, 1;")
    module = build(parse(source, "w.ptx"))
    for target in ("spirv", "amdgpu"):
        reasons = unsupported(target, module).values()
        assert any("this wgmma form" in r for r in reasons), reasons


_PACK = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry pack(.param .u64 p_in, .param .u64 p_out)
{
    .reg .b32 %r<8>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [p_in];
    ld.param.u64 %rd1, [p_out];
    mul.wide.u32 %rd2, %r0, 8;
    add.s64 %rd3, %rd0, %rd2;
    ld.global.v2.f32 {%f0, %f1}, [%rd3];
    cvt.rn.f16x2.f32 %r1, %f0, %f1;
    cvt.rz.relu.bf16x2.f32 %r2, %f0, %f1;
    mul.wide.u32 %rd4, %r0, 8;
    add.s64 %rd5, %rd1, %rd4;
    st.global.v2.b32 [%rd5], {%r1, %r2};
    ret;
}
"""


def test_packing_two_f32_as_warp_gangs_matches_thread_by_thread():
    """cvt.{rn,rz.relu}.{f16x2,bf16x2}.f32 (Triton's P before a wgmma with A in registers)
    runs in warp gangs, bit for bit as the thread-by-thread code on edge values."""
    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65520.0, 1e-8, -6e-8,
                        5.96e-8, 3.0e38, -1.5, 2.0 ** -14, 2.0 ** -24], np.float32)
    values = np.concatenate([special, rng.standard_normal(256 - len(special)).astype(
        np.float32) * np.float32(1000)]).astype(np.float32)
    outs = []
    for gang in (True, False):
        module = build(parse(_PACK, "pack.ptx"))
        binary = compile_kernel(module, "pack", CpuOptions(gang=gang))
        assert (binary.gang_refusal is None) == gang
        out = np.zeros(256, np.uint32)
        slots, size = param_layout(module.functions["pack"])
        buffer = bytearray(size)
        for slot, array in zip(slots, (values, out), strict=True):
            buffer[slot.offset:slot.offset + 8] = int(array.ctypes.data).to_bytes(8, "little")
        binary.launch((1, 1, 1), (128, 1, 1), 0, bytes(buffer),
                      [(a.ctypes.data, a.nbytes) for a in (values, out)])
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    halves = outs[0][0::2].copy().view(np.uint16).reshape(-1, 2)     # (low: b, high: a)
    with np.errstate(over="ignore"):
        want = np.stack([values[1::2].astype(np.float16).view(np.uint16),
                         values[0::2].astype(np.float16).view(np.uint16)], axis=1)
    numbers = ~np.isnan(values[0::2]) & ~np.isnan(values[1::2])     # NaNs: PTX's canonical
    np.testing.assert_array_equal(halves[numbers], want[numbers])
