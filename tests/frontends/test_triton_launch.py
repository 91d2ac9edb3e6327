"""The Triton driver's launcher on the cpu device: its common launches (DeviceArrays and
numbers) packed in one struct call, and everything else through the general path, which
converts each argument or says what is wrong with it (ptxport/frontends/triton.py)."""

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install "
                                              "'ptxport[triton]')")

from triton_kernels import add_kernel, dropout_kernel  # noqa: E402

import ptxport.frontends.triton as pt  # noqa: E402
from ptxport import Device  # noqa: E402
from ptxport.errors import ArgumentError  # noqa: E402


@pytest.fixture
def cpu():
    dev = Device("cpu")
    pt.activate(dev)
    yield dev
    pt.deactivate()


@pytest.fixture
def general(monkeypatch):
    """The launches that took the general path (their grids)."""
    taken = []
    general_launch = pt.Launcher._launch

    def launch(self, *args):
        taken.append(args[:3])
        general_launch(self, *args)

    monkeypatch.setattr(pt.Launcher, "_launch", launch)
    return taken


def _dropout(dev, x, p, seed):
    out = pt.device_array(np.zeros_like(x), dev)
    compiled = dropout_kernel[(triton.cdiv(x.size, 256),)](pt.device_array(x, dev), out,
                                                           x.size, p, seed, BLOCK=256)
    return out.numpy().copy(), compiled.run


def test_a_common_launch_packs_what_the_general_path_does(cpu, general):
    """Pointers, an i32, an f32 and the trailing scratch pointers (with padding between):
    the same bytes either way, so the same results."""
    x = np.random.default_rng(1).random(3000, dtype=np.float32) + 1
    packed, launcher = _dropout(cpu, x, 0.3, 11)
    assert launcher.packing is not None and not general
    packing, launcher.packing = launcher.packing, None
    try:
        converted, _ = _dropout(cpu, x, 0.3, 11)
    finally:
        launcher.packing = packing
    assert len(general) == 1
    np.testing.assert_array_equal(packed, converted)
    assert (packed == 0).any() and (packed != 0).any()


def test_a_float_beyond_f32_takes_the_general_path_and_becomes_inf(cpu, general):
    """struct cannot pack 1e39 as an f32; numpy rounds it to inf, as Triton's launcher does:
    dropout with p = inf keeps nothing."""
    x = np.ones(512, np.float32)
    out, _ = _dropout(cpu, x, 1e39, 3)
    assert len(general) == 1
    np.testing.assert_array_equal(out, np.zeros_like(x))


def _launch(launcher, device, *args) -> None:
    """Call a Triton launcher as Triton's JIT does (a grid of one block, no hooks)."""
    launcher(1, 1, 1, device.default_stream, None, None, None, None, None, *args)


def test_an_int_beyond_i32_is_refused_by_the_general_path(cpu, general):
    x = pt.device_array(np.ones(16, np.float32), cpu)
    launcher = add_kernel[(1,)](x, x, x, 16, BLOCK=1024).run
    with pytest.raises(OverflowError):
        _launch(launcher, cpu, x, x, x, 1 << 40, 1024)
    assert general


def test_a_closed_buffer_takes_the_general_path_which_refuses_it(cpu, general):
    x = pt.device_array(np.ones(16, np.float32), cpu)
    out = pt.device_array(np.zeros(16, np.float32), cpu)
    launcher = add_kernel[(1,)](x, x, out, 16, BLOCK=1024).run
    np.testing.assert_array_equal(out.numpy(), 2 * np.ones(16, np.float32))
    out.buffer.close()
    with pytest.raises(ArgumentError, match="closed"):
        _launch(launcher, cpu, x, x, out, 16, 1024)
    assert general


class _Storage:
    def __init__(self, array):
        self._array = array

    def data_ptr(self):
        return self._array.ctypes.data

    def nbytes(self):
        return self._array.nbytes


class _HostTensor:
    """What Triton and the driver see of a torch CPU tensor (torch itself is not needed):
    data_ptr(), dtype and its storage."""

    def __init__(self, array):
        self._array, self.dtype = array, array.dtype

    def data_ptr(self):
        return self._array.ctypes.data

    def untyped_storage(self):
        return _Storage(self._array)


def test_a_tensor_stays_registered_while_it_lives(cpu, general):
    """Launch after launch with the same tensors, the device's allocations stay the same (so
    the workers keep their allocation tables); a tensor's registration ends with it."""
    import gc

    backend = cpu._backend
    n = 2000
    host = [np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32), np.zeros(n, np.float32)]
    addresses = {a.ctypes.data for a in host}

    def registered() -> set:
        return {address for address, _ in backend._registered.values()}

    x, y, out = (_HostTensor(a) for a in host)
    add_kernel[(2,)](x, y, out, n, BLOCK=1024)
    ranges = backend._ranges
    assert addresses <= registered() and ranges is not None
    host[2][:] = 0
    add_kernel[(2,)](x, y, out, n, BLOCK=1024)
    np.testing.assert_array_equal(host[2], host[0] + 0.5)     # in place
    assert backend._ranges is ranges and not general
    del x, y, out
    gc.collect()
    assert not addresses & registered()
