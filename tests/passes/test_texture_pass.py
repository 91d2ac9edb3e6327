"""passes/textures.py: texture and surface instructions become sampler calls, the result
verifies and compiles for every target but NVPTX (which keeps tex), the module given is not
changed, and what is not done is refused by name."""

from __future__ import annotations

import hashlib

import pytest

from ptxport.codegen.compile import compile_for_target
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes import textures
from ptxport.ptx.parser import parse

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"

SAMPLE = HEADER + """
.visible .entry k(.param .u64 t, .param .u64 s, .param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [t];
    ld.param.u64 %rd2, [s];
    ld.param.u64 %rd3, [out];
    mov.f32 %f1, 0f3F000000;
    setp.ne.u64 %p1, %rd1, 0;
    @%p1 tex.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}];
    tex.a2d.v4.s32.f32 {%r1, %r2, %r3, %r4}|%p1, [%rd1, {%r5, %f1, %f1, %f1}];
    tex.level.3d.v4.u32.f32 {%r1, _, _, _}, [%rd1, {%f1, %f1, %f1, %f1}], %f1;
    tld4.g.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}];
    txq.width.b32 %r6, [%rd1];
    suq.height.b32 %r7, [%rd2];
    suld.b.2d.v2.b32.trap {%r8, %r9}, [%rd2, {%r6, %r7}];
    sust.b.1d.b16.zero [%rd2, {%r6}], %r9;
    st.global.f32 [%rd3], %f2;
    ret;
}
"""


def module_of(text: str):
    module = build(parse(text, "t.ptx"))
    verify(module)
    return module


def opcodes(module) -> set[str]:
    return {inst.opcode for f in module.functions.values() for inst in f.instructions()}


def test_sampler_ptx_is_the_one_the_pass_names():
    """texture_sampler.ptx is what regenerate() wrote last (its digest is in textures.py),
    so compiled-kernel caches, which hash ptxport's .py files, see every change of it."""
    ptx = (textures._SAMPLER.with_suffix(".ptx")).read_text()
    assert hashlib.sha256(ptx.encode()).hexdigest() == textures.SAMPLER_DIGEST


def test_lowering_leaves_plain_ir_and_the_module_alone():
    module = module_of(SAMPLE)
    lowered = textures.run(module, "cpu")
    assert not opcodes(lowered) & textures.OPCODES
    assert {"call", "st", "ld"} <= opcodes(lowered)
    assert "__ptxport_tex" in lowered.functions and "__ptxport_tex" not in module.functions
    assert {"tex", "tld4", "txq", "suq", "suld", "sust"} <= opcodes(module)
    verify(lowered)


def test_module_without_textures_is_returned_as_is():
    module = module_of(HEADER + ".visible .entry k() { ret; }")
    assert textures.run(module) is module


@pytest.mark.parametrize("target", ["spirv", "amdgpu:gfx1100", "amdgpu:gfx90a", "cpu"])
def test_every_portable_target_compiles_it(target):
    assert compile_for_target(module_of(SAMPLE), target)


def test_nvptx_keeps_native_textures():
    ptx = compile_for_target(module_of(SAMPLE), "nvptx:sm_80")
    assert "tex.2d.v4.f32.f32" in ptx and "__ptxport_tex" not in ptx


REFUSED = [
    ("tex.2dms.v4.f32.s32 {%f1, %f1, %f1, %f1}, [%rd1, {%r1, %r1, %r1, %r1}]", "multisample"),
    ("tex.cube.v4.f32.s32 {%f1, %f1, %f1, %f1}, [%rd1, {%r1, %r1, %r1, %r1}]",
     "integer coordinates of a cube map"),
    ("tex.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [%rd1, %rd1, {%f1, %f1}]",
     "independent sampler"),
    ("tex.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [tr, {%f1, %f1}]", "texture and surface references"),
    ("tex.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [%rd1, {%f1, %f1}], {%r1, %r1}",
     "texel offsets"),
    ("tld4.r.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [%rd1, {%f1, %f1}], {%r1, %r1}",
     "texel offsets"),
    ("txq.channel_order.b32 %r1, [%rd1]", "channel_order"),
    ("sust.p.1d.b32.trap [%rd1, {%r1}], {%r1, %r1, %r1, %r1}", "formatted surface"),
    ("sured.b.add.1d.u32.trap [%rd1, {%r1}], %r1", "surface reductions"),
]


@pytest.mark.parametrize("instruction, reason", REFUSED, ids=[r[1] for r in REFUSED])
def test_refusals_name_the_instruction(instruction, reason):
    text = HEADER + f""".global .texref tr;
.visible .entry k() {{
    .reg .b32 %r<2>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<2>;
    {instruction};
    ret;
}}"""
    with pytest.raises(UnsupportedFeatureError, match=reason) as caught:
        textures.run(module_of(text), "spirv")
    assert caught.value.target == "spirv" and caught.value.location.line == 9
