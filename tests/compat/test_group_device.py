"""A device group as the one CUDA device of `ptxport run --device group:cpu,cpu`
(runtime/group_device.py): the driver's memory and launch handlers on a GroupDevice, whose
launches the group splits and merges; and a whole program under `ptxport run`."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import programs_harness as harness
import pytest

from ptxport import Program
from ptxport.compat import driver, execution, memory
from ptxport.compat.dispatch import code_of
from ptxport.compat.state import state
from ptxport.errors import ArgumentError, UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.runtime.backends import availability
from ptxport.runtime.group_device import group_device

pytestmark = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC builds the kernel")

REPOSITORY = Path(__file__).resolve().parents[2]
SOURCE = r"""
extern "C" __global__ void scale(float *out, const float *in, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * in[i] + (out ? 1.0f : 0.0f);
}
"""


@pytest.fixture
def group(monkeypatch):
    device = group_device("group:cpu,cpu")
    monkeypatch.setattr(state, "_devices", [device])
    monkeypatch.setattr(driver, "_primary", {})
    saved = state.current.__dict__.copy()
    driver.cuCtxSetCurrent(driver.context_handle(0))
    yield device
    state.current.__dict__.clear()
    state.current.__dict__.update(saved)


def _function() -> int:
    ptx = ctypes.create_string_buffer(Program(SOURCE, "c++").compile().ptx.encode())
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    execution.cuModuleLoadData(ctypes.addressof(module), ctypes.addressof(ptx))
    execution.cuModuleGetFunction(ctypes.addressof(function), module.value, b"scale")
    return function.value


def _alloc(nbytes: int) -> int:
    pointer = ctypes.c_uint64()
    memory.cuMemAlloc_v2(ctypes.addressof(pointer), nbytes)
    return pointer.value


def _launch(function: int, grid: int, *args) -> None:
    holders = [ctypes.c_uint64(a) if isinstance(a, int) else a for a in args]
    pointers = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
    execution.cuLaunchKernel(function, grid, 1, 1, 128, 1, 1, 0, 0,
                             ctypes.addressof(pointers), 0)


def test_launches_split_over_the_group_at_offsets_into_allocations(group):
    n = 3000
    data = np.arange(2 * n, dtype=np.float32)
    src, dst = _alloc(data.nbytes), _alloc(data.nbytes)
    try:
        memory.cuMemcpyHtoD_v2(src, data.ctypes.data, data.nbytes)
        memory.cuMemsetD32_v2(dst, 0, 2 * n)
        function = _function()
        # the second half of dst from the second half of src: pointers inside allocations
        _launch(function, (n + 127) // 128, dst + 4 * n, src + 4 * n, ctypes.c_float(2),
                ctypes.c_int32(n))
        driver.cuCtxSynchronize()
        plan = group.group.last_plan
        assert plan.split and len(plan.boxes) == 2, plan.reason
        assert next(iter(plan.merges.values())).mode == "ranges"
        got = np.empty_like(data)
        memory.cuMemcpyDtoH_v2(got.ctypes.data, dst, got.nbytes)
        np.testing.assert_array_equal(got[:n], 0)
        np.testing.assert_array_equal(got[n:], 2 * data[n:] + 1)
        # a host write after the launch reaches the members at the next one
        ones = np.ones(n, np.float32)
        memory.cuMemcpyHtoD_v2(src + 4 * n, ones.ctypes.data, ones.nbytes)
        _launch(function, (n + 127) // 128, dst + 4 * n, src + 4 * n, ctypes.c_float(3),
                ctypes.c_int32(n))
        memory.cuMemcpyDtoH_v2(got.ctypes.data, dst, got.nbytes)
        np.testing.assert_array_equal(got[n:], 4)
    finally:
        memory.cuMemFree_v2(src)
        memory.cuMemFree_v2(dst)


def test_an_address_outside_the_group_is_refused_by_name(group):
    host = ctypes.c_void_p()
    memory.cuMemHostAlloc(ctypes.addressof(host), 4096, 0)
    out = _alloc(4096)
    try:
        with pytest.raises(ArgumentError, match=r"argument 1 .*is not memory of group:cpu:0,cpu:0"):
            _launch(_function(), 8, out, host.value, ctypes.c_float(1), ctypes.c_int32(1024))
        with pytest.raises(UnsupportedFeatureError, match="module variable"):
            group._backend.module_global(0, None, "counter")
        assert code_of(UnsupportedFeatureError("x", "y")) == 801
    finally:
        memory.cuMemFree_v2(out)
        memory.cuMemFreeHost(host.value)


def test_managed_memory_is_current_on_the_host_after_a_launch(group):
    n = 1000
    managed = ctypes.c_uint64()
    memory.cuMemAllocManaged(ctypes.addressof(managed), 8 * n, 1)
    try:
        host = np.ctypeslib.as_array((ctypes.c_float * (2 * n)).from_address(managed.value))
        host[n:] = np.arange(n)           # written in place by the host, as CUDA allows
        function = _function()
        for a in (2.0, 5.0):
            _launch(function, (n + 127) // 128, managed.value, managed.value + 4 * n,
                    ctypes.c_float(a), ctypes.c_int32(n))
            driver.cuCtxSynchronize()
            assert group.group.last_plan.split
            np.testing.assert_array_equal(host[:n], a * np.arange(n) + 1)
    finally:
        memory.cuMemFree_v2(managed.value)


@pytest.mark.parametrize(("name", "devices"), [("multi_device", "group:cpu,opencl:0"),
                                               ("memcpy_3d", "group:cpu,cpu")])
def test_a_program_on_a_group_device(name, devices):
    if "opencl" in devices:
        available, why = availability("opencl")
        if not available:
            pytest.skip(f"no opencl here: {why}")
    try:
        binary = harness.build(name)
    except harness.ToolkitMissingError as e:
        pytest.skip(f"cannot build the corpus here: {e}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPOSITORY), *filter(None, [os.environ.get("PYTHONPATH")])])}
    result = subprocess.run([sys.executable, "-m", "ptxport.cli", "run", "--device", devices,
                             "--", str(binary)], capture_output=True, text=True, timeout=300,
                            env=env)
    expected = (harness.PROGRAM_DIR / "expected" / f"{name}.txt").read_text()
    assert (result.returncode, result.stdout) == (0, expected), result.stderr[-3000:]
