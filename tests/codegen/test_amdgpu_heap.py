"""CUDA's device-side malloc and free on the AMDGPU target, proven without an AMD GPU.

The heap's algorithm is spirv_heap.py's, run on Intel's OpenCL runtime by
tests/runtime/test_opencl_heap.py; here: the calls reach it with the heap's address read from
the code object's global, which the hip backend finds by name (hipModuleGetGlobal)."""

from __future__ import annotations

import re

import pytest
from test_amdgpu import needs_lld, read_code_object

from ptxport.codegen.targets import amdgpu, spirv_heap
from ptxport.frontends import nvrtc
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0],
                                 reason="NVRTC is needed to compile the CUDA C++ kernel")

SOURCE = r"""
extern "C" __global__ void lists(int *out, int n) {
    int *values = (int *)malloc(n * sizeof(int));
    if (values == nullptr) { out[threadIdx.x] = -1; return; }
    for (int i = 0; i < n; ++i) values[i] = i * (int)threadIdx.x;
    int sum = 0;
    for (int i = 0; i < n; ++i) sum += values[i];
    out[threadIdx.x] = sum;
    free(values);
}
"""


def _module():
    module = build(parse(nvrtc.compile_to_ptx(SOURCE, "heap.cu"), "heap.ptx"))
    verify(module)
    return module


@needs_nvrtc
@pytest.mark.parametrize("chip", ["gfx1100", "gfx942"])
def test_malloc_and_free_call_the_heap_at_the_globals_address(chip):
    text = amdgpu.compile_llvm_ir(_module(), chip)
    symbol = spirv_heap.HEAP_SYMBOL
    assert re.search(rf'@"?{symbol}"? = addrspace\(1\) global i64 0', text)
    loads = set(re.findall(rf'(%"?[.\w]+"?) = load i64, i64 addrspace\(1\)\* @"?{symbol}"?',
                           text))
    assert loads, "the kernel does not read the heap's address from its global"
    calls = re.findall(r'call (?:i64|void) @"ptxport\.heap_(malloc|free)"\(i64 (%"?[.\w]+"?)',
                       text)
    assert [name for name, _ in calls] == ["malloc", "free"]
    assert all(heap in loads for _, heap in calls)
    assert "spir_func" not in text


@needs_lld
@needs_nvrtc
def test_the_code_object_exports_the_heap_global():
    info = read_code_object(amdgpu.compile_module(_module(), "gfx1100"))
    assert spirv_heap.HEAP_SYMBOL in info["symbols"]
    assert "lists.kd" in info["symbols"]

