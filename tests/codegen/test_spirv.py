"""The SPIR-V target (ptxport.codegen.targets.spirv): the LLVM IR it makes (OpenCL kernel
ABI, built-ins, address spaces, sub-group size) and the SPIR-V LLVM emits from it. Running
the kernels is tests/test_corpus_opencl.py's job.
"""

from __future__ import annotations

import struct

import pytest

from ptxport.codegen import support
from ptxport.codegen.targets import spirv
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

_HEADER = """.version 8.0
.target sm_80
.address_size 64
"""

SAXPY = _HEADER + """
.visible .entry saxpy(.param .f32 a, .param .u64 x, .param .u64 y, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
    ld.param.f32 %f1, [a];
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.s32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    ld.global.f32 %f3, [%rd7];
    fma.rn.f32 %f3, %f1, %f2, %f3;
    st.global.f32 [%rd7], %f3;
DONE:
    ret;
}
"""

WARP_SUM = _HEADER + """
.visible .entry warp_sum(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    .shared .align 4 .b8 tile[128];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %laneid;
    shfl.sync.bfly.b32 %r2, %r1, 16, 31, -1;
    st.shared.u32 [tile], %r2;
    bar.sync 0;
    ld.shared.u32 %r3, [tile];
    st.global.u32 [%rd1], %r3;
    ret;
}
"""

SMID = _HEADER + """
.visible .entry where(.param .u64 out)
{
    .reg .b64 %rd<3>; .reg .b32 %r<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %smid;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


def _module(ptx: str):
    module = build(parse(ptx, "t.ptx"))
    verify(module)
    return module


def test_kernel_abi_and_builtins():
    llmod, layouts = spirv.build_llvm(_module(SAXPY))
    text = str(llmod)
    assert llmod.triple == "spirv64-unknown-unknown"
    assert "define spir_kernel void @\"saxpy\"(ptr addrspace(1)" in text
    assert "ptr addrspace(3)" in text          # the shared buffer argument
    for builtin in ("_Z12get_group_idj", "_Z14get_local_sizej", "_Z12get_local_idj"):
        assert f"call spir_func i64 @\"{builtin}\"" in text
    assert "inttoptr i64" in text and "to ptr addrspace(1)" in text
    layout = layouts["saxpy"]
    assert layout.pointer_slots == (8, 16) and layout.params_size == 32
    assert not layout.needs_warp


def test_warp_kernels_ask_for_sub_groups_of_32():
    llmod, layouts = spirv.build_llvm(_module(WARP_SUM))
    text = str(llmod)
    assert layouts["warp_sum"].needs_warp
    assert "!intel_reqd_sub_group_size" in text
    assert "_Z17sub_group_shufflejj" in text and "_Z22get_sub_group_local_idv" in text
    assert "call spir_func void @\"_Z7barrierj\"(i32 3)" in text
    assert layouts["warp_sum"].static_shared == 128


TWO_TILES = _HEADER + """
.shared .align 4 .b8 module_tile[40000];
.visible .entry first(.param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    .shared .align 16 .b8 own[30000];
    ld.param.u64 %rd1, [out];
    ld.shared.u32 %r1, [own+16];
    st.global.u32 [%rd1], %r1;
    ret;
}
.visible .entry second(.param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    ld.shared.u32 %r1, [module_tile+8];
    st.global.u32 [%rd1], %r1;
    ret;
}
.visible .entry neither()
{
    ret;
}
"""


def test_each_kernel_lays_out_only_the_shared_memory_it_names():
    # (a module's kernels together may declare more than a work-group's local memory)
    _, layouts = spirv.build_llvm(_module(TWO_TILES))
    assert layouts["first"].static_shared == 30000
    assert layouts["second"].static_shared == 40000
    assert layouts["neither"].static_shared == 0


def test_emits_spirv():
    binary, _ = spirv.compile_module(_module(SAXPY))
    assert struct.unpack("<I", binary[:4])[0] == 0x07230203  # SPIR-V's magic number


def test_what_opencl_cannot_do_is_named():
    with pytest.raises(UnsupportedFeatureError, match="smid.*spirv|spirv.*smid"):
        spirv.build_llvm(_module(SMID))
    problems = support.unsupported("spirv", _module(SMID))
    assert any("OpenCL has no" in reason for reason in problems.values())


def test_cli_writes_spirv_and_llvm_ir(tmp_path, capsys):
    from ptxport.cli import main

    source = tmp_path / "saxpy.ptx"
    source.write_text(SAXPY)
    assert main(["compile", str(source), "--target", "spirv", "-o", str(tmp_path / "k.spv")]) == 0
    assert (tmp_path / "k.spv").read_bytes()[:4] == struct.pack("<I", 0x07230203)
    assert main(["compile", str(source), "--target", "spirv", "-o", str(tmp_path / "k.ll")]) == 0
    assert "spir_kernel" in (tmp_path / "k.ll").read_text()
    source.write_text(SMID)
    assert main(["compile", str(source), "--target", "spirv", "-o", str(tmp_path / "t.spv")]) == 1
    assert "spirv" in capsys.readouterr().err


PARAM_THROUGH_REGISTER = """
.version 8.0
.target sm_80
.address_size 64
.func (.param .b32 r) f(.param .b32 a)
{
.reg .b32 %r<3>; .reg .b64 %rd<3>;
mov.u64 %rd1, a;
ld.param.u32 %r1, [%rd1];
st.param.b32 [r], %r1;
ret;
}
"""


def test_a_param_address_in_a_register_of_a_device_function_is_refused_cleanly():
    """(It crashed the lowering with AttributeError.)"""
    module = build(parse(PARAM_THROUGH_REGISTER, "t.ptx"))
    verify(module)
    with pytest.raises(UnsupportedFeatureError, match="held in a register") as info:
        spirv.build_llvm(module)
    assert info.value.location.line == 9


def test_plain_recursion_is_left_to_the_runtime():
    """Intel's OpenCL runtime runs recursion without generic addresses of local memory
    (tests/programs/cpp_features' ackermann)."""
    import recursive_ptx

    spirv.build_llvm(_module(recursive_ptx.FIB_PTX))


@pytest.mark.parametrize("ptx, function, through, line", [
    ("RECURSION_PTX", "depth_sum", "called again through 'store_sum'", 39)])
def test_recursion_is_refused_naming_the_function_and_the_call(ptx, function, through, line):
    """Recursion through generic addresses of local memory (numba's result slots) crashed
    Intel's compiler and the process: refused before LLVM runs, at the call that closes the
    cycle."""
    import recursive_ptx

    source = getattr(recursive_ptx, ptx)
    with pytest.raises(UnsupportedFeatureError, match=f"recursive device function "
                                                      f"'{function}' \\({through}\\).*may not "
                                                      "recurse") as info:
        spirv.build_llvm(_module(source))
    assert info.value.location.line == line
    problems = support.unsupported("spirv", _module(source))
    assert any("may not recurse" in reason for reason in problems.values())


CLOCK_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry ticks(.param .u64 out)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, %clock64;
    st.global.u64 [%rd1], %rd2;
    ret;
}
.visible .entry plain(.param .u64 out)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    st.global.u64 [%rd1], 7;
    ret;
}
"""


def test_a_device_without_a_clock_refuses_only_the_kernels_that_read_it():
    """cl_khr_kernel_clock is optional: a kernel reading %clock64 (or %globaltimer) is refused
    on a device without it, by name; a kernel of the same module that reads no clock is not
    (the runtime compiles one kernel at a time)."""
    from types import SimpleNamespace

    from ptxport.runtime.backends.opencl import Backend, OpenclKernelBinary

    module = build(parse(CLOCK_PTX, "clock.ptx"))
    verify(module)
    layouts = {name: spirv.build_llvm(module, kernels=[name])[1][name]   # as opencl.py does
               for name in ("ticks", "plain")}
    assert layouts["ticks"].reads_clock and not layouts["plain"].reads_clock
    device = SimpleNamespace(name="clockless", extensions="cl_khr_fp64 cl_khr_subgroup_ballot")
    backend = SimpleNamespace(_devices=[device], warp_capable=lambda ordinal: True,
                              fp64_capable=lambda ordinal: True)
    binaries = {name: OpenclKernelBinary(name, b"", layout, {})
                for name, layout in layouts.items()}
    Backend._check_device(backend, 0, binaries["plain"])
    with pytest.raises(UnsupportedFeatureError, match=r"opencl:0 \(clockless\) has no "
                                                      r"device clock \(cl_khr_kernel_clock\)"):
        Backend._check_device(backend, 0, binaries["ticks"])
    device.extensions += " cl_khr_kernel_clock"
    Backend._check_device(backend, 0, binaries["ticks"])
