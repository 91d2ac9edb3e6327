"""Host memory made elsewhere as Buffers without a copy (Buffer.from_dlpack, from_handle):
kernels use it in place, the access checks know its range, the buffer keeps the producer
alive; typed exports (the wrapped array's dtype and shape, Buffer.view(dtype, shape))."""

import ctypes
import gc
import weakref

import numpy as np
import pytest

from ptxport import Buffer, Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError, InvalidValueError
from ptxport.runtime import backends


class Producer:
    """A DLPack producer that is not a numpy array (as a torch CPU tensor would be): numpy's
    own __dlpack__ over an array only this object holds."""

    def __init__(self, array: np.ndarray):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.fixture
def dev():
    return Device("cpu")


@pytest.fixture
def saxpy(saxpy_ptx):
    return Program(saxpy_ptx, code_type="ptx").compile("native").get_kernel("saxpy")


def _saxpy(stream, kernel, a, x: Buffer, y: Buffer, n: int) -> None:
    launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), kernel, np.float32(a), x,
           y, np.int32(n))


def test_kernels_read_and_write_wrapped_numpy_arrays_in_place(dev, saxpy):
    stream = dev.create_stream()
    x = np.arange(1000, dtype=np.float32)
    y = np.ones((10, 100), dtype=np.float32)
    bx, by = Buffer.from_dlpack(x), Buffer.from_dlpack(y)
    assert (bx.handle, by.handle, by.size) == (x.ctypes.data, y.ctypes.data, y.nbytes)
    _saxpy(stream, saxpy, 2, bx, by, 1000)
    stream.sync()
    np.testing.assert_array_equal(y.reshape(-1), 2 * x + 1)


def test_the_buffer_keeps_a_dropped_producer_alive(dev, saxpy):
    stream = dev.create_stream()
    array = np.zeros(256, dtype=np.float32)
    alive = weakref.ref(array)
    y = Buffer.from_dlpack(Producer(array))
    del array
    gc.collect()
    assert alive() is not None     # only the buffer holds it now
    x = Buffer.from_dlpack(np.full(256, 3, dtype=np.float32))
    _saxpy(stream, saxpy, 1, x, y, 256)
    stream.sync()
    np.testing.assert_array_equal(np.from_dlpack(y), np.full(256, 3, dtype=np.float32))
    y.close()
    stream.sync()
    dev.default_stream.sync()
    del y
    gc.collect()
    assert alive() is None


def test_wrapped_memory_has_bounds_like_an_allocation(dev, saxpy):
    stream = dev.create_stream()
    x, y = np.zeros(100, np.float32), np.zeros(100, np.float32)
    bx, by = Buffer.from_dlpack(x), Buffer.from_dlpack(y)
    _saxpy(stream, saxpy, 1, bx, by, 101)     # one element past both arrays
    with pytest.raises(IllegalAddressError, match="outside every allocation"):
        stream.sync()


# poke(p, offset): *(float*)(p + offset) = 1.0
POKE_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry poke(.param .u64 p, .param .u32 offset)
{
  .reg .b32 %r<2>; .reg .b64 %rd<4>; .reg .f32 %f<2>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [offset];
  cvt.u64.u32 %rd2, %r1;
  add.s64 %rd3, %rd1, %rd2;
  mov.f32 %f1, 0f3F800000;
  st.global.f32 [%rd3], %f1;
  ret;
}
"""


def test_a_wrapped_part_of_a_buffer_does_not_hide_the_rest(dev):
    poke = Program(POKE_PTX, code_type="ptx").compile("native").get_kernel("poke")
    stream = dev.create_stream()
    outer = dev.allocate(4096, stream=stream)
    outer.fill(0, 4, stream=stream)
    stream.sync()
    inner = Buffer.from_dlpack(outer.view(np.float32)[16:32])   # bytes 64..128 of outer
    launch(stream, LaunchConfig(grid=1, block=1), poke, outer, np.uint32(200))
    stream.sync()
    assert outer.view(np.float32)[50] == 1 and inner.view(np.float32).sum() == 0


def test_from_handle_wraps_an_address_and_keeps_its_owner(dev, saxpy):
    stream = dev.create_stream()
    owner = (ctypes.c_float * 64)()
    alive = weakref.ref(owner)
    y = Buffer.from_handle(ctypes.addressof(owner), ctypes.sizeof(owner), dev, owner=owner)
    del owner
    gc.collect()
    assert alive() is not None
    x = Buffer.from_dlpack(np.arange(64, dtype=np.float32))
    _saxpy(stream, saxpy, 1, x, y, 64)
    stream.sync()
    np.testing.assert_array_equal(y.view(np.float32), np.arange(64, dtype=np.float32))


def test_exports_of_a_wrapped_array_are_typed_like_it(dev):
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    buf = Buffer.from_dlpack(Producer(a))
    for exported in (np.from_dlpack(buf), np.asarray(buf)):
        assert exported.dtype == np.int16 and exported.shape == (3, 4)
        assert np.shares_memory(exported, a)
    assert buf.__array_interface__["typestr"] == "<i2"


def test_a_view_with_a_dtype_and_shape_is_a_typed_export(dev):
    buf = dev.allocate(48)
    typed = np.from_dlpack(buf.view(np.float32, (3, 4)))
    assert typed.dtype == np.float32 and typed.shape == (3, 4)
    assert typed.ctypes.data == buf.handle
    # without a dtype, exports stay bytes
    assert np.from_dlpack(buf).dtype == np.uint8 and np.asarray(buf).shape == (48,)
    assert buf.__array_interface__["typestr"] == "|u1"
    with pytest.raises(InvalidValueError, match="shape"):
        buf.view(np.float32, (5, 4))
    buf.close()
    assert not hasattr(buf, "__array_interface__")
    with pytest.raises(InvalidValueError, match="closed"):
        np.asarray(buf)


@pytest.mark.parametrize("obj, message", [
    (np.zeros((4, 4), np.float32)[:, ::2], "contiguous"),
    (np.zeros(4, np.float32).view(), "read-only"),
    ([1.0, 2.0], "DLPack producer"),
])
def test_memory_that_cannot_be_wrapped_is_refused(obj, message):
    if message == "read-only":
        obj.flags.writeable = False
    with pytest.raises(InvalidValueError, match=message):
        Buffer.from_dlpack(obj)


def test_devices_without_host_access_refuse_to_wrap_host_memory(monkeypatch):
    # (the cuda and hip backends inherit this refusal; opencl where it has no fine-grained
    # system SVM, which the translated address scheme stands for here)
    gpu_like = backends.get("cpu")
    with pytest.raises(InvalidValueError, match="cannot address host memory in place.*"
                                                "copy_from"):
        backends.BackendBase.register_host_memory(gpu_like, 0, np.zeros(4, np.uint8))
    ok, _ = backends.availability("opencl")
    if ok:
        monkeypatch.setattr(backends.get("opencl"), "_svm_allowed", False)
        with pytest.raises(InvalidValueError, match="cannot address host memory"):
            Buffer.from_dlpack(np.zeros(4, np.float32), device=Device("opencl"))


def test_opencl_kernels_use_host_memory_in_place_with_system_svm(saxpy):
    ok, why = backends.availability("opencl")
    if not ok:
        pytest.skip(f"no OpenCL device for SPIR-V: {why}")
    import pyopencl as cl

    backend = backends.get("opencl")
    capabilities = backend._devices[0].get_info(cl.device_info.SVM_CAPABILITIES)
    if not capabilities & cl.device_svm_capabilities.FINE_GRAIN_SYSTEM:
        pytest.skip("opencl:0 has no fine-grained system SVM")
    dev = Device("opencl:0")
    stream = dev.create_stream()
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, dtype=np.float32)
    bx, by = (Buffer.from_dlpack(a, device=dev) for a in (x, y))
    assert (bx.handle, by.size) == (x.ctypes.data, y.nbytes)
    _saxpy(stream, saxpy, 2, bx, by, 1000)
    stream.sync()
    np.testing.assert_array_equal(y, 2 * x + 1)
    with pytest.raises(IllegalAddressError):   # its bounds are known like an allocation's
        _saxpy(stream, saxpy, 2, bx, by, 1001)
        stream.sync()
    with pytest.raises(InvalidValueError, match="overlap"):
        Buffer.from_handle(y.ctypes.data + 4, 8, dev, owner=y)
    by.close(stream)
    stream.sync()
    Buffer.from_handle(y.ctypes.data + 4, 8, dev, owner=y).close()   # forgotten: free again
