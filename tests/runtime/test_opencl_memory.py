"""The opencl backend's memory on both of its address schemes: "svm" (device addresses are
SVM pointers; Intel's OpenCL CPU runtime in CI) and "translated" (cl.Buffers with addresses
of ptxport's own, forced here with the backend's private switch): copies, fills, stream order,
and which addresses a kernel may find where.

Without pyopencl or a device that accepts SPIR-V, every test skips and says why.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import LaunchError, UnsupportedFeatureError
from ptxport.runtime.backends import availability, get

_AVAILABLE, _WHY = availability("opencl")
pytestmark = pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")

# walk(float** head_slot, float* out): out[0] = the sum of the values of a linked list of
# {float value; int pad; Node* next} whose head's address the kernel loads from head_slot.
WALK_PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry walk(
	.param .u64 walk_param_0,
	.param .u64 walk_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<4>;
	ld.param.u64 	%rd1, [walk_param_0];
	ld.param.u64 	%rd2, [walk_param_1];
	ld.global.u64 	%rd3, [%rd1];
	mov.f32 	%f1, 0f00000000;
	setp.eq.s64 	%p1, %rd3, 0;
	@%p1 bra 	$L__done;
$L__next:
	ld.global.f32 	%f2, [%rd3];
	add.f32 	%f1, %f1, %f2;
	ld.global.u64 	%rd3, [%rd3+8];
	setp.ne.s64 	%p1, %rd3, 0;
	@%p1 bra 	$L__next;
$L__done:
	st.global.f32 	[%rd2], %f1;
	ret;
}

// first(Holder h, float* out): out[0] = h.data[0], for struct Holder { float* data; long
// unused; } (16 bytes: an 8-byte structure would be one 8-byte parameter slot).
.visible .entry first(
	.param .align 8 .b8 first_param_0[16],
	.param .u64 first_param_1
)
{
	.reg .f32 	%f<2>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [first_param_0];
	ld.param.u64 	%rd2, [first_param_1];
	ld.global.f32 	%f1, [%rd1];
	st.global.f32 	[%rd2], %f1;
	ret;
}
"""
NODE = np.dtype({"names": ["value", "pad", "next"], "formats": ["<f4", "<i4", "<u8"],
                 "offsets": [0, 4, 8], "itemsize": 16})


@pytest.fixture
def backend():
    return get("opencl")


@pytest.fixture(params=["svm", "translated"])
def scheme(request, backend, monkeypatch) -> str:
    """Run the test on each scheme: "svm" where opencl:0 has it, "translated" always."""
    if request.param == "translated":
        monkeypatch.setattr(backend, "_svm_allowed", False)
    elif backend.address_scheme(0) != "svm":
        pytest.skip("opencl:0 has no coarse-grained buffer SVM")
    assert backend.address_scheme(0) == request.param
    return request.param


@pytest.fixture
def svm(backend) -> None:
    """Skip unless opencl:0 uses shared virtual memory (where addresses found in device
    memory are valid; on the translated scheme they are not, and nothing can tell)."""
    if backend.address_scheme(0) != "svm":
        pytest.skip("opencl:0 has no coarse-grained buffer SVM")


@pytest.fixture
def dev():
    return Device("opencl:0")


@pytest.fixture
def stream(dev):
    return dev.create_stream()


@pytest.fixture
def saxpy(saxpy_ptx):
    return Program(saxpy_ptx, code_type="ptx").compile("native").get_kernel("saxpy")


@pytest.fixture(scope="module")
def kernels():
    return Program(WALK_PTX, code_type="ptx").compile("native")


def test_a_device_with_coarse_grained_svm_uses_it(backend):
    import pyopencl as cl

    device = backend._devices[0]
    has_svm = bool(device.svm_capabilities & cl.device_svm_capabilities.COARSE_GRAIN_BUFFER)
    assert backend.address_scheme(0) == ("svm" if has_svm else "translated")
    assert backend.properties(0).unified_addressing == has_svm


@pytest.mark.parametrize("size", [0, 1, 7, 256, 1000, 1 << 20])
def test_allocations_are_aligned_like_cudamalloc(scheme, dev, size):
    buffers = [dev.allocate(size) for _ in range(3)]
    assert all(buf.handle % 256 == 0 and buf.size == size for buf in buffers)
    assert len({buf.handle for buf in buffers}) == 3
    for buf in buffers:
        buf.close()


def test_host_and_buffer_copies(scheme, dev, stream):
    src = np.arange(1000, dtype=np.float32)
    a = dev.allocate(src.nbytes, stream=stream)
    b = dev.allocate(src.nbytes, stream=stream)
    a.copy_from(src, stream=stream)
    b.copy_from(a, stream=stream)
    c = b.copy_to(stream=stream)
    back = np.zeros_like(src)
    c.copy_to(back, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(back, src)


@pytest.mark.parametrize("width, value, dtype", [(1, 0xA5, np.uint8), (2, 0xBEEF, np.uint16),
                                                 (4, 0xDEADBEEF, np.uint32)])
def test_fill(scheme, dev, stream, width, value, dtype):
    buf = dev.allocate(96, stream=stream)
    buf.fill(value, width, stream=stream)
    out = np.zeros(96 // width, dtype=dtype)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert (out == value).all()


def test_copies_and_fills_inside_allocations(scheme, backend, dev, stream):
    """The hooks at addresses inside allocations (the runtime's copies are whole buffers)."""
    a, b = dev.allocate(64, stream=stream), dev.allocate(64, stream=stream)
    a.fill(0, 1, stream=stream)
    b.fill(0x11, 1, stream=stream)
    stream.sync()
    data = np.arange(16, dtype=np.uint8) + 100
    backend.copy(a.handle + 16, data.ctypes.data, 16, "htod")
    backend.fill(a.handle + 40, 8, 0x7F, 4)
    backend.copy(b.handle + 8, a.handle + 16, 40, "dtod")
    got = np.zeros(64, dtype=np.uint8)
    backend.copy(got.ctypes.data, b.handle, 64, "dtoh")
    want = np.full(64, 0x11, dtype=np.uint8)
    want[8:24], want[24:32], want[32:40], want[40:48] = data, 0, [0x7F, 0, 0, 0] * 2, 0
    np.testing.assert_array_equal(got, want)
    with pytest.raises(LaunchError, match="not inside one opencl allocation"):
        backend.copy(got.ctypes.data, a.handle + 32, 64, "dtoh")


def test_one_stream_runs_copies_fills_and_kernels_in_order(scheme, dev, stream, saxpy):
    n = 4096
    x, y = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
    dx, dy = dev.allocate(x.nbytes, stream=stream), dev.allocate(y.nbytes, stream=stream)
    snapshots = [np.zeros(n, dtype=np.float32) for _ in range(3)]
    config = LaunchConfig(grid=n // 256, block=256)
    dx.copy_from(x, stream=stream)
    dy.copy_from(y, stream=stream)
    launch(stream, config, saxpy, np.float32(2), dx, dy, np.int32(n))
    dy.copy_to(snapshots[0], stream=stream)
    dy.fill(int(np.float32(3).view(np.uint32)), 4, stream=stream)
    dy.copy_to(snapshots[1], stream=stream)
    launch(stream, config, saxpy, np.float32(-1), dx, dy, np.int32(n))
    dy.copy_to(snapshots[2], stream=stream)
    stream.sync()
    np.testing.assert_array_equal(snapshots[0], 2 * x + 1)
    np.testing.assert_array_equal(snapshots[1], np.full(n, 3, dtype=np.float32))
    np.testing.assert_array_equal(snapshots[2], 3 - x)


def test_a_stream_waiting_for_another_sees_its_writes(scheme, dev, saxpy):
    n = 1 << 16
    first, second = dev.create_stream(), dev.create_stream()
    x = np.arange(n, dtype=np.float32)
    dx, dy = dev.allocate(x.nbytes, stream=first), dev.allocate(x.nbytes, stream=first)
    dx.copy_from(x, stream=first)
    dy.fill(0, 4, stream=first)
    launch(first, LaunchConfig(grid=n // 256, block=256), saxpy, np.float32(5), dx, dy,
           np.int32(n))
    second.wait(first)
    out = np.zeros(n, dtype=np.float32)
    dy.copy_to(out, stream=second)
    second.sync()
    np.testing.assert_array_equal(out, 5 * x)


def _linked_list(dev, stream, values):
    """A list in one buffer, its next pointers computed on the host from the buffer's device
    address, and a second buffer holding the head's address."""
    nodes = dev.allocate(len(values) * NODE.itemsize, stream=stream)
    host = np.zeros(len(values), dtype=NODE)
    order = np.random.default_rng(3).permutation(len(values))   # links jump around
    host["value"][order] = values
    addresses = nodes.handle + order * NODE.itemsize
    host["next"][order[:-1]] = addresses[1:]
    nodes.copy_from(host.view(np.uint8), stream=stream)
    head = dev.allocate(8, stream=stream)
    head.copy_from(np.array([addresses[0]], dtype=np.uint64).view(np.uint8), stream=stream)
    return nodes, head


def test_svm_kernels_follow_addresses_stored_in_device_memory(svm, dev, stream, kernels):
    values = np.arange(1, 41, dtype=np.float32) / 4
    nodes, head = _linked_list(dev, stream, values)
    out = dev.allocate(4, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=1), kernels.get_kernel("walk"), head, out)
    got = np.zeros(1, dtype=np.float32)
    out.copy_to(got, stream=stream)
    stream.sync()
    assert got[0] == values.sum()


def test_svm_kernels_reach_allocations_freed_and_made_between_launches(svm, dev, stream,
                                                                        kernels):
    out = dev.allocate(4, stream=stream)
    for round_ in range(3):
        spare = [dev.allocate(4096, stream=stream) for _ in range(round_ + 1)]
        values = np.full(5 + round_, round_ + 0.5, dtype=np.float32)
        nodes, head = _linked_list(dev, stream, values)
        for buf in spare:
            buf.close(stream)
        launch(stream, LaunchConfig(grid=1, block=1), kernels.get_kernel("walk"), head, out)
        got = np.zeros(1, dtype=np.float32)
        out.copy_to(got, stream=stream)
        stream.sync()
        assert got[0] == values.sum()
        nodes.close(stream)
        head.close(stream)


def test_structure_arguments_holding_addresses(scheme, dev, stream, kernels):
    data = dev.allocate(16, stream=stream)
    data.copy_from(np.array([2.5, 0, 0, 0], dtype=np.float32), stream=stream)
    out = dev.allocate(4, stream=stream)
    out.fill(0, 4, stream=stream)
    holder = np.array([(data.handle, 7)], dtype=[("data", "<u8"), ("unused", "<i8")])[0]
    config, kernel = LaunchConfig(grid=1, block=1), kernels.get_kernel("first")
    launch(stream, config, kernel, holder, out)
    if scheme == "translated":
        with pytest.raises(UnsupportedFeatureError, match="inside a structure argument"):
            stream.sync()
        return
    got = np.zeros(1, dtype=np.float32)
    out.copy_to(got, stream=stream)
    stream.sync()
    assert got[0] == 2.5
