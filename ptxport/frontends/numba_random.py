"""numba.cuda.random's generator states for ptxport devices: `create_xoroshiro128p_states`
and `init_xoroshiro128p_states` as numba-cuda has them, with DeviceArrays.

Kernels draw with numba's own device functions (`xoroshiro128p_uniform_float32(states, i)`,
`xoroshiro128p_normal_float64`, ...), which compile like any other; only the states' setup
needs this module: numba's makes a numba device array (`cuda.device_array`, through NVIDIA's
driver) and copies into it. The states are computed as numba computes them, on the host by
numba's `init_xoroshiro128p_states_cpu` (state i is state 0 advanced by i jumps of 2**64
steps), then copied to the device, so a kernel draws the same numbers as on a GPU.
"""

from __future__ import annotations

import numpy as np
from numba.cuda.random import init_xoroshiro128p_states_cpu, xoroshiro128p_dtype

from ptxport.errors import InvalidValueError
from ptxport.frontends.arrays import DeviceArray
from ptxport.runtime import Device

__all__ = ["create_xoroshiro128p_states", "init_xoroshiro128p_states", "xoroshiro128p_dtype"]


def create_xoroshiro128p_states(n: int, seed: int, subsequence_start: int = 0,
                                device: Device | None = None) -> DeviceArray:
    """A DeviceArray of `n` xoroshiro128+ states on `device` (the current device if None),
    for n independent generators: numba.cuda.random.create_xoroshiro128p_states."""
    from ptxport.frontends.numba import to_device

    if int(n) < 0:
        raise InvalidValueError(f"create_xoroshiro128p_states: {n} states")
    return to_device(_states(int(n), seed, subsequence_start), device)


def init_xoroshiro128p_states(states, seed: int, subsequence_start: int = 0) -> None:
    """Set `states` (a DeviceArray, or a numpy array, of xoroshiro128p_dtype) as
    create_xoroshiro128p_states makes them: numba.cuda.random.init_xoroshiro128p_states."""
    if states.dtype != xoroshiro128p_dtype or len(states.shape) != 1:
        raise InvalidValueError(f"init_xoroshiro128p_states: states must be a 1D array of "
                                f"xoroshiro128p_dtype, not {states.shape} of {states.dtype}")
    values = _states(states.shape[0], seed, subsequence_start)
    if isinstance(states, np.ndarray):
        states[...] = values
        return
    stream = states.device.default_stream
    states.buffer.copy_from(values, stream=stream)
    stream.sync()


def _states(n: int, seed: int, subsequence_start: int) -> np.ndarray:
    states = np.empty(n, dtype=xoroshiro128p_dtype)
    init_xoroshiro128p_states_cpu(states, np.uint64(seed), np.uint64(subsequence_start))
    return states
