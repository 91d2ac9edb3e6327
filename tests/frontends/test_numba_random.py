"""numba.cuda.random's generators in kernels through ptxport.frontends.numba, with the states
made by pnb.create_xoroshiro128p_states (numba's makes them with NVIDIA's driver), on the
cpu device and opencl:0, checked against numba's own functions run on the host."""

import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install "
                                         "'ptxport[numba]')")

from numba import cuda
from numba.cuda.random import (
    init_xoroshiro128p_states_cpu,
    xoroshiro128p_dtype,
    xoroshiro128p_normal_float32,
    xoroshiro128p_uniform_float32,
)

from ptxport import Device
from ptxport.errors import InvalidValueError
from ptxport.frontends import numba as pnb
from ptxport.runtime.backends import availability

_OPENCL, _WHY = availability("opencl")
DEVICES = ["cpu", pytest.param("opencl:0", marks=pytest.mark.skipif(
    not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}"))]


@pnb.jit
def draw(states, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, 0] = xoroshiro128p_uniform_float32(states, i)
        out[i, 1] = xoroshiro128p_normal_float32(states, i)
        out[i, 2] = xoroshiro128p_uniform_float32(states, i)


def _on_host(n: int, seed: int) -> np.ndarray:
    states = np.empty(n, dtype=xoroshiro128p_dtype)
    init_xoroshiro128p_states_cpu(states, np.uint64(seed), np.uint64(0))
    out = np.empty((n, 3), np.float32)
    for i in range(n):
        out[i] = (xoroshiro128p_uniform_float32(states, i),
                  xoroshiro128p_normal_float32(states, i),
                  xoroshiro128p_uniform_float32(states, i))
    return out


@pytest.mark.parametrize("name", DEVICES)
def test_kernels_draw_numbas_numbers(name):
    device = Device(name)
    device.set_current()
    n = 300
    states = pnb.create_xoroshiro128p_states(n, seed=7, device=device)
    assert states.shape == (n,) and states.dtype == xoroshiro128p_dtype
    out = np.zeros((n, 3), np.float32)
    draw[3, 128](states, out)
    expected = _on_host(n, 7)
    np.testing.assert_array_equal(out[:, [0, 2]], expected[:, [0, 2]])
    np.testing.assert_allclose(out[:, 1], expected[:, 1], rtol=1e-5, atol=1e-6)
    # the states moved on; init_xoroshiro128p_states puts them back
    again = np.zeros_like(out)
    draw[3, 128](states, again)
    assert not np.array_equal(again, out)
    pnb.init_xoroshiro128p_states(states, seed=7)
    draw[3, 128](states, again)
    np.testing.assert_array_equal(again[:, [0, 2]], out[:, [0, 2]])


def test_states_of_another_type_are_refused():
    with pytest.raises(InvalidValueError, match="xoroshiro128p_dtype"):
        pnb.init_xoroshiro128p_states(np.zeros(4, np.uint64), seed=1)
