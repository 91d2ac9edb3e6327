"""Program.compile as cuda.core has it: target types, name expressions, logs."""

from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
from ptxport.errors import (
    CompileError,
    InvalidValueError,
    KernelNotFoundError,
    UnsupportedFeatureError,
)
from ptxport.frontends import nvrtc

needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC is not installed")

TEMPLATES = textwrap.dedent("""\
    namespace ops {
    template <typename T, int N>
    __global__ void scale(T* x)
    {
        int unused_variable;
        x[threadIdx.x] *= T(N);
    }
    }
    """)

PTX = textwrap.dedent("""\
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry noop() { ret; }
    """)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    return tmp_path / "nvrtc"


def _templates(**compile_args):
    options = ProgramOptions(name="templates.cu", arch="sm_80")
    return Program(TEMPLATES, "c++", options).compile(
        "ptx", name_expressions=["ops::scale<float, 3>", "ops::scale<int, 2>"], **compile_args)


@needs_nvrtc
def test_kernels_are_found_by_their_name_expressions(cache_dir):
    code = _templates()
    stream = Device("cpu").create_stream()
    for expression, dtype, factor in (("ops::scale<float, 3>", np.float32, 3),
                                      ("ops::scale<int, 2>", np.int32, 2)):
        kernel = code.get_kernel(expression)
        assert kernel.name == code.symbol_mapping[expression]
        assert kernel.name.startswith("_ZN3ops5scale")
        assert code.get_kernel(kernel.name) is kernel
        host = np.arange(8, dtype=dtype)
        buffer = Device("cpu").allocate(host.nbytes, stream=stream)
        buffer.copy_from(host, stream=stream)
        launch(stream, LaunchConfig(grid=1, block=8), kernel, buffer)
        buffer.copy_to(host, stream=stream)
        stream.sync()
        np.testing.assert_array_equal(host, np.arange(8, dtype=dtype) * factor)


@needs_nvrtc
def test_name_expressions_are_cached_with_the_ptx(cache_dir, monkeypatch):
    first = _templates()

    def no_nvrtc(*args, **kwargs):
        raise AssertionError("NVRTC ran on a cache hit")

    monkeypatch.setattr(nvrtc, "_run_nvrtc", no_nvrtc)
    again = _templates()
    assert again.symbol_mapping == first.symbol_mapping and again.code == first.code


@needs_nvrtc
def test_unknown_name_expression_is_a_compile_error(cache_dir):
    with pytest.raises(CompileError, match="nothing_like_this"):
        Program(TEMPLATES, "c++", ProgramOptions(arch="sm_80")).compile(
            "ptx", name_expressions=["ops::nothing_like_this<int>"])


@needs_nvrtc
def test_a_template_name_not_asked_for_says_how_to_ask(cache_dir):
    code = _templates()
    with pytest.raises(KernelNotFoundError, match="name_expressions"):
        code.get_kernel("ops::scale<double, 3>")


@needs_nvrtc
def test_logs_receive_nvrtcs_warnings(cache_dir):
    logs = io.StringIO()
    Program(TEMPLATES, "c++", ProgramOptions(arch="sm_80", no_cache=True)).compile(
        "ptx", name_expressions=["ops::scale<float, 1>"], logs=logs)
    assert "unused_variable" in logs.getvalue()


def test_name_expressions_are_refused_for_ptx():
    with pytest.raises(InvalidValueError, match="name_expressions"):
        Program(PTX, "ptx").compile("ptx", name_expressions=["noop"])


def test_ptx_target_keeps_the_ptx():
    code = Program(PTX, "ptx").compile("ptx")
    assert code.code_type == "ptx" and code.code == PTX and code.kernel_names == ("noop",)


def test_cubin_compiles_every_kernel_for_the_current_device_now():
    Device("cpu").set_current()
    code = Program(PTX, "ptx").compile("cubin")
    assert code.code_type == "cubin" and code.code == PTX
    assert ("cpu:0", "noop") in code._binaries
    stream = Device("cpu").create_stream()
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("noop"))
    stream.sync()


@pytest.mark.parametrize("target", ["ltoir", "fatbin"])
def test_targets_ptxport_cannot_make_are_refused(target):
    with pytest.raises(UnsupportedFeatureError, match=target):
        Program(PTX, "ptx").compile(target)


def test_get_global_finds_a_module_variable_on_the_cpu_device():
    import ctypes

    from ptxport.errors import KernelNotFoundError

    code = Program('__device__ int counter = 5;\n'
                   'extern "C" __global__ void bump() { counter += 1; }', "c++").compile()
    dev = Device("cpu")
    address, size = code.get_global("counter", dev)
    assert size == 4 and ctypes.c_int.from_address(address).value == 5
    with pytest.raises(KernelNotFoundError, match="no .global or .const variable named"):
        code.get_global("missing", dev)
