"""Devices and the system: names, properties, the current device, backends not present."""

import os
import threading

import pytest

import ptxport
from ptxport import Device, system
from ptxport.errors import BackendUnavailableError, InvalidValueError
from ptxport.runtime import backends


def test_cpu_device_is_one_object_under_every_name():
    cpu = Device("cpu")
    assert Device("cpu:0") is cpu
    assert Device("CPU") is cpu
    # Device() and Device(0) are the best device present: the CPU here (OpenCL on the host's
    # own CPU, which conftest.py registers, ranks after it)
    assert Device() is system.devices[0] is cpu
    assert Device(0) is system.devices[0]
    assert str(cpu) == "cpu:0" and cpu.backend == "cpu" and cpu.device_id == 0


def test_cpu_properties_are_cudas_limits_on_the_host():
    cpu = Device("cpu")
    p = cpu.properties
    assert cpu.name and cpu.name == p.name
    with open("/proc/cpuinfo") as f:
        models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    if models:
        assert cpu.name == models[0]
    assert p.multiprocessor_count == len(os.sched_getaffinity(0))
    assert p.warp_size == 32
    assert p.max_threads_per_block == 1024
    assert p.max_block_dims == (1024, 1024, 64)
    assert p.max_grid_dims == (2**31 - 1, 65535, 65535)
    assert p.max_shared_memory_per_block == 48 * 1024
    assert p.max_shared_memory_per_block_optin == 227 * 1024
    assert cpu.compute_capability == (9, 0) and cpu.arch == "90"


@pytest.mark.parametrize("name", ["hip:0", "hip"])
def test_absent_backends_say_why(name):
    ok, why = backends.availability("hip")
    if ok:
        pytest.skip("HIP and an AMD GPU are present")
    with pytest.raises(BackendUnavailableError, match="the hip backend cannot run here"):
        Device(name)


def test_bad_device_names():
    with pytest.raises(BackendUnavailableError, match="no backend named 'tpu'"):
        Device("tpu")
    with pytest.raises(InvalidValueError, match="no device cpu:1.*cpu:0 to cpu:0"):
        Device("cpu:1")
    with pytest.raises(InvalidValueError, match="bad device name"):
        Device("cpu:first")
    with pytest.raises(InvalidValueError, match="not float"):
        Device(1.5)


def test_current_device_is_per_thread():
    seen = []

    def other_thread():
        seen.append(Device())

    Device("cpu").set_current()
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [system.devices[0]] and Device() is Device("cpu")


def test_system_lists_devices_and_why_backends_are_missing():
    # Intel's OpenCL CPU runtime (intel-opencl-rt, which the opencl backend finds itself) may
    # add opencl:0
    assert Device("cpu") in system.devices
    assert system.num_devices == len(system.devices)
    reasons = system.backends
    assert reasons["cpu"] == ""
    assert set(reasons) == {"cuda", "hip", "opencl", "cpu"}
    assert reasons["hip"], "without ROCm and an AMD GPU the hip backend says why"
    assert reasons["cuda"], "without an NVIDIA driver and GPU the cuda backend says why"
    assert ptxport.system is system


def test_public_names_are_flat():
    for name in ("Device", "Program", "ProgramOptions", "ObjectCode", "Kernel", "LaunchConfig",
                 "launch", "Stream", "Event", "EventOptions", "Buffer", "system", "errors"):
        assert name in ptxport.__all__ and hasattr(ptxport, name)
