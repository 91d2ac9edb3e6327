"""CpuOptions (codegen/targets/cpu/options.py) and how the CPU compiler refuses: options are
passed down and are part of every image's key; the warp-gang path falls back to the
thread-by-thread path only for its explicit refusals (GangUnsupported), never for a bug of
its own, and LLVM rejecting the code it was given is an InternalError naming the kernel."""

from __future__ import annotations

import pytest

from cpu_harness import kernel_ptx
from ptxport.codegen.targets.cpu import compile as cpu_compile
from ptxport.codegen.targets.cpu.gang import build as gang_build
from ptxport.codegen.targets.cpu.image import code_fingerprint
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import InternalError
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

PTX = kernel_ptx("""
.reg .b32 %r<3>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r1;
ret;""", ".param .u64 out")

LOCAL = kernel_ptx("""
.reg .b32 %r<3>; .reg .b64 %rd<4>;
.local .align 4 .b32 buf[4];
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
st.local.u32 [buf], %r1; ld.local.u32 %r2, [buf];
mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r2;
ret;""", ".param .u64 out")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    code_fingerprint.cache_clear()
    yield tmp_path
    code_fingerprint.cache_clear()


def _module(text: str = PTX):
    module = build(parse(text, "options.ptx"))
    verify(module)
    return module


def test_each_option_makes_its_own_image_key():
    module = _module()
    keys = {cpu_compile.image_key(module, "k", (32, 1, 1), options) for options in (
        CpuOptions(), CpuOptions(gang=False), CpuOptions(full_mask_copies=False))}
    assert len(keys) == 3
    assert cpu_compile.image_key(module, "k", None, CpuOptions()) == \
        cpu_compile.image_key(module, "k", None, CpuOptions(gang=True, full_mask_copies=True))


def test_gang_false_compiles_thread_by_thread_and_says_so(cache_dir):
    image = cpu_compile.compile_image(_module(), "k", CpuOptions(gang=False))
    assert image.plan is not None and not image.plan.gang
    assert image.gang_refusal == "turned off (CpuOptions(gang=False))"
    gang = cpu_compile.compile_image(_module(), "k", CpuOptions())
    assert gang.plan is None and gang.gang_refusal is None     # code per block shape
    shaped = cpu_compile.compile_image(_module(), "k", CpuOptions(), (64, 1, 1))
    assert shaped.plan.gang


def test_an_explicit_refusal_falls_back_with_its_reason(cache_dir):
    image = cpu_compile.compile_image(_module(LOCAL), "k", CpuOptions())
    assert image.plan is not None and not image.plan.gang
    assert image.gang_refusal == ".local memory"     # refusals.py, before any lowering


def test_a_bug_in_the_gang_lowering_is_no_silent_fallback(cache_dir, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a bug")
    monkeypatch.setattr(gang_build, "lower_gang", broken)
    with pytest.raises(KeyError, match="a bug"):
        cpu_compile.compile_image(_module(), "k", CpuOptions())


def test_llvm_rejecting_the_code_is_an_internal_error(cache_dir, monkeypatch):
    def rejecting(*args, **kwargs):
        raise RuntimeError("LLVM ERROR: bad\nmore")
    monkeypatch.setattr(cpu_compile, "object_code", rejecting)
    with pytest.raises(InternalError, match="kernel 'k' .*thread by thread.*LLVM ERROR: bad"):
        cpu_compile.compile_image(_module(), "k", CpuOptions(gang=False))


def test_a_bug_lowering_an_instruction_on_lanes_names_the_instruction(cache_dir, monkeypatch):
    from ptxport.codegen.targets.cpu.gang import lowering

    def broken(fl, inst):
        raise KeyError("a bug")
    monkeypatch.setitem(lowering._GANG_LOWERINGS, "st", broken)
    with pytest.raises(InternalError, match="'st.global.u32' as warp gangs .*KeyError"):
        cpu_compile.compile_image(_module(), "k", CpuOptions())
