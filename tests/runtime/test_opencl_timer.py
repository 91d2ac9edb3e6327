"""%globaltimer on opencl:0 (runtime/backends/opencl_timer.py): nanoseconds of the host's
clock (time.time_ns(), the Unix epoch, as NVIDIA's driver sets the register), from the device
clock of cl_khr_kernel_clock as the backend calibrated it; _lo and _hi are its halves.

Without pyopencl or a device that accepts SPIR-V, every test skips and says why.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime.backends import availability

_AVAILABLE, _WHY = availability("opencl")
pytestmark = pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}")

TIMER_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry read_timer(.param .u64 out)
{
    .reg .b64 %rd<4>; .reg .b32 %r<4>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, %globaltimer;
    mov.u32 %r1, %globaltimer_lo;
    mov.u32 %r2, %globaltimer_hi;
    st.global.u64 [%rd1], %rd2;
    st.global.u32 [%rd1+8], %r1;
    st.global.u32 [%rd1+12], %r2;
    ret;
}
.visible .entry no_timer(.param .u64 out)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    st.global.u64 [%rd1], 7;
    ret;
}
"""


@pytest.fixture(scope="module")
def kernels():
    device = Device("opencl:0")
    device.set_current()
    code = Program(TIMER_PTX, "ptx").compile()
    return device, code


def _read(device, kernel) -> tuple[int, int, int, int, int]:
    """(host ns before the launch, %globaltimer, _lo, _hi, host ns after its results came)."""
    stream = device.create_stream()
    buffer = device.allocate(16, stream=stream)
    out = np.zeros(4, np.uint32)
    before = time.time_ns()
    launch(stream, LaunchConfig(grid=1, block=1), kernel, buffer)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    after = time.time_ns()
    timer = int(out[0]) | int(out[1]) << 32
    return before, timer, int(out[2]), int(out[3]), after


def test_globaltimer_is_the_hosts_nanoseconds_during_the_launch(kernels):
    device, code = kernels
    kernel = code.get_kernel("read_timer")
    _read(device, kernel)       # (the first launch also calibrates the clock)
    before, timer, low, high, after = _read(device, kernel)
    assert before <= timer <= after
    assert high == timer >> 32
    # _lo is read a little after %globaltimer: its low half, some nanoseconds on
    assert 0 <= (low - timer) % 2**32 < after - before


def test_globaltimer_measures_the_time_between_launches(kernels):
    device, code = kernels
    kernel = code.get_kernel("read_timer")
    first = _read(device, kernel)
    time.sleep(0.2)
    second = _read(device, kernel)
    elapsed = second[1] - first[1]
    # between the host's earliest and latest view of the two reads
    assert second[0] - first[4] <= elapsed <= second[4] - first[0]


def test_only_modules_that_read_it_ask_for_the_calibration():
    from ptxport.codegen.targets import spirv
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    _, layouts = spirv.build_llvm(build(parse(TIMER_PTX)))
    assert layouts["read_timer"].reads_timer
    without = TIMER_PTX[:TIMER_PTX.index(".visible .entry read_timer")] + \
        TIMER_PTX[TIMER_PTX.index(".visible .entry no_timer"):]
    _, layouts = spirv.build_llvm(build(parse(without)))
    assert not layouts["no_timer"].reads_timer
