"""Linking the relocatable units of an `nvcc -rdc=true` program (ptxport/ptx/link.py), by
PTX ISA 11.6's linking directives: .extern resolved by another unit's .visible definition,
.weak copies kept once, a .visible name defined twice refused, a unit's own names renamed
where they clash, .file indexes renumbered; and the linked module running on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import CompileError
from ptxport.ir.from_ptx import build
from ptxport.ptx.link import link_text
from ptxport.ptx.parser import parse

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"

# main: a kernel that calls mix() and reads table[] of the other units, and prints
MAIN = HEADER + """.file 1 "main.cu"
.extern .func (.param .b32 func_retval0) mix(.param .b32 mix_param_0);
.extern .global .align 4 .b8 table[64];
.global .align 1 .b8 $str[4] = {109, 97, 105, 0};
.weak .func (.param .b32 func_retval0) helper(.param .b32 helper_param_0)
{
	.reg .b32 %r<3>;
	ld.param.b32 %r1, [helper_param_0];
	add.s32 %r2, %r1, 1;
	st.param.b32 [func_retval0], %r2;
	ret;
}
.visible .entry apply(.param .u64 out)
{
	.reg .b32 %r<8>; .reg .b64 %rd<8>;
	.loc 1 7 3
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	mov.u64 %rd3, table;
	add.s64 %rd4, %rd3, %rd2;
	ld.global.u32 %r2, [%rd4];
	{
	.param .b32 param0;
	st.param.b32 [param0], %r2;
	.param .b32 retval0;
	call.uni (retval0), mix, (param0);
	ld.param.b32 %r3, [retval0];
	}
	mov.u64 %rd5, $str;
	ld.global.u8 %r4, [%rd5];
	add.s32 %r5, %r3, %r4;
	add.s64 %rd6, %rd1, %rd2;
	st.global.u32 [%rd6], %r5;
	ret;
}
"""

# math: mix(v) = 3 * helper(v) + $str[0] (its own $str, "x": 120)
MATH = HEADER + """.file 1 "math.cu"
.global .align 1 .b8 $str[2] = {120, 0};
.weak .func (.param .b32 func_retval0) helper(.param .b32 helper_param_0)
{
	.reg .b32 %r<3>;
	ld.param.b32 %r1, [helper_param_0];
	add.s32 %r2, %r1, 1;
	st.param.b32 [func_retval0], %r2;
	ret;
}
.visible .func (.param .b32 func_retval0) mix(.param .b32 mix_param_0)
{
	.reg .b32 %r<6>; .reg .b64 %rd<2>;
	.loc 1 3 5
	ld.param.b32 %r1, [mix_param_0];
	{
	.param .b32 param0;
	st.param.b32 [param0], %r1;
	.param .b32 retval0;
	call.uni (retval0), helper, (param0);
	ld.param.b32 %r2, [retval0];
	}
	mul.lo.s32 %r3, %r2, 3;
	mov.u64 %rd1, $str;
	ld.global.u8 %r4, [%rd1];
	add.s32 %r5, %r3, %r4;
	st.param.b32 [func_retval0], %r5;
	ret;
}
"""

# data: table[] and the kernel that fills it
DATA = HEADER + """.visible .global .align 4 .b8 table[64];
.visible .entry fill()
{
	.reg .b32 %r<3>; .reg .b64 %rd<4>;
	mov.u32 %r1, %tid.x;
	mul.lo.s32 %r2, %r1, 10;
	mul.wide.u32 %rd1, %r1, 4;
	mov.u64 %rd2, table;
	add.s64 %rd3, %rd2, %rd1;
	st.global.u32 [%rd3], %r2;
	ret;
}
"""


def _linked() -> str:
    return link_text([MAIN, MATH, DATA], ["main.ptx", "math.ptx", "data.ptx"])


def test_externs_resolve_to_the_other_units_definitions():
    module = build(parse(_linked(), "linked.ptx"))
    assert not module.functions["mix"].is_declaration
    assert not module.globals["table"].is_extern and module.globals["table"].size == 64
    assert sum(1 for line in _linked().splitlines() if "helper(" in line
               and line.startswith(".weak")) == 1                 # one .weak copy kept


def test_a_units_own_names_are_renamed_where_they_clash():
    text = _linked()
    assert "$str$unit1" in text and "mov.u64 %rd1, $str$unit1;" in text
    assert "mov.u64 %rd5, $str;" in text                          # the first unit keeps its


def test_file_indexes_are_renumbered_per_unit():
    text = _linked()
    assert '.file 1 "main.cu"' in text and '.file 2 "math.cu"' in text
    assert ".loc 1 7 3" in text and ".loc 2 3 5" in text


def test_a_name_defined_visible_twice_is_refused():
    with pytest.raises(CompileError, match="'table' is defined .visible in two units"):
        link_text([DATA, DATA])


def test_linked_units_run_together_on_the_cpu():
    dev = Device("cpu")
    stream = dev.create_stream()
    code = Program(_linked(), code_type="ptx").compile("native")
    launch(stream, LaunchConfig(grid=1, block=16), code.get_kernel("fill"))
    out = dev.allocate(64, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=16), code.get_kernel("apply"), out)
    got = np.zeros(16, np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    t = np.arange(16)
    np.testing.assert_array_equal(got, 3 * (10 * t + 1) + 120 + 109)
