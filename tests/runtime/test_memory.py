"""Buffers: allocation, copies between buffers and host arrays, fill, numpy views, DLPack."""

import numpy as np
import pytest

from ptxport import Buffer, Device
from ptxport.errors import InvalidValueError


@pytest.fixture
def dev():
    return Device("cpu")


@pytest.fixture
def stream(dev):
    return dev.create_stream()


@pytest.mark.parametrize("size", [0, 1, 7, 256, 1000, 1 << 20])
def test_allocations_are_aligned_like_cudamalloc(dev, size):
    buf = dev.allocate(size)
    assert isinstance(buf, Buffer) and buf.size == size
    assert buf.handle % 256 == 0 and buf.device is dev
    assert buf.is_host_accessible and buf.is_device_accessible


def test_allocate_rejects_bad_sizes(dev):
    with pytest.raises(InvalidValueError, match="negative"):
        dev.allocate(-1)
    with pytest.raises(InvalidValueError, match="not float"):
        dev.allocate(4.0)


def test_host_round_trip(dev, stream):
    src = np.arange(1000, dtype=np.float32)
    buf = dev.allocate(src.nbytes, stream=stream)
    buf.copy_from(src, stream=stream)
    out = np.zeros_like(src)
    assert buf.copy_to(out, stream=stream) is out
    stream.sync()
    np.testing.assert_array_equal(out, src)


def test_copies_between_buffers(dev, stream):
    src = np.arange(64, dtype=np.int32)
    a = dev.allocate(src.nbytes, stream=stream)
    b = dev.allocate(src.nbytes, stream=stream)
    a.copy_from(src, stream=stream)
    b.copy_from(a, stream=stream)
    c = b.copy_to(stream=stream)               # a new buffer on the same device
    d = dev.allocate(src.nbytes, stream=stream)
    c.copy_to(d, stream=stream)
    stream.sync()
    assert isinstance(c, Buffer) and c.size == src.nbytes and c.handle != b.handle
    np.testing.assert_array_equal(d.view(np.int32), src)


def test_copy_size_and_kind_errors(dev, stream):
    buf = dev.allocate(16, stream=stream)
    with pytest.raises(InvalidValueError, match="host array has 12 bytes but the buffer has 16"):
        buf.copy_from(np.zeros(3, np.float32), stream=stream)
    with pytest.raises(InvalidValueError, match="buffer has 16 bytes but the host array has 32"):
        buf.copy_to(np.zeros(4, np.float64), stream=stream)
    with pytest.raises(InvalidValueError, match="source buffer has 8 bytes"):
        buf.copy_from(dev.allocate(8), stream=stream)
    with pytest.raises(InvalidValueError, match="C-contiguous"):
        buf.copy_from(np.zeros((4, 2), np.float32)[:, 0].copy().reshape(2, 2).T, stream=stream)
    readonly = np.zeros(4, np.float32)
    readonly.flags.writeable = False
    with pytest.raises(InvalidValueError, match="read-only"):
        buf.copy_to(readonly, stream=stream)
    with pytest.raises(InvalidValueError, match="not list"):
        buf.copy_from([1, 2, 3, 4], stream=stream)
    with pytest.raises(InvalidValueError, match="stream= takes a Stream"):
        buf.copy_from(np.zeros(4, np.float32), stream=None)


@pytest.mark.parametrize(("value", "width", "dtype"), [
    (0xAB, 1, np.uint8), (0xBEEF, 2, np.uint16), (0x3F800000, 4, np.uint32)])
def test_fill(dev, stream, value, width, dtype):
    buf = dev.allocate(64, stream=stream)
    buf.fill(value, width, stream=stream)
    stream.sync()
    assert (buf.view(dtype) == value).all()


def test_fill_errors(dev, stream):
    buf = dev.allocate(6, stream=stream)
    with pytest.raises(InvalidValueError, match="1, 2 or 4"):
        buf.fill(0, 8, stream=stream)
    with pytest.raises(InvalidValueError, match="does not fit in 1 byte"):
        buf.fill(256, 1, stream=stream)
    with pytest.raises(InvalidValueError, match="not a multiple of 4"):
        buf.fill(0, 4, stream=stream)
    with pytest.raises(InvalidValueError, match="must be an int"):
        buf.fill(1.0, 2, stream=stream)


def test_numpy_views_share_the_memory(dev, stream):
    buf = dev.allocate(16, stream=stream)
    buf.view(np.float32)[:] = [1, 2, 3, 4]
    as_bytes = np.asarray(buf)
    assert as_bytes.dtype == np.uint8 and as_bytes.shape == (16,)
    assert as_bytes.ctypes.data == buf.handle
    out = np.empty(4, np.float32)
    buf.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    with pytest.raises(InvalidValueError, match="not a multiple of 8"):
        dev.allocate(12).view(np.float64)


def test_dlpack_round_trip(dev, stream):
    values = np.linspace(0, 1, 32, dtype=np.float32)
    buf = dev.allocate(values.nbytes, stream=stream)
    buf.copy_from(values, stream=stream)
    stream.sync()
    assert buf.__dlpack_device__() == (1, 0)      # kDLCPU, device 0
    exported = np.from_dlpack(buf)
    assert exported.dtype == np.uint8 and exported.ctypes.data == buf.handle
    np.testing.assert_array_equal(exported.view(np.float32), values)
    exported.view(np.float32)[0] = 42                # writes through to the buffer
    out = np.empty_like(values)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert out[0] == 42


def test_exported_memory_outlives_its_buffer(dev, stream):
    buf = dev.allocate(8, stream=stream)
    buf.view(np.int64)[0] = 1234
    exported = np.from_dlpack(buf)
    buf.close()
    del buf
    stream.sync()
    assert exported.view(np.int64)[0] == 1234


def test_closed_buffers(dev, stream):
    buf = dev.allocate(8, stream=stream)
    buf.close()
    buf.close()                                    # twice is fine
    assert buf.is_closed and buf.handle == 0 and not buf.is_host_accessible
    with pytest.raises(InvalidValueError, match="closed"):
        buf.copy_from(np.zeros(2, np.float32), stream=stream)
    with pytest.raises(InvalidValueError, match="closed"):
        np.asarray(buf)
    stream.sync()


def test_dropping_a_buffer_with_work_pending_is_safe(dev, stream):
    src = np.arange(1 << 18, dtype=np.float64)
    out = np.zeros_like(src)
    buf = dev.allocate(src.nbytes, stream=stream)
    buf.copy_from(src, stream=stream)
    buf.copy_to(out, stream=stream)
    del buf                                        # freed in the stream's order, after the copies
    stream.sync()
    np.testing.assert_array_equal(out, src)


def test_close_frees_at_once_on_an_idle_stream_and_in_order_on_a_busy_one(dev, stream):
    # (an idle stream has nothing before the free: it happens on the closing thread, with
    # no hand-over to the stream's thread; with work queued it waits for that work)
    live = dev._backend._live
    buf = dev.allocate(64, stream=stream)
    stream.sync()
    address = buf.handle
    buf.close()
    assert address not in live
    src = np.arange(1 << 20, dtype=np.float64)
    out = np.zeros_like(src)
    buf = dev.allocate(src.nbytes, stream=stream)
    address = buf.handle
    buf.copy_from(src, stream=stream)
    buf.copy_to(out, stream=stream)
    buf.close()
    stream.sync()
    assert address not in live
    np.testing.assert_array_equal(out, src)
