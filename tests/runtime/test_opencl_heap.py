"""Device-side malloc and free on the opencl backend (the SPIR-V target's spirv_heap.py): each
block of memory handed out once at a time, 16-byte aligned, NULL when the heap is full, freed
memory reused, the heap's size fixed once a kernel used it (cudaLimitMallocHeapSize).

Without pyopencl or a device that accepts SPIR-V, every test skips and says why.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import InvalidValueError
from ptxport.frontends import nvrtc
from ptxport.runtime.backends import availability, get

_AVAILABLE, _WHY = availability("opencl")
pytestmark = [
    pytest.mark.skipif(not _AVAILABLE, reason=f"no OpenCL device for SPIR-V: {_WHY}"),
    pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC is not installed"),
]

SOURCE = r"""
extern "C" __global__ void grab(unsigned long long *out, unsigned long long size, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int *p = static_cast<int *>(malloc(size));
    out[i] = reinterpret_cast<unsigned long long>(p);
    if (p) for (int k = 0; k < 4; ++k) p[k] = i * 4 + k;   // each block is this thread's
}
extern "C" __global__ void check_and_release(const unsigned long long *ptrs, int *bad,
                                             int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int *p = reinterpret_cast<int *>(ptrs[i]);
    if (!p) return;
    for (int k = 0; k < 4; ++k) if (p[k] != i * 4 + k) atomicAdd(bad, 1);
    free(p);
    free(p);   // a second free of the same block frees nothing
}
"""
HEAP = 64 << 10
COUNT = 600           # more requests of 100 bytes (128-byte blocks) than the heap holds
FITS = HEAP // 128


@pytest.fixture
def heaps(monkeypatch):
    """A fresh heap of HEAP bytes for opencl:0 (the backend's own may be in use already)."""
    from ptxport.runtime.backends.opencl_blocks import DeviceHeaps

    backend = get("opencl")
    if backend.address_scheme(0) != "svm":
        pytest.skip("opencl:0 has no coarse-grained buffer SVM (the heap needs it)")
    fresh = DeviceHeaps(backend)
    monkeypatch.setattr(backend, "_heaps", fresh)
    backend.set_heap_size(HEAP)
    return fresh


def _round(dev: Device, code, stream) -> np.ndarray:
    out = dev.allocate(8 * COUNT, stream=stream)
    bad = dev.allocate(4, stream=stream)
    bad.fill(0, 4, stream=stream)
    config = LaunchConfig(grid=(COUNT + 127) // 128, block=128)
    launch(stream, config, code.get_kernel("grab"), out, np.uint64(100), np.int32(COUNT))
    launch(stream, config, code.get_kernel("check_and_release"), out, bad, np.int32(COUNT))
    pointers, errors = np.zeros(COUNT, np.uint64), np.zeros(1, np.int32)
    out.copy_to(pointers, stream=stream)
    bad.copy_to(errors, stream=stream)
    stream.sync()
    assert errors[0] == 0
    return pointers


def test_malloc_hands_out_the_heap_then_null_and_reuses_freed_memory(heaps):
    dev = Device("opencl:0")
    code = Program(SOURCE, "c++").compile()
    stream = dev.create_stream()
    first = _round(dev, code, stream)
    heap = heaps.heap(0)
    given = first[first != 0]
    assert len(given) == FITS and len(set(given.tolist())) == FITS
    assert np.all(given % 16 == 0)
    assert np.all((given >= heap.address) & (given + 100 <= heap.address + heap.size))
    # everything was freed (once: the second frees did nothing): the next round gets as much
    second = _round(dev, code, stream)
    assert np.count_nonzero(second) == FITS
    assert set(second[second != 0].tolist()) == set(given.tolist())
    with pytest.raises(InvalidValueError, match="cannot change once a kernel"):
        get("opencl").set_heap_size(2 * HEAP)
