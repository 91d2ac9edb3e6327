"""The user's source lines (PTX's .file and .loc, from -lineinfo) in the IR and in the errors
that point at an instruction: the .cu file and line first, the PTX line second."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import run_ptx
from ptxport import Program
from ptxport.errors import (
    IllegalAddressError,
    KernelExecutionError,
    KernelTrapError,
    UnsupportedFeatureError,
)
from ptxport.ir.from_ptx import build
from ptxport.ir.lines import LineTable, parse_file, parse_loc
from ptxport.ptx.parser import parse

# mode 1 traps, mode 2 writes past `out`, mode 3 waits at a barrier for more threads than the
# block has; `f` is a device function whose lines come from a second file.
PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .func (.param .b32 r) f(.param .b32 a)
{
.reg .b32 %r<3>;
.loc 2 7 3
ld.param.b32 %r1, [a];
add.s32 %r2, %r1, 1;
st.param.b32 [r], %r2;
ret;
}
.visible .entry k(.param .u64 out, .param .u32 mode)
{
.reg .b64 %rd<3>; .reg .b32 %r<3>; .reg .pred %p<4>;
ld.param.u64 %rd1, [out];
.loc 1 10 5
ld.param.u32 %r1, [mode];
setp.eq.u32 %p1, %r1, 1;
.loc 1 11 9, function_name $L__info_string0, inlined_at 1 30 2
@%p1 trap;
.loc 1 12 5
setp.eq.u32 %p2, %r1, 2;
@%p2 st.global.u32 [%rd1+4096], %r1;
.loc 1 13 5
setp.eq.u32 %p3, %r1, 3;
@%p3 bar.sync 0, 64;
.loc 1 0 0
ret;
}
.file 1 "/home/user/project/kernel.cu", 1700000000, 420
.file 2 "helpers.cuh"
"""


def _ptx_line(text: str, nth: int = 0) -> int:
    """The PTX line of the `nth` instruction that contains `text`."""
    lines = [i for i, line in enumerate(PTX.splitlines(), 1) if text in line]
    return lines[nth]


def _instructions(module):
    return {(f.name, inst.spec.text): module.source_line(inst.pos)
            for f in module.functions.values() for inst in f.instructions()}


def test_directives_parse():
    assert parse_file(' 1 "/a/b c.cu", 1700000000, 420') == (1, "/a/b c.cu")
    assert parse_loc(" 1 11 9, function_name $L__info_string0, inlined_at 1 30 2") == (1, 11)
    assert parse_loc(" 3 8") == (3, 8)
    assert parse_file("garbage") is None and parse_loc("x 1 2") is None


def test_files_are_named_without_their_directories():
    table = LineTable(files={1: "/home/user/k.cu", 2: "C:\\\\src\\\\w.cu", 3: "plain.cu"},
                      ptx_lines=[10, 20, 30], locs=[(1, 4), (2, 5), (3, 6)])
    assert [table.source_line(n) for n in (15, 25, 35, 5)] == [
        ("k.cu", 4), ("w.cu", 5), ("plain.cu", 6), None]


def test_each_instruction_gets_the_line_of_the_loc_before_it():
    lines = _instructions(build(parse(PTX, "test.ptx")))
    assert lines[("k", "ld.param.u64")] is None            # before the kernel's first .loc
    assert lines[("k", "ld.param.u32")] == ("kernel.cu", 10)
    assert lines[("k", "trap")] == ("kernel.cu", 11)
    assert lines[("k", "st.global.u32")] == ("kernel.cu", 12)
    assert lines[("k", "bar.sync")] == ("kernel.cu", 13)
    assert lines[("k", "ret")] is None                     # line 0: no source line
    assert lines[("f", "add.s32")] == ("helpers.cuh", 7)   # the second file


def test_a_loc_does_not_reach_into_the_next_function():
    text = PTX.replace(".loc 1 10 5\n", "")
    lines = _instructions(build(parse(text, "test.ptx")))
    assert lines[("f", "ret")] == ("helpers.cuh", 7)
    assert lines[("k", "ld.param.u32")] is None


def test_without_file_directives_there_are_no_source_lines():
    text = PTX[:PTX.index(".file 1")]
    module = build(parse(text, "test.ptx"))
    assert not module.lines
    assert set(_instructions(module).values()) == {None}


@pytest.mark.parametrize("mode,error,text", [
    (1, KernelTrapError, "trap;"), (2, IllegalAddressError, "st.global"),
    (3, KernelExecutionError, "bar.sync")])
def test_cpu_errors_name_the_source_line_then_the_ptx_line(mode, error, text):
    # `out` is the first 16 bytes of memory this test holds: mode 2's store 4096 bytes on
    # lies in the rest, which the launch is not given (nor can any of its own memory, its
    # workers' frames and shared memory, be there, as it could past a lone 16-byte array)
    out = np.zeros(1024 + 4, np.uint32)[:4]
    source = {1: 11, 2: 12, 3: 13}[mode]
    ptx_line = _ptx_line(text)
    with pytest.raises(error) as caught:
        run_ptx(PTX, "k", 1, 32, [out, np.uint32(mode)])
    assert f" at kernel.cu:{source} (PTX line {ptx_line})" in str(caught.value)


def test_cpu_errors_without_line_information_name_the_ptx_line():
    text = PTX[:PTX.index(".file 1")]
    with pytest.raises(KernelTrapError, match=rf"executed trap at line {_ptx_line('trap;')} in"):
        run_ptx(text, "k", 1, 32, [np.zeros(4, np.uint32), np.uint32(1)])


def test_unsupported_feature_names_the_source_line_then_the_ptx_place():
    # SPIR-V has no barrier for a thread count (OpenCL's wait for the whole work-group)
    with pytest.raises(UnsupportedFeatureError) as caught:
        Program(PTX, code_type="ptx").compile("spirv")
    e = caught.value
    assert e.source == ("kernel.cu", 13) and e.location.line == _ptx_line("bar.sync")
    assert str(e).startswith(f"kernel.cu:13 (PTX {e.location}): 'bar.sync' is not supported")
