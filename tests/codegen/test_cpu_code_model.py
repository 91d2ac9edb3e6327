"""Kernels' object code under the small code model on x86-64 (machine.kernel_machine): constants
addressed from the code, calls of functions outside the object through its GOT (a PLT stub
would abort the process in llvmlite's memory manager), and the load's refusal of anything
still reached by a 32-bit offset."""

from __future__ import annotations

import ctypes
import struct

import llvmlite.binding as llvm
import pytest

from ptxport.codegen.targets.cpu import machine
from ptxport.codegen.targets.cpu.runtime_functions import near_references

pytestmark = pytest.mark.skipif(not llvm.get_process_triple().startswith("x86_64"),
                                reason="the small code model is taken on x86-64 only")

# a quarter of x (a constant of the constant pool), plus what an external function returns
_IR = """
declare float @ptxport_test_external(float)

define float @quarter(float %x) {
  %q = fmul float %x, 0x3FD0000000000000
  %e = call float @ptxport_test_external(float %q)
  %r = fadd float %q, %e
  ret float %r
}
"""


def _relocation_types(obj: bytes) -> set[int]:
    """The relocation types of an x86-64 ELF object's code."""
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    types = set()
    for i in range(shnum):
        _, sh_type, _, _, offset, size, _, info, _, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", obj, shoff + i * shentsize)
        if sh_type == 4:       # SHT_RELA
            types |= {struct.unpack_from("<Q", obj, at + 8)[0] & 0xFFFFFFFF
                      for at in range(offset, offset + size, entsize)}
    return types


def test_constants_and_external_calls_need_no_absolute_address(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    with machine.LLVM_LOCK:
        obj = machine.object_code(_IR)
    types = _relocation_types(obj)
    assert 1 not in types            # R_X86_64_64: a `movabs` of an address (large model)
    assert near_references(obj) == []
    assert types & {9, 41, 42}       # the call through the GOT (GOTPCREL, GOTPCRELX)


def test_the_object_runs_from_the_jit(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    seen = []
    external = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)(
        lambda q: seen.append(q) or 1.5)
    with machine.LLVM_LOCK:
        obj = machine.object_code(_IR)
        llvm.add_symbol("ptxport_test_external", ctypes.cast(external, ctypes.c_void_p).value)
        empty = llvm.parse_assembly("")
        empty.triple = llvm.get_process_triple()
        engine = llvm.create_mcjit_compiler(empty, machine.target_machine(), use_lmm=True)
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        quarter = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)(
            engine.get_function_address("quarter"))
    assert quarter(10.0) == 4.0 and seen == [2.5]


def test_a_call_through_a_plt_stub_is_found():
    with machine.LLVM_LOCK:
        module = llvm.parse_assembly(_IR)      # (no nonlazybind: a PLT call)
        obj = machine.kernel_machine().emit_object(module)
    assert near_references(obj) == ["ptxport_test_external"]
