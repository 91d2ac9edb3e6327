"""Module variables (`__device__`, `__constant__`) on the opencl backend: one copy per module
that every kernel of the module shares, at an address the host finds (ObjectCode.get_global,
what cuModuleGetGlobal and cudaMemcpyToSymbol use), with their initial values, including
addresses of other variables and of functions (spirv_globals.py).

Without pyopencl or a device that accepts SPIR-V, every test skips and says why.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.runtime.backends import availability, get

_AVAILABLE, _WHY = availability("opencl")
pytestmark = [
    pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}"),
    pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC is not installed"),
]

SOURCE = r"""
__device__ int counter = 5;
__constant__ float scale[4] = {1.5f, 2.0f, -1.0f, 0.25f};
__device__ int table[4] = {10, 20, 30, 40};
__device__ int *third = &table[2];              // the address of another variable
__device__ __noinline__ int add_one(int x) { return x + 1; }
__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ int (*operations[2])(int) = {add_one, twice};   // addresses of functions

extern "C" __global__ void bump(int by) { atomicAdd(&counter, by); }
extern "C" __global__ void read_back(int *out, float *scaled, int which) {
    out[0] = counter;
    out[1] = *third;
    out[2] = operations[which](counter);
    for (int i = 0; i < 4; ++i) scaled[i] = scale[i] * 2.0f;
}
"""


@pytest.fixture
def backend():
    return get("opencl")


def _host_read(dev: Device, address: int, nbytes: int) -> np.ndarray:
    out = np.zeros(nbytes, np.uint8)
    dev._backend.copy(out.ctypes.data, address, nbytes, "dtoh")
    return out


def _host_write(dev: Device, address: int, data: np.ndarray) -> None:
    data = np.ascontiguousarray(data).view(np.uint8)
    dev._backend.copy(address, data.ctypes.data, data.size, "htod")


def _read_back(dev: Device, code, which: int) -> tuple[np.ndarray, np.ndarray]:
    stream = dev.create_stream()
    out, scaled = dev.allocate(12, stream=stream), dev.allocate(16, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("read_back"), out, scaled,
           np.int32(which))
    got, floats = np.zeros(3, np.int32), np.zeros(4, np.float32)
    out.copy_to(got, stream=stream)
    scaled.copy_to(floats, stream=stream)
    stream.sync()
    return got, floats


def test_kernels_of_a_module_share_its_initialized_variables(backend):
    if backend.address_scheme(0) != "svm":
        pytest.skip("opencl:0 has no coarse-grained buffer SVM (needed for addresses in "
                    "initial values)")
    dev = Device("opencl:0")
    code = Program(SOURCE, "c++").compile()
    got, floats = _read_back(dev, code, 0)
    assert list(got) == [5, 30, 6]
    assert list(floats) == [3.0, 4.0, -2.0, 0.5]
    stream = dev.create_stream()
    launch(stream, LaunchConfig(grid=4, block=64), code.get_kernel("bump"), np.int32(2))
    stream.sync()
    got, _ = _read_back(dev, code, 1)
    assert list(got) == [5 + 512, 30, 2 * (5 + 512)]


def test_the_host_reads_and_writes_variables_where_kernels_see_them(backend):
    if backend.address_scheme(0) != "svm":
        pytest.skip("opencl:0 has no coarse-grained buffer SVM")
    dev = Device("opencl:0")
    code = Program(SOURCE, "c++").compile()
    address, size = code.get_global("counter", dev)
    assert size == 4 and _host_read(dev, address, 4).view(np.int32)[0] == 5
    _host_write(dev, address, np.array([100], np.int32))
    scale_address, scale_size = code.get_global("scale", dev)
    assert scale_size == 16
    _host_write(dev, scale_address, np.array([1, 2, 3, 4], np.float32))
    got, floats = _read_back(dev, code, 0)
    assert list(got) == [100, 30, 101] and list(floats) == [2.0, 4.0, 6.0, 8.0]
    third, _ = code.get_global("third", dev)
    table, _ = code.get_global("table", dev)
    assert _host_read(dev, third, 8).view(np.uint64)[0] == table + 8


def test_each_module_has_its_own_variables(backend):
    dev = Device("opencl:0")
    source = ('__device__ int v = 7;\nextern "C" __global__ void inc(int *out) '
              '{ v += 1; *out = v; }')
    first, second = Program(source, "c++").compile(), Program(source, "c++").compile()
    assert first.get_global("v", dev)[0] != second.get_global("v", dev)[0]
    stream = dev.create_stream()
    out, got = dev.allocate(4, stream=stream), np.zeros(1, np.int32)
    for code, want in ((first, 8), (first, 9), (second, 8)):
        launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("inc"), out)
        out.copy_to(got, stream=stream)
        stream.sync()
        assert got[0] == want


def test_translated_scheme_refuses_addresses_in_initial_values(backend, monkeypatch):
    monkeypatch.setattr(backend, "_svm_allowed", False)
    dev = Device("opencl:0")
    plain = Program('__device__ int v[2] = {3, 4};\nextern "C" __global__ void get(int *out) '
                    '{ out[0] = v[0] + v[1]; }', "c++").compile()
    stream = dev.create_stream()
    out, got = dev.allocate(4, stream=stream), np.zeros(1, np.int32)
    launch(stream, LaunchConfig(grid=1, block=1), plain.get_kernel("get"), out)
    out.copy_to(got, stream=stream)
    stream.sync()
    assert got[0] == 7
    code = Program(SOURCE, "c++").compile()
    with pytest.raises(UnsupportedFeatureError, match="initialized with addresses"):
        code.get_global("counter", dev)
