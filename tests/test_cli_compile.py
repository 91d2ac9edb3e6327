"""`ptxport compile FILE --target TARGET -o OUT`: outputs per target, exit codes, errors as
`file:line:col: error: ...`."""

from __future__ import annotations

import pytest

from corpus import KERNEL_DIR, ptxas_errors, ptxas_path
from ptxport.cli import main
from ptxport.frontends import nvrtc

KERNELS = """.version 8.0
.target sm_80
.address_size 64

.visible .entry scale(.param .u64 p, .param .f32 a)
{
    .reg .b32 %r<3>; .reg .b64 %rd<5>; .reg .f32 %f<3>;
    ld.param.u64 %rd1, [p];
    ld.param.f32 %f1, [a];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    mul.rn.f32 %f2, %f2, %f1;
    st.global.f32 [%rd4], %f2;
    ret;
}

.visible .entry zero(.param .u64 p)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], 0;
    ret;
}
"""

UNSUPPORTED = """.version 8.6
.target sm_100a
.address_size 64

.visible .entry k()
{
    tcgen05.fence::before_thread_sync;
    ret;
}
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.ptx"
    path.write_text(KERNELS)
    return path


def test_nvptx_writes_ptx_that_ptxas_accepts(capsys, kernels, tmp_path):
    out = tmp_path / "out.ptx"
    code, stdout, err = run(capsys, "compile", str(kernels), "--target", "nvptx:sm_90",
                            "-o", str(out))
    assert (code, stdout, err) == (0, "", "")
    ptx = out.read_text()
    assert ".target sm_90" in ptx and ".entry scale(" in ptx and ".entry zero(" in ptx
    if ptxas_path() is not None:
        assert ptxas_errors(ptx, "sm_90") == ""


@pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC compiles .cu files")
def test_nvptx_compiles_cuda_sources(capsys, tmp_path):
    out = tmp_path / "saxpy.ptx"
    code, _, err = run(capsys, "compile", str(KERNEL_DIR / "saxpy.cu"), "--target",
                       "nvptx:sm_80", "-o", str(out))
    assert code == 0, err
    ptx = out.read_text()
    assert ".target sm_80" in ptx and ".entry saxpy(" in ptx and ".entry daxpy(" in ptx


def test_cpu_writes_llvm_ir_of_the_chosen_kernel(capsys, kernels, tmp_path):
    out = tmp_path / "scale.ll"
    code, _, err = run(capsys, "compile", str(kernels), "--target", "cpu", "--kernel", "scale",
                       "-o", str(out))
    assert code == 0, err
    import llvmlite.binding as llvm

    llvm.parse_assembly(out.read_text()).verify()


def test_cpu_writes_one_object_file_per_kernel(capsys, kernels, tmp_path):
    out = tmp_path / "k.o"
    code, stdout, err = run(capsys, "compile", str(kernels), "--target", "cpu", "-o", str(out))
    assert code == 0, err
    written = [tmp_path / "k.scale.o", tmp_path / "k.zero.o"]
    assert stdout.split() == [str(p) for p in written]
    for path in written:
        assert path.read_bytes()[:4] in (b"\x7fELF", b"\xcf\xfa\xed\xfe")


def test_cpu_output_must_be_ll_or_o(capsys, kernels, tmp_path):
    code, _, err = run(capsys, "compile", str(kernels), "--target", "cpu",
                       "-o", str(tmp_path / "k.ptx"))
    assert code == 2 and ".ll" in err


def test_an_unknown_kernel_is_a_usage_error(capsys, kernels, tmp_path):
    code, _, err = run(capsys, "compile", str(kernels), "--target", "cpu", "--kernel", "nope",
                       "-o", str(tmp_path / "k.ll"))
    assert code == 2 and "scale, zero" in err


@pytest.mark.parametrize("chip", ["gfx942", "gfx1100"])
def test_amdgpu_writes_llvm_ir_or_a_code_object(capsys, kernels, tmp_path, chip):
    from ptxport.codegen.targets.amdgpu import linker

    code, _, _ = run(capsys, "compile", str(kernels), "--target", f"amdgpu:{chip}",
                     "-o", str(tmp_path / "k.ll"))
    assert code == 0 and "amdgpu_kernel" in (tmp_path / "k.ll").read_text()
    if linker() is None:
        pytest.skip("no ld.lld: pip install 'ptxport[amd]'")
    code, _, _ = run(capsys, "compile", str(kernels), "--target", f"amdgpu:{chip}",
                     "-o", str(tmp_path / "k.hsaco"))
    assert code == 0 and (tmp_path / "k.hsaco").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.parametrize("target", ["gpu", "nvptx", "nvptx:sm_1", "cpu:x86",
                                    "amdgpu:gfx803"])
def test_unknown_targets_are_usage_errors(capsys, kernels, tmp_path, target):
    code, _, err = run(capsys, "compile", str(kernels), "--target", target,
                       "-o", str(tmp_path / "out"))
    assert code == 2 and err.startswith("ptxport: error:")


@pytest.mark.parametrize("target", ["nvptx:sm_100a", "cpu"])
def test_unsupported_instructions_are_file_line_col_errors(capsys, tmp_path, target):
    source = tmp_path / "bad.ptx"
    source.write_text(UNSUPPORTED)
    out = tmp_path / ("bad.ll" if target == "cpu" else "bad.ptx.out")
    code, _, err = run(capsys, "compile", str(source), "--target", target, "-o", str(out))
    assert code == 1
    family = target.partition(":")[0]
    assert err.startswith(f"{source}:7:5: error: 'tcgen05.fence::before_thread_sync' is not "
                          f"supported "
                          f"on target {family}"), err


def test_a_variable_nvptx_cannot_have_is_reported_where_it_is_declared(capsys, tmp_path):
    source = tmp_path / "tex.ptx"
    source.write_text(".version 8.0\n.target sm_80\n.address_size 64\n.global .texref t;\n"
                      ".visible .entry k()\n{\nret;\n}\n")
    code, _, err = run(capsys, "compile", str(source), "--target", "nvptx:sm_80",
                       "-o", str(tmp_path / "out.ptx"))
    assert code == 1 and err.startswith(f"{source}:4:"), err


def test_input_errors(capsys, tmp_path):
    code, _, err = run(capsys, "compile", str(tmp_path / "missing.ptx"), "--target", "cpu",
                       "-o", str(tmp_path / "x.ll"))
    assert code == 2 and "no such file" in err
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                   ".visible .entry k()\n{\n\tfrobnicate.u32 %r1;\n}\n")
    code, _, err = run(capsys, "compile", str(bad), "--target", "nvptx:sm_80",
                       "-o", str(tmp_path / "x.ptx"))
    assert code == 1 and err.startswith(f"{bad}:6:2: error: unknown instruction")


ONE_ELEMENT_VECTORS = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<3>; .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    ld.global.b32 { %r1 }, [ %rd1 + 0 ];
    add.s32 %r2, %r1, 1;
    st.global.b32 [ %rd1 + 0 ], { %r2 };
    ret;
}
"""


@pytest.mark.parametrize("target,suffix", [("nvptx:sm_90", ".ptx"), ("cpu", ".ll"),
                                           ("spirv", ".spv"), ("amdgpu:gfx942", ".hsaco")])
def test_one_element_vectors_compile_everywhere(capsys, tmp_path, target, suffix):
    # Triton writes `ld.global.b32 { %r1 }, [...]`: a vector of one element is one value
    source = tmp_path / "k.ptx"
    source.write_text(ONE_ELEMENT_VECTORS)
    code, _, err = run(capsys, "compile", str(source), "--target", target,
                       "-o", str(tmp_path / f"k{suffix}"))
    assert (code, err) == (0, "")
    if target.startswith("nvptx"):
        assert "ld.global.b32 \t%r1, [%rd1];" in (tmp_path / "k.ptx").read_text().replace(
            "  ", "")


def test_a_bug_in_a_lowering_is_an_internal_error_not_a_traceback(capsys, tmp_path,
                                                                    monkeypatch):
    from ptxport.codegen.targets import nvptx

    def broken(fl, inst):
        raise TypeError("an example bug")

    monkeypatch.setattr(nvptx.NvptxLowering, "lowering_for", lambda self, inst: broken)
    source = tmp_path / "k.ptx"
    source.write_text(ONE_ELEMENT_VECTORS)
    code, out, err = run(capsys, "compile", str(source), "--target", "nvptx:sm_90",
                         "-o", str(tmp_path / "out.ptx"))
    assert code == 1 and "Traceback" not in err
    assert err.startswith("ptxport: internal error: ") and "k.ptx:8:5: " in err
    assert "'ld.param.u64'" in err
    assert "TypeError: an example bug" in err and "bug in ptxport" in err


@pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC compiles .cu files")
def test_cuda_sources_compile_for_amdgpu_with_includes_and_defines(capsys, tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "scale.h").write_text("#define SCALE 3.0f\n")
    source = tmp_path / "k.cu"
    source.write_text('#include "scale.h"\n'
                      'extern "C" __global__ void k(float* p) { p[0] = SCALE * OFFSET; }\n')
    out = tmp_path / "k.ll"
    code, _, err = run(capsys, "compile", str(source), "--target", "amdgpu:gfx942",
                       "-I", str(tmp_path / "inc"), "-D", "OFFSET=2.0f", "-o", str(out))
    assert (code, err) == (0, "")
    assert "store i32 1086324736" in out.read_text()   # 6.0f: SCALE * OFFSET, folded
    code, _, err = run(capsys, "compile", str(source), "--target", "amdgpu:gfx942",
                       "-o", str(tmp_path / "k.hsaco"))
    assert code == 1 and "scale.h" in err
