"""Dynamic parallelism on the nvptx target: a kernel's device-side launches compile to calls of
cudadevrt's `.extern .func`s (as NVCC's PTX has them) with the child kernel's address taken by
`mov.b64 %rd, kernel;`, PTX that ptxas accepts as relocatable code (`-c`) and nvlink links with
NVIDIA's libcudadevrt.a (what the cuda backend does with the driver's linker,
runtime/backends/cuda_devrt.py). Running it needs a GPU: build/dev/cdpcuda_call.sh-style checks
on the GPU machine (docs/dynamic-parallelism.md)."""

from __future__ import annotations

import re
import subprocess
import textwrap

import pytest

from corpus import ptxas_path
from ptxport import Program, ProgramOptions
from ptxport.codegen.targets import spirv
from ptxport.codegen.targets.nvptx import compile_module
from ptxport.errors import BackendUnavailableError, UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.backends.cuda_devrt import calls_device_runtime, device_runtime_library

SOURCE = textwrap.dedent("""\
    extern "C" __global__ void child(int *x, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) x[i] = x[i] * 2 + 1;
    }
    extern "C" __global__ void total(const int *x, int n, long long *sum) {
      long long s = 0;
      for (int i = 0; i < n; ++i) s += x[i];
      *sum = s;
    }
    extern "C" __global__ void parent(int *x, int per_block, long long *sum) {
      if (threadIdx.x != 0) return;
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      child<<<(per_block + 63) / 64, 64, 0, s>>>(x + blockIdx.x * per_block, per_block);
      cudaStreamDestroy(s);
      if (blockIdx.x == 0)
        total<<<1, 1, 0, cudaStreamTailLaunch>>>(x, per_block * gridDim.x, sum);
    }
    """)


@pytest.fixture(scope="module")
def module():
    if not nvrtc.available()[0]:
        pytest.skip("NVRTC compiles the CUDA C++ of this test's kernels")
    code = Program(SOURCE, "c++", ProgramOptions(extensible_whole_program=True)).compile()
    ptx = code.code.decode() if isinstance(code.code, bytes) else code.code
    ir_module = build(parse(ptx, "cdp.ptx"))
    verify(ir_module)
    return ir_module


@pytest.fixture(scope="module", params=["sm_80", "sm_90"])
def compiled(request, module):
    return request.param, compile_module(module, request.param)


def _tool(name: str):
    ptxas = ptxas_path()
    path = ptxas.with_name(name) if ptxas is not None else None
    if path is None or not path.is_file():
        pytest.skip(f"no {name}: pip install nvidia-cuda-nvcc")
    return path


def test_launches_are_cudadevrt_calls_with_the_kernels_address(compiled):
    _, ptx = compiled
    for name in ("__cudaCDP2GetParameterBufferV2", "__cudaCDP2LaunchDeviceV2",
                 "__cudaCDP2StreamCreateWithFlags", "__cudaCDP2StreamDestroy"):
        assert re.search(rf"^\.extern \.func\s*\([^)]*\)\s*{name}\b", ptx, re.MULTILINE), name
        assert re.search(rf"call(?:\.uni)?\s*\(retval0\),\s*{name},", ptx), name
    assert re.search(r"mov\.[bu]64\s+%rd\d+, child;", ptx)
    assert re.search(r"mov\.[bu]64\s+%rd\d+, total;", ptx)
    assert calls_device_runtime(ptx)


def test_ptxas_accepts_it_as_relocatable_code(compiled, tmp_path):
    arch, ptx = compiled
    ptxas = _tool("ptxas")
    (tmp_path / "cdp.ptx").write_text(ptx)
    result = subprocess.run([str(ptxas), f"-arch={arch}", "-c", str(tmp_path / "cdp.ptx"),
                             "-o", str(tmp_path / "cdp.o")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # whole-program assembly must fail: the launch functions are cudadevrt's, not the module's
    whole = subprocess.run([str(ptxas), f"-arch={arch}", str(tmp_path / "cdp.ptx"), "-o",
                            str(tmp_path / "whole.cubin")], capture_output=True, text=True)
    assert whole.returncode != 0 and "__cudaCDP2" in whole.stderr


def test_nvlink_links_it_with_libcudadevrt(compiled, tmp_path):
    arch, ptx = compiled
    ptxas, nvlink = _tool("ptxas"), _tool("nvlink")
    try:
        library = device_runtime_library()
    except BackendUnavailableError as e:
        pytest.skip(str(e))
    (tmp_path / "cdp.ptx").write_text(ptx)
    subprocess.run([str(ptxas), f"-arch={arch}", "-c", str(tmp_path / "cdp.ptx"), "-o",
                    str(tmp_path / "cdp.o")], check=True, capture_output=True)
    alone = subprocess.run([str(nvlink), f"-arch={arch}", str(tmp_path / "cdp.o"), "-o",
                            str(tmp_path / "alone.cubin")], capture_output=True, text=True)
    assert alone.returncode != 0      # unresolved cudadevrt functions
    linked = subprocess.run([str(nvlink), f"-arch={arch}", str(tmp_path / "cdp.o"),
                             str(library), "-o", str(tmp_path / "cdp.cubin")],
                            capture_output=True, text=True)
    assert linked.returncode == 0, linked.stderr
    assert (tmp_path / "cdp.cubin").stat().st_size > 0


def test_a_module_without_device_launches_calls_no_device_runtime(module):
    plain = textwrap.dedent("""\
        .version 7.8
        .target sm_80
        .address_size 64
        .extern .func (.param .b32 r) helper(.param .b32 a);
        .visible .entry k(.param .u64 p) { ret; }
        """)
    assert not calls_device_runtime(plain)
    cdp1 = plain.replace("helper", "cudaDeviceSynchronize")
    assert not calls_device_runtime(cdp1)   # CDP1: no CDP2 library function to link


def _nvptx(ptx: str, arch: str = "sm_80") -> str:
    ir_module = build(parse(ptx, "guide.ptx"))
    verify(ir_module)
    return compile_module(ir_module, arch)


def test_the_guides_ptx_names_become_the_librarys(tmp_path):
    """PTX calling cudaGetParameterBuffer / cudaLaunchDevice by their CUDA C++ names (the
    Programming Guide's "Device-side Launch from PTX") calls libcudadevrt.a's __cudaCDP2
    functions of those names, the only ones it defines."""
    from test_cpu_dynamic_parallelism import PTX_LAUNCH

    ptx = _nvptx(PTX_LAUNCH)
    assert re.search(r"call(?:\.uni)?\s*\(retval0\),\s*__cudaCDP2GetParameterBuffer,", ptx)
    assert re.search(r"call(?:\.uni)?\s*\(retval0\),\s*__cudaCDP2LaunchDevice,", ptx)
    assert not re.search(r"[^_]cudaLaunchDevice\b", ptx)
    ptxas, nvlink = _tool("ptxas"), _tool("nvlink")
    try:
        library = device_runtime_library()
    except BackendUnavailableError as e:
        pytest.skip(str(e))
    (tmp_path / "g.ptx").write_text(ptx)
    subprocess.run([str(ptxas), "-arch=sm_80", "-c", str(tmp_path / "g.ptx"), "-o",
                    str(tmp_path / "g.o")], check=True, capture_output=True)
    linked = subprocess.run([str(nvlink), "-arch=sm_80", str(tmp_path / "g.o"), str(library),
                             "-o", str(tmp_path / "g.cubin")], capture_output=True, text=True)
    assert linked.returncode == 0, linked.stderr


def test_device_side_synchronize_is_refused_as_cdp1():
    ptx = textwrap.dedent("""\
        .version 7.8
        .target sm_80
        .address_size 64
        .extern .func (.param .b32 func_retval0) cudaDeviceSynchronize();
        .visible .entry k()
        {
            .reg .b32 %r<2>;
            {
            .param .b32 r;
            call.uni (r), cudaDeviceSynchronize, ();
            ld.param.b32 %r1, [r];
            }
            ret;
        }
        """)
    with pytest.raises(UnsupportedFeatureError, match="CDP1"):
        _nvptx(ptx)


def test_spirv_still_refuses_the_kernels_address(module):
    with pytest.raises(UnsupportedFeatureError, match="dynamic parallelism"):
        spirv.compile_module(module)
