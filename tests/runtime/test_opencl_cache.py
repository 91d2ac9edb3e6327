"""The opencl backend's kernel caches (opencl_cache.py): a program's second run takes its
kernels' SPIR-V and the OpenCL runtime's binaries from disk, compiling nothing; a stored
binary the runtime refuses is built again from the SPIR-V.

Without pyopencl or a device that accepts SPIR-V, every test skips and says why.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets import spirv
from ptxport.runtime.backends import availability

_AVAILABLE, _WHY = availability("opencl")
pytestmark = pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")


def _saxpy(ptx: str, n: int = 300) -> np.ndarray:
    """y = 2 x + y on opencl:0 through a fresh Program (so nothing is kept in memory)."""
    dev = Device("opencl:0")
    dev.set_current()
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("saxpy")
    x_host = np.arange(n, dtype=np.float32)
    y_host = np.ones(n, np.float32)
    x, y = dev.allocate(x_host.nbytes, stream=stream), dev.allocate(y_host.nbytes, stream=stream)
    x.copy_from(x_host, stream=stream)
    y.copy_from(y_host, stream=stream)
    launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), kernel, np.float32(2), x, y,
           np.int32(n))
    y.copy_to(y_host, stream=stream)
    stream.sync()
    return y_host


def _expected(n: int = 300) -> np.ndarray:
    return 2 * np.arange(n, dtype=np.float32) + 1


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_the_second_run_compiles_nothing(cache_dir, saxpy_ptx, monkeypatch):
    np.testing.assert_array_equal(_saxpy(saxpy_ptx), _expected())
    assert len(list((cache_dir / "spirv").glob("*.spv"))) == 1
    assert len(list((cache_dir / "opencl-binary").glob("*.bin"))) == 1

    import pyopencl

    def no_llvm(*args, **kwargs):
        raise AssertionError("compile_module ran although the SPIR-V was stored")

    built_from = []
    program = pyopencl.Program

    def recording_program(context, *args):
        built_from.append("binary" if len(args) == 2 else "spirv")
        return program(context, *args)

    monkeypatch.setattr(spirv, "compile_module", no_llvm)
    monkeypatch.setattr(pyopencl, "Program", recording_program)
    np.testing.assert_array_equal(_saxpy(saxpy_ptx), _expected())
    assert built_from == ["binary"]


def test_a_refused_binary_is_built_again(cache_dir, saxpy_ptx):
    _saxpy(saxpy_ptx)
    (entry,) = (cache_dir / "opencl-binary").glob("*.bin")
    entry.write_bytes(b"not a binary of any OpenCL runtime")
    np.testing.assert_array_equal(_saxpy(saxpy_ptx), _expected())
    assert entry.read_bytes() != b"not a binary of any OpenCL runtime"   # stored again


def test_another_kernel_text_gets_its_own_entries(cache_dir, saxpy_ptx):
    _saxpy(saxpy_ptx)
    _saxpy(saxpy_ptx.replace("saxpy(", "saxpy (", 1))   # the same kernel, other PTX text
    assert len(list((cache_dir / "spirv").glob("*.spv"))) == 2
