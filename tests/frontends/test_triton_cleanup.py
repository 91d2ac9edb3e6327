"""The Triton driver's registration of a host tensor's storage with the cpu device ends when
the tensor goes (ptxport/frontends/triton.py, _tensor_memory): its finalizer, run by the
garbage collector in whatever thread allocates, never waits for a lock that thread may hold."""

import numpy as np
import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install 'ptxport[triton]')")

from lock_holders import returns_holding

import ptxport.frontends.triton as pt
from ptxport import Device


class _Storage:
    def __init__(self, nbytes: int):
        self.array = np.zeros(nbytes, np.uint8)

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def nbytes(self) -> int:
        return self.array.nbytes


class _Tensor:
    """What _tensor_memory reads of a torch tensor (untyped_storage()), without torch."""

    def __init__(self, nbytes: int):
        self._storage = _Storage(nbytes)

    def untyped_storage(self) -> _Storage:
        return self._storage


def _host_memory(dev: Device) -> set[int]:
    """The addresses of the host memory registered with the cpu device now."""
    return {address for address, _ in dev._backend._registered.values()}


def _registered(dev: Device) -> tuple[list[_Tensor], int, int]:
    """([a tensor], its key, the address of its registration), the registration kept."""
    tensors = [_Tensor(256)]
    buffer, kept = pt._tensor_memory(tensors[0], dev)
    assert kept and buffer.handle == tensors[0].untyped_storage().data_ptr()
    assert buffer.handle in _host_memory(dev)
    return tensors, id(tensors[0]), buffer.handle


def test_a_tensor_dropped_ends_its_registration():
    dev = Device("cpu")
    tensors, key, address = _registered(dev)
    tensors.clear()
    assert key not in pt._TENSORS
    dev.default_stream.sync()
    assert address not in _host_memory(dev)


def test_a_tensor_dropped_inside_its_streams_lock_ends_its_registration_later():
    """The registration's free waits neither for the stream's lock (held by the thread that
    drops the tensor): it is queued at the next submit or sync."""
    dev = Device("cpu")
    tensors, key, address = _registered(dev)
    assert returns_holding(dev.default_stream._worker._lock, tensors.clear)
    assert key not in pt._TENSORS     # (at once: a new tensor may get the same id)
    dev.default_stream.sync()
    assert address not in _host_memory(dev)
