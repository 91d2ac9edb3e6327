"""%globaltimer on OpenCL devices: the device clock, calibrated against the host's.

PTX's %globaltimer counts nanoseconds (NVIDIA's driver starts it at the Unix epoch, as
time.time_ns() counts). OpenCL's nearest is cl_khr_kernel_clock's clock_read_device(), a
64-bit counter of the device whose rate and origin the extension leaves to the device. So
the first launch on a device of a kernel that reads %globaltimer reads that clock in a small
kernel of its own, twice, 0.1 s apart, each time between two host readings of time.time_ns()
(the narrowest of three tries), and keeps the rate and origin: kernels then compute
`base_ns + (clock - base_clock) * ns_per_tick` (codegen/targets/spirv.py, _global_timer). A
clock found within 2% of one tick per nanosecond is taken as a nanosecond clock (Intel's
OpenCL CPU runtime's is one), so that intervals measured in kernels are not scaled by the
calibration's error.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["calibrate"]

_SOURCE = """
#pragma OPENCL EXTENSION cl_khr_kernel_clock : enable
__kernel void ptxport_read_clock(__global ulong *out) { out[0] = clock_read_device(); }
"""
_GAP_S = 0.1
_TRIES = 3
_NANOSECOND_CLOCK = 0.02     # a measured rate this close to 1 tick/ns is taken as 1


def _reading(cl, queue, kernel, buffer, out: np.ndarray) -> tuple[int, int, int]:
    """(host ns at the middle, device clock, host window in ns) of one clock read."""
    before = time.time_ns()
    cl.enqueue_nd_range_kernel(queue, kernel, (1,), (1,))
    cl.enqueue_copy(queue, out, buffer)
    queue.finish()
    after = time.time_ns()
    return (before + after) // 2, int(out[0]), after - before


def _narrowest(cl, queue, kernel, buffer, out) -> tuple[int, int]:
    readings = [_reading(cl, queue, kernel, buffer, out) for _ in range(_TRIES)]
    host, clock, _ = min(readings, key=lambda r: r[2])
    return host, clock


def calibrate(cl, context, queue) -> tuple[int, int, int]:
    """(base_ns, base_clock, ns_per_tick in 32.32 fixed point) of the device of `context`:
    the words CHECKS_TIMER of a launch's checks buffer (spirv_checks.py)."""
    with warnings.catch_warnings():  # the build log of a successful build
        warnings.simplefilter("ignore", cl.CompilerWarning)
        program = cl.Program(context, _SOURCE).build(options="-cl-std=CL3.0")
    kernel = cl.Kernel(program, "ptxport_read_clock")
    buffer = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 8)
    kernel.set_arg(0, buffer)
    out = np.zeros(1, np.uint64)
    _reading(cl, queue, kernel, buffer, out)       # (the first launch of a kernel is slow)
    host0, clock0 = _narrowest(cl, queue, kernel, buffer, out)
    time.sleep(_GAP_S)
    host1, clock1 = _narrowest(cl, queue, kernel, buffer, out)
    buffer.release()
    ns_per_tick = (host1 - host0) / max(clock1 - clock0, 1)
    if abs(ns_per_tick - 1) < _NANOSECOND_CLOCK:
        ns_per_tick = 1.0
    return host1, clock1, round(ns_per_tick * 2**32)
