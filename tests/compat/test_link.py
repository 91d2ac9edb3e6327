"""Linking the PTX of -rdc=true translation units (ptxport/compat/link.py): .extern resolved
across units, .weak kept once, private names renamed apart, .file numbers kept apart."""

from __future__ import annotations

import numpy as np

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.compat.link import link_ptx, needs_linking

_HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"

MAIN = _HEADER + """.file 1 "main.cu"
.extern .func (.param .b32 func_retval0) twice(.param .b32 twice_param_0);
.extern .global .align 4 .u32 offset;
.global .align 4 .u32 scale = 3;
.weak .func (.param .b32 func_retval0) one()
{
.reg .b32 %r<2>;
mov.u32 %r1, 1;
st.param.b32 [func_retval0+0], %r1;
ret;
}
.visible .entry run(.param .u64 run_param_0)
{
.reg .b32 %r<8>;
.reg .b64 %rd<3>;
.loc 1 7 3
ld.param.u64 %rd1, [run_param_0];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, %tid.x;
{
.param .b32 p0;
st.param.b32 [p0+0], %r1;
.param .b32 r0;
call.uni (r0), twice, (p0);
ld.param.b32 %r2, [r0+0];
}
ld.global.u32 %r3, [offset];
ld.global.u32 %r4, [scale];
{
.param .b32 r1;
call.uni (r1), one, ();
ld.param.b32 %r5, [r1+0];
}
mad.lo.s32 %r6, %r2, %r4, %r3;
add.s32 %r7, %r6, %r5;
mul.wide.u32 %rd1, %r1, 4;
add.s64 %rd2, %rd2, %rd1;
st.global.u32 [%rd2], %r7;
ret;
}
"""

OTHER = _HEADER + """.file 1 "other.cu"
.visible .global .align 4 .u32 offset = 100;
.global .align 4 .u32 scale = 1000;
.weak .func (.param .b32 func_retval0) one()
{
.reg .b32 %r<2>;
mov.u32 %r1, 1;
st.param.b32 [func_retval0+0], %r1;
ret;
}
.visible .func (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
.reg .b32 %r<4>;
.loc 1 2 5
ld.param.u32 %r1, [twice_param_0];
ld.global.u32 %r3, [scale];
shl.b32 %r2, %r1, 1;
st.param.b32 [func_retval0+0], %r2;
ret;
}
"""


def test_units_that_use_each_other_need_linking():
    assert needs_linking([MAIN, OTHER])
    assert not needs_linking([OTHER])
    assert not needs_linking([OTHER.replace("offset", "elsewhere"), _HEADER])


def test_linked_text_keeps_one_weak_definition_and_renames_private_names_apart():
    linked = link_ptx([MAIN, OTHER])
    assert linked.count(".weak .func (.param .b32 func_retval0) one()") == 1
    assert linked.count(".version") == 1
    assert ".global .align 4 .u32 scale__unit0 = 3;" in linked
    assert ".global .align 4 .u32 scale__unit1 = 1000;" in linked
    assert '.file 2 "other.cu"' in linked and ".loc 2 2 5" in linked
    assert ".loc 1 7 3" in linked


def test_linked_module_runs_with_calls_and_variables_across_units():
    kernel = Program(link_ptx([MAIN, OTHER]), "ptx").compile().get_kernel("run")
    device = Device("cpu")
    stream = device.create_stream()
    out = device.allocate(4 * 32, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=32), kernel, out)
    got = np.zeros(32, np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    # twice(tid) * scale (main's own, 3) + offset (other's, 100) + one()
    assert got.tolist() == [2 * t * 3 + 100 + 1 for t in range(32)]
