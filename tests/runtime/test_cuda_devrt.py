"""The cuda backend's linking of modules that call CUDA's device runtime (dynamic parallelism,
runtime/backends/cuda_devrt.py): where libcudadevrt.a is found, and which driver linker calls
load such a module, against a stand-in for cuda-bindings' `driver` (no GPU needed). The real
driver's link is checked on a GPU machine (docs/dynamic-parallelism.md)."""

from __future__ import annotations

import ctypes
import enum
import types
from pathlib import Path

import numpy as np
import pytest

from ptxport.errors import BackendUnavailableError, CompileError
from ptxport.runtime.backends import cuda, cuda_devrt

CDP_PTX = """
.version 7.8
.target sm_80
.address_size 64

.extern .func (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2
(
	.param .b64 p0,
	.param .align 4 .b8 p1[12],
	.param .align 4 .b8 p2[12],
	.param .b32 p3
)
;
.visible .entry parent() { ret; }
"""

PLAIN_PTX = CDP_PTX.split(".extern", 1)[0] + ".visible .entry plain() { ret; }\n"


@pytest.fixture
def no_library(monkeypatch):
    """No libcudadevrt.a anywhere but where a test puts one."""
    monkeypatch.setattr(cuda_devrt, "_from_pathfinder", lambda: None)
    monkeypatch.setattr(cuda_devrt, "_from_wheel", lambda: None)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)


def _library(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "libcudadevrt.a").write_bytes(b"!<arch>\n")
    return directory / "libcudadevrt.a"


def test_a_toolkit_under_cuda_home_is_the_fallback(no_library, monkeypatch, tmp_path):
    library = _library(tmp_path / "lib64")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert cuda_devrt.device_runtime_library() == library


def test_cuda_path_is_read_too(no_library, monkeypatch, tmp_path):
    library = _library(tmp_path / "lib")
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    assert cuda_devrt.device_runtime_library() == library


def test_pathfinder_and_the_wheel_come_before_the_toolkit(no_library, monkeypatch, tmp_path):
    _library(tmp_path / "toolkit" / "lib64")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "toolkit"))
    wheel = _library(tmp_path / "wheel")
    monkeypatch.setattr(cuda_devrt, "_from_wheel", lambda: wheel)
    assert cuda_devrt.device_runtime_library() == wheel
    found = _library(tmp_path / "pathfinder")
    monkeypatch.setattr(cuda_devrt, "_from_pathfinder", lambda: found)
    assert cuda_devrt.device_runtime_library() == found


def test_no_library_names_the_wheel_to_install(no_library):
    with pytest.raises(BackendUnavailableError, match="pip install nvidia-cuda-runtime"):
        cuda_devrt.device_runtime_library()


def test_the_wheels_library_is_found_where_it_is_installed():
    found = cuda_devrt._from_wheel()
    if found is None:
        pytest.skip("the nvidia-cuda-runtime wheel is not installed (pip install "
                    "nvidia-cuda-runtime)")
    assert found.name == "libcudadevrt.a" and found.parent.name == "lib"
    assert cuda_devrt.device_runtime_library().is_file()


class _Code(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209
    CUDA_ERROR_NOT_FOUND = 500


class LinkingDriver:
    """cuda-bindings' driver calls of a link and a module load, recorded as (name, args)."""

    CUjitInputType = types.SimpleNamespace(CU_JIT_INPUT_CUBIN=0, CU_JIT_INPUT_PTX=1,
                                           CU_JIT_INPUT_LIBRARY=4)
    CUjit_option = types.SimpleNamespace(CU_JIT_ERROR_LOG_BUFFER=5,
                                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES=6)

    def __init__(self, refuse: dict[str, _Code] | None = None) -> None:
        self.calls: list[tuple[str, tuple]] = []
        self.refuse = refuse or {}
        self.cubin = ctypes.create_string_buffer(b"linked cubin", 12)
        self.log: bytearray | None = None

    LOG = b"nvlink error: Undefined reference to 'x'"

    def _record(self, name: str, args: tuple) -> _Code:
        self.calls.append((name, args))
        code = self.refuse.pop(name, _Code.CUDA_SUCCESS)
        if code != _Code.CUDA_SUCCESS and self.log is not None:
            self.log[:len(self.LOG)] = self.LOG
        return code

    def cuLinkCreate(self, count, options, values):
        self.log = values[0] if count else None
        return self._record("cuLinkCreate", (count,)), "state"

    def cuLinkAddData(self, state, kind, data, size, name, *options):
        return (self._record("cuLinkAddData", (kind, bytes(data), size, name)),)

    def cuLinkAddFile(self, state, kind, path, *options):
        return (self._record("cuLinkAddFile", (kind, path)),)

    def cuLinkComplete(self, state):
        return self._record("cuLinkComplete", ()), ctypes.addressof(self.cubin), 12

    def cuLinkDestroy(self, state):
        return (self._record("cuLinkDestroy", (state,)),)

    def cuModuleLoadData(self, image):
        return self._record("cuModuleLoadData", (bytes(image),)), "module"

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


@pytest.fixture
def library(no_library, monkeypatch, tmp_path):
    found = _library(tmp_path / "lib64")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    return found


def _link(driver: LinkingDriver) -> bytes:
    return cuda_devrt.link_device_runtime(driver, CDP_PTX, "sm_90", "cdp (ptxport PTX) on cuda:0",
                                          cuda._check, cuda._NOT_JITTABLE)


def test_the_ptx_is_linked_with_the_library_by_the_drivers_linker(library):
    driver = LinkingDriver()
    assert _link(driver) == b"linked cubin"
    assert driver.names() == ["cuLinkCreate", "cuLinkAddData", "cuLinkAddFile",
                              "cuLinkComplete", "cuLinkDestroy"]
    kind, data, size, _ = driver.calls[1][1]
    assert kind == driver.CUjitInputType.CU_JIT_INPUT_PTX and data == CDP_PTX.encode() + b"\0"
    assert size == len(data)
    assert driver.calls[2][1] == (driver.CUjitInputType.CU_JIT_INPUT_LIBRARY,
                                  str(library).encode())


def test_a_refused_link_is_a_compile_error_with_the_linkers_log(library):
    driver = LinkingDriver({"cuLinkComplete": _Code.CUDA_ERROR_NOT_FOUND})
    with pytest.raises(CompileError, match="cannot link cdp .*CUDA_ERROR_NOT_FOUND") as raised:
        _link(driver)
    assert raised.value.log == driver.LOG.decode()
    assert driver.names()[-1] == "cuLinkDestroy"    # the linker's state is freed


def test_a_library_newer_than_the_driver_gives_way_to_the_next(library, monkeypatch, tmp_path):
    """As on an H100 with driver 580 (CUDA 13.0): the 13.5 wheel's libcudadevrt.a is
    refused (CUDA_ERROR_NO_BINARY_FOR_GPU), a toolkit's of the driver's release links."""
    wheel = _library(tmp_path / "wheel")
    monkeypatch.setattr(cuda_devrt, "_from_wheel", lambda: wheel)
    driver = LinkingDriver({"cuLinkAddFile": _Code.CUDA_ERROR_NO_BINARY_FOR_GPU})
    assert _link(driver) == b"linked cubin"
    added = [args[1] for name, args in driver.calls if name == "cuLinkAddFile"]
    assert added == [str(wheel).encode(), str(library).encode()]
    assert driver.names().count("cuLinkDestroy") == 2
    driver = LinkingDriver({"cuLinkAddFile": _Code.CUDA_ERROR_NO_BINARY_FOR_GPU})
    monkeypatch.delenv("CUDA_HOME")
    with pytest.raises(CompileError, match="nvidia-cuda-runtime wheel of the driver's release"):
        _link(driver)


def test_ptx_the_driver_cannot_jit_is_assembled_as_relocatable_code(library):
    if cuda.wheel_ptxas() is None:
        pytest.skip("no ptxas: pip install nvidia-cuda-nvcc")
    driver = LinkingDriver({"cuLinkAddData": _Code.CUDA_ERROR_UNSUPPORTED_PTX_VERSION})
    assert _link(driver) == b"linked cubin"
    adds = [args for name, args in driver.calls if name == "cuLinkAddData"]
    assert [kind for kind, *_ in adds] == [1, 0]      # the PTX, then ptxas -c's object
    assert adds[1][1][:4] == b"\x7fELF"


def test_only_modules_calling_the_device_runtime_are_linked(library, monkeypatch):
    driver = LinkingDriver()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    monkeypatch.setattr(cuda, "cached_cubin", lambda ptx, arch: None)
    assert cuda._load(cuda._Image(PLAIN_PTX, "sm_90", "ptxport", "plain"), 0) == "module"
    assert driver.names() == ["cuModuleLoadData"]
    driver.calls.clear()
    assert cuda._load(cuda._Image(CDP_PTX, "sm_90", "ptxport", "cdp"), 0) == "module"
    assert driver.names()[0] == "cuLinkCreate"
    assert driver.calls[-1] == ("cuModuleLoadData", (b"linked cubin",))


# --- on an NVIDIA GPU (skipped elsewhere) -------------------------------------------------------

GPU_SOURCE = """
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
  child<<<(per_block + 63) / 64, 64>>>(x + blockIdx.x * per_block, per_block);
  if (blockIdx.x == 0)
    total<<<1, 1, 0, cudaStreamTailLaunch>>>(x, per_block * gridDim.x, sum);
}
"""


def test_a_parent_kernel_launches_child_grids_on_the_gpu():
    """What build/dev/cdpcuda_call.sh ran on an H100 (driver 580): ptxport's PTX, linked
    with libcudadevrt.a, launching a child grid per block and a tail launch."""
    from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
    from ptxport.frontends import nvrtc
    from ptxport.runtime import backends

    available, why = backends.availability("cuda")
    if not available:
        pytest.skip(f"no NVIDIA GPU: {why}")
    if not nvrtc.available()[0]:
        pytest.skip("NVRTC compiles the CUDA C++ of this test's kernels")
    device = Device("cuda:0")
    device.set_current()
    stream = device.create_stream()
    code = Program(GPU_SOURCE, "c++", ProgramOptions(extensible_whole_program=True)).compile()
    blocks, per_block = 8, 1000
    x = (np.arange(blocks * per_block) % 101 - 50).astype(np.int32)
    data, total = device.allocate(x.nbytes, stream=stream), device.allocate(8, stream=stream)
    data.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=blocks, block=32), code.get_kernel("parent"), data,
           np.int32(per_block), total)
    got, got_total = np.empty_like(x), np.zeros(1, np.int64)
    data.copy_to(got, stream=stream)
    total.copy_to(got_total, stream=stream)
    stream.sync()
    assert (got == x * 2 + 1).all()
    assert got_total[0] == int((x * 2 + 1).sum())
