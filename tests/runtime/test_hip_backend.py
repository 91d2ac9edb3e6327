"""The hip backend: it says why it cannot run where there is no ROCm or AMD GPU, and runs
the corpus's first kernel where there is (skipped here, with the reason)."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch, system
from ptxport.errors import BackendUnavailableError
from ptxport.runtime import backends

AVAILABLE, WHY_NOT = backends.availability("hip")
needs_hip = pytest.mark.skipif(not AVAILABLE, reason=f"the hip backend cannot run here: "
                                                     f"{WHY_NOT}")

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def test_the_reason_is_given_where_hip_cannot_run():
    if AVAILABLE:
        assert system.backends["hip"] == ""
        return
    assert WHY_NOT and system.backends["hip"] == WHY_NOT
    assert any(word in WHY_NOT for word in ("hip-python", "ROCm", "AMD GPU"))
    with pytest.raises(BackendUnavailableError, match="the hip backend cannot run here"):
        Device("hip:0")
    assert all(d.backend != "hip" for d in system.devices)


@needs_hip
def test_saxpy_runs_on_an_amd_gpu():
    dev = Device("hip:0")
    dev.set_current()
    stream = dev.create_stream()
    n = 1000
    x_host = np.arange(n, dtype=np.float32)
    y_host = np.ones(n, dtype=np.float32)
    kernel = Program(SAXPY, code_type="c++").compile("native").get_kernel("saxpy")
    x = dev.allocate(x_host.nbytes, stream=stream)
    x.copy_from(x_host, stream=stream)
    y = dev.allocate(y_host.nbytes, stream=stream)
    y.copy_from(y_host, stream=stream)
    launch(stream, LaunchConfig(grid=(n + 255) // 256, block=256), kernel, np.float32(2), x, y,
           np.int32(n))
    out = np.empty_like(y_host)
    y.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, 2 * x_host + 1)
