"""Several CUDA devices under `ptxport run` (issue 20): `--device cpu,opencl:0` shows the
program two devices, cudaSetDevice / cuCtxCreate choose among them, allocations belong to
the device current when they were made, and peer copies go between them.

tests/programs/multi_device.cu (static and shared cudart) runs on `cpu,cpu` (one ptxport
device shown twice, whose ordinals may access each other's memory) and `cpu,opencl:0` (two
devices, copies through the host); the handler tests check the driver's answers directly.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import programs_harness as harness
import pytest

from ptxport.compat import driver, memory, streams
from ptxport.compat.cli import joined_devices
from ptxport.compat.state import CudaError, state
from ptxport.errors import InvalidValueError
from ptxport.runtime import Device
from ptxport.runtime.backends import availability

REPOSITORY = Path(__file__).resolve().parents[2]
MANIFEST = harness.load_manifest()


def _run(binary: Path, device: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPOSITORY), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "ptxport.cli", "run", "--device", device,
                           "--", str(binary)], capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.mark.parametrize("name", ["multi_device", "multi_device_shared_cudart"])
@pytest.mark.parametrize("devices", ["cpu,cpu", "cpu,opencl:0"])
def test_program_over_several_devices(devices: str, name: str):
    for device in devices.split(","):
        available, why = availability(device.partition(":")[0])
        if not available:
            pytest.skip(f"no {device} here: {why}")
    try:
        binary = harness.build(name)
    except harness.ToolkitMissingError as e:
        pytest.skip(f"cannot build the corpus here: {e}")
    result = _run(binary, devices)
    assert result.returncode == 0 and MANIFEST[name].matching_output(result.stdout), \
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-3000:]}"
    assert "2 device(s)" in result.stderr
    pairs = 2 if devices == "cpu,cpu" else 0
    assert f"{pairs} pair(s) with peer access" in result.stderr


def test_repeated_device_options_join_and_a_group_stands_alone():
    assert joined_devices(["cpu", "opencl:0"]) == "cpu,opencl:0"
    assert joined_devices(["cpu,cpu"]) == "cpu,cpu"
    assert joined_devices(None) is None
    with pytest.raises(InvalidValueError, match="only device"):
        joined_devices(["group:cpu,cpu", "cpu"])


@pytest.fixture
def two_cpus(monkeypatch):
    """The driver's state showing `cpu,cpu`; the thread's context is restored after."""
    monkeypatch.setattr(state, "_devices", [Device("cpu"), Device("cpu")])
    monkeypatch.setattr(driver, "_primary", {})
    saved = state.current.__dict__.copy()
    yield
    state.current.__dict__.clear()
    state.current.__dict__.update(saved)


def _int(call, *args) -> int:
    value = ctypes.c_int(-1)
    assert call(ctypes.addressof(value), *args) == 0
    return value.value


def test_contexts_name_their_device(two_cpus):
    assert _int(driver.cuDeviceGetCount) == 2
    assert _int(driver.cuDeviceGet, 1) == 1
    with pytest.raises(CudaError) as refused:
        driver.cuDeviceGet(ctypes.addressof(ctypes.c_int()), 2)
    assert refused.value.code == 101
    uuids = set()
    for ordinal in (0, 1):
        uuid = (ctypes.c_char * 16)()
        driver.cuDeviceGetUuid(ctypes.addressof(uuid), ordinal)
        uuids.add(bytes(uuid))
    assert len(uuids) == 2, "each ordinal has its own UUID"

    context = ctypes.c_void_p()
    assert driver.cuCtxCreate_v2(ctypes.addressof(context), 0, 1) == 0
    assert _int(driver.cuCtxGetDevice) == 1
    pointer = ctypes.c_uint64()
    memory.cuMemAlloc_v2(ctypes.addressof(pointer), 256)
    try:
        assert state.home_of(pointer.value + 8) == 1
        assert _int(lambda out: memory.cuPointerGetAttribute(out, 9, pointer.value)) == 1
        stream = ctypes.c_void_p()
        streams.cuStreamCreate(ctypes.addressof(stream), 0)
        assert driver.cuCtxSetCurrent(driver.context_handle(0)) == 0
        assert _int(driver.cuCtxGetDevice) == 0
        assert _int(lambda out: streams.cuStreamGetDevice(stream.value, out)) == 1, \
            "a stream keeps its device"
        streams.cuStreamDestroy_v2(stream.value)
    finally:
        memory.cuMemFree_v2(pointer.value)
        driver.cuCtxDestroy_v2(context.value)


def test_peer_access_between_ordinals_of_one_device(two_cpus):
    assert _int(memory.cuDeviceCanAccessPeer, 0, 1) == 1
    assert _int(memory.cuDeviceCanAccessPeer, 0, 0) == 0
    driver.cuCtxSetCurrent(driver.context_handle(0))
    peer = driver.context_handle(1)
    assert memory.cuCtxEnablePeerAccess(peer, 0) == 0
    for call, code in ((lambda: memory.cuCtxEnablePeerAccess(peer, 0), 704),
                       (lambda: memory.cuCtxEnablePeerAccess(peer, 1), 1),
                       (lambda: memory.cuCtxEnablePeerAccess(driver.context_handle(0), 0), 201)):
        with pytest.raises(CudaError) as refused:
            call()
        assert refused.value.code == code
    assert memory.cuCtxDisablePeerAccess(peer) == 0
    with pytest.raises(CudaError) as refused:
        memory.cuCtxDisablePeerAccess(peer)
    assert refused.value.code == 705
    assert _int(lambda out: memory.cuDeviceGetP2PAttribute(out, 2, 0, 1)) == 1


def test_peer_copy_between_cpu_and_opencl(monkeypatch, two_cpus):
    available, why = availability("opencl")
    if not available:
        pytest.skip(f"no opencl here: {why}")
    monkeypatch.setattr(state, "_devices", [Device("cpu"), Device("opencl:0")])
    assert _int(memory.cuDeviceCanAccessPeer, 0, 1) == 0
    data = (ctypes.c_int32 * 64)(*range(64))
    back = (ctypes.c_int32 * 64)()
    on = {}
    for ordinal in (1, 0):
        driver.cuCtxSetCurrent(driver.context_handle(ordinal))
        on[ordinal] = ctypes.c_uint64()
        memory.cuMemAlloc_v2(ctypes.addressof(on[ordinal]), ctypes.sizeof(data))
    try:
        memory.cuMemcpyHtoD_v2(on[0].value, ctypes.addressof(data), ctypes.sizeof(data))
        # current: device 0; the copy's destination is device 1's memory, then back
        memory.cuMemcpyPeer(on[1].value, driver.context_handle(1), on[0].value,
                            driver.context_handle(0), ctypes.sizeof(data))
        memory.cuMemsetD32_v2(on[0].value, 7, 64)
        memory.cuMemcpy(on[0].value + 16, on[1].value + 16, 32)
        memory.cuMemcpyDtoH_v2(ctypes.addressof(back), on[0].value, ctypes.sizeof(back))
        assert list(back) == [7] * 4 + list(range(4, 12)) + [7] * 52
        driver.cuCtxSetCurrent(driver.context_handle(1))
        with pytest.raises(CudaError) as refused:
            memory.cuCtxEnablePeerAccess(driver.context_handle(0), 0)
        assert refused.value.code == 217
    finally:
        for pointer in on.values():
            memory.cuMemFree_v2(pointer.value)
