"""The device heap on the CPU (codegen/targets/cpu_heap.py): device malloc and free as CUDA
defines them (Programming Guide, "Dynamic Global Memory Allocation and Operations"): 16-byte
aligned memory from a heap of a set size, NULL when it is full, memory that later kernels and
the host reach, freed memory reused, blocks on several host threads allocating at once; a
free of an address malloc did not return is reported, never performed."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cpu_harness import run_ptx
from ptxport.errors import IllegalAddressError, InvalidValueError, OutOfMemoryError
from ptxport.runtime.backends.cpu import heap as cpu_heap
from ptxport.runtime.backends.cpu.heap import DeviceHeap

# alloc: thread t mallocs `size` bytes, stores t there (when not NULL) and the address in
# ptrs[t]. use_free: reads the u32 at ptrs[t] into res[t] (-1 for NULL) and frees it.
HEAP_PTX = """.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b64 func_retval0) malloc
(
	.param .b64 malloc_param_0
)
;
.extern .func free
(
	.param .b64 free_param_0
)
;
.visible .entry alloc(.param .u64 pptrs, .param .u64 psize)
{
	.reg .b32 %r<4>; .reg .b64 %rd<8>; .reg .pred %p<2>;
	ld.param.u64 %rd1, [pptrs]; ld.param.u64 %rd2, [psize];
	mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x;
	mad.lo.s32 %r1, %r2, %r3, %r1;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd2;
	.param .b64 retval0;
	call.uni (retval0), malloc, (param0);
	ld.param.b64 %rd3, [retval0];
	}
	mul.wide.u32 %rd4, %r1, 8; add.s64 %rd5, %rd1, %rd4; st.global.u64 [%rd5], %rd3;
	setp.eq.u64 %p1, %rd3, 0;
	@%p1 ret;
	st.u32 [%rd3], %r1;
	ret;
}
.visible .entry use_free(.param .u64 pptrs, .param .u64 pres)
{
	.reg .b32 %r<6>; .reg .b64 %rd<8>; .reg .pred %p<2>;
	ld.param.u64 %rd1, [pptrs]; ld.param.u64 %rd2, [pres];
	mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x;
	mad.lo.s32 %r1, %r2, %r3, %r1;
	mul.wide.u32 %rd4, %r1, 8; add.s64 %rd5, %rd1, %rd4; ld.global.u64 %rd3, [%rd5];
	mov.u32 %r4, -1;
	setp.eq.u64 %p1, %rd3, 0;
	@%p1 bra DONE;
	ld.u32 %r4, [%rd3];
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd3;
	call.uni free, (param0);
	}
DONE:
	mul.wide.u32 %rd6, %r1, 4; add.s64 %rd7, %rd2, %rd6; st.global.u32 [%rd7], %r4;
	ret;
}
"""


@pytest.fixture
def heap(monkeypatch):
    """A fresh heap of 256 KiB, as the process's (the CPU device's) heap."""
    fresh = DeviceHeap(256 << 10)
    monkeypatch.setattr(cpu_heap, "HEAP", fresh)
    return fresh


def _alloc(threads: int, size: int) -> np.ndarray:
    ptrs = np.zeros(threads, np.uint64)
    run_ptx(HEAP_PTX, "alloc", threads // 64, 64, [ptrs, np.uint64(size)])
    return ptrs


def _use_free(ptrs: np.ndarray) -> np.ndarray:
    res = np.zeros(ptrs.size, np.int32)
    run_ptx(HEAP_PTX, "use_free", ptrs.size // 64, 64, [ptrs, res])
    return res


def test_memory_lives_across_kernels_and_is_reused_once_freed(heap):
    threads, size = 4096, 40
    ptrs = _alloc(threads, size)                     # 64 blocks on every worker thread
    start, length = heap.range()
    assert (ptrs % 16 == 0).all() and (ptrs >= start).all()
    assert (ptrs + size <= start + length).all()
    ordered = np.sort(ptrs)
    assert (np.diff(ordered) >= size).all()          # distinct and not overlapping
    # the host reads the heap at the device's addresses
    first = int(ptrs[123])
    assert ctypes.c_uint32.from_address(first).value == 123
    np.testing.assert_array_equal(_use_free(ptrs), np.arange(threads))
    # all freed: the whole heap is one block again
    whole = _alloc(64, length // 64)
    assert (whole != 0).all()
    _use_free(whole)


def test_malloc_returns_null_when_the_heap_is_full(heap):
    ptrs = _alloc(8192, 64)                          # 512 KiB asked of 256 KiB
    assert int((ptrs != 0).sum()) == (256 << 10) // 64
    res = _use_free(ptrs)
    np.testing.assert_array_equal(res[ptrs == 0], -1)
    np.testing.assert_array_equal(res[ptrs != 0], np.flatnonzero(ptrs))


def test_free_of_an_address_malloc_did_not_return_is_reported(heap):
    ptrs = _alloc(64, 16)
    bogus = ptrs.copy()
    bogus[5] += 4                                    # inside an allocation, not its start
    with pytest.raises(IllegalAddressError, match=f"freed address {int(bogus[5]):#x}"):
        _use_free(bogus)


def test_heap_size_is_fixed_once_a_kernel_used_it():
    heap = DeviceHeap(1 << 20)
    heap.set_size(4 << 20)                           # before: cudaDeviceSetLimit works
    heap.reserve()
    assert heap.range()[1] == 4 << 20
    heap.set_size(4 << 20)                           # the same size is no change
    with pytest.raises(InvalidValueError, match="fixed once a kernel"):
        heap.set_size(8 << 20)


def test_freed_blocks_merge_with_both_neighbours():
    heap = DeviceHeap(160)
    heap.reserve()
    a, b, c = (heap.malloc(40) for _ in range(3))    # 48 bytes each (16-byte multiples)
    assert heap.malloc(48) == 0                      # 16 bytes left
    heap.free(a)
    heap.free(c)
    assert heap.malloc(96) == 0                      # 48 + 64 free, not adjacent
    heap.free(b)
    assert heap.malloc(160) == a                     # one block again
    assert not heap.free(a + 16) and heap.free(0)


def test_a_heap_larger_than_host_memory_is_an_out_of_memory_error():
    with pytest.raises(OutOfMemoryError, match="cudaLimitMallocHeapSize"):
        DeviceHeap(1 << 62).reserve()
