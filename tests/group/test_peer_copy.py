"""Copies between buffers of two devices (Buffer.copy_to / copy_from with a Buffer of another
device): direct where one side is host memory, staged through the host otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device
from ptxport.errors import InvalidValueError
from ptxport.runtime.backends import availability

_OPENCL, _WHY = availability("opencl")
needs_opencl = pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device: {_WHY}")
DATA = np.random.default_rng(11).integers(0, 256, 5000).astype(np.uint8)


def _filled(device, data):
    stream = device.create_stream()
    buffer = device.allocate(data.size, stream=stream)
    buffer.copy_from(data, stream=stream)
    stream.sync()
    return buffer


def _contents(buffer):
    stream = buffer.device.create_stream()
    host = np.empty(buffer.size, np.uint8)
    buffer.copy_to(host, stream=stream)
    stream.sync()
    return host


@needs_opencl
def test_cpu_and_opencl_copy_both_ways_on_either_stream():
    cpu, ocl = Device("cpu"), Device("opencl:0")
    source = _filled(cpu, DATA)
    there = ocl.allocate(DATA.size)
    source.copy_to(there, stream=cpu.create_stream())        # a stream of the source
    ocl.sync()
    cpu.sync()
    assert (_contents(there) == DATA).all()
    back = cpu.allocate(DATA.size)
    back.copy_from(there, stream=ocl.default_stream)          # a stream of the source
    ocl.sync()
    assert (_contents(back) == DATA).all()


def test_staged_copy_when_neither_side_is_host_memory(monkeypatch):
    cpu = Device("cpu")
    source, target = _filled(cpu, DATA), _filled(cpu, np.zeros_like(DATA))

    class Elsewhere:       # a device whose memory the host cannot address
        _backend = cpu._backend

        def __str__(self):
            return "elsewhere:0"

    monkeypatch.setattr(cpu._backend, "host_view", lambda allocation: None)
    from ptxport.runtime.memory import _submit_peer_copy

    stream = cpu.create_stream()
    _submit_peer_copy(stream, Elsewhere(), source._live(), cpu, target._live())
    stream.sync()
    monkeypatch.undo()
    assert (_contents(target) == DATA).all()


@needs_opencl
def test_peer_copy_checks_sizes_and_streams():
    cpu, ocl = Device("cpu"), Device("opencl:0")
    source = _filled(cpu, DATA)
    with pytest.raises(InvalidValueError, match="5000 bytes"):
        source.copy_to(ocl.allocate(10), stream=cpu.default_stream)
    other = Device("cpu").allocate(DATA.size)
    with pytest.raises(InvalidValueError, match="needs a stream of"):
        other.copy_from(source, stream=ocl.default_stream)
