"""Device functions that wait (barriers, warp operations) run inlined on the CPU target
(ptxport/ir/inline.py): guarded calls, nested calls, parameters read after a barrier, a
function's static shared memory shared by its call sites, recursion refused, and problems
reported where the user wrote them."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import run_ptx
from ptxport.codegen.targets.cpu.module import unsupported_instructions
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.inline import inline_waiting_calls
from ptxport.ptx.parser import parse
from ptxport.runtime.backends.cpu.kernels import compile_kernel

# rotate(v, shift): through a function-scope shared array, with a barrier between the
# write and the read and another after it; the shift (a parameter) is read after the first
# barrier. twice(v) calls rotate twice (nested inlining). The kernel calls twice under a
# guard that is uniform across the block (parameter `pg`), else writes v itself.
MODULE = """
.version 8.0
.target sm_80
.address_size 64

.func (.param .b32 r) rotate(.param .b32 v, .param .b32 shift)
{
    .shared .align 4 .b8 buf[256];
    .reg .b32 %r<12>; .reg .b64 %rd<4>;
    ld.param.b32 %r1, [v];
    mov.u32 %r2, %tid.x;
    shl.b32 %r3, %r2, 2;
    mov.u32 %r4, buf;
    add.s32 %r5, %r4, %r3;
    st.shared.u32 [%r5], %r1;
    bar.sync 0;
    ld.param.b32 %r6, [shift];
    add.s32 %r7, %r2, %r6;
    and.b32 %r7, %r7, 63;
    shl.b32 %r8, %r7, 2;
    add.s32 %r9, %r4, %r8;
    ld.shared.u32 %r10, [%r9];
    bar.sync 0;
    st.param.b32 [r], %r10;
    ret;
}

.func (.param .b32 r) twice(.param .b32 v)
{
    .reg .b32 %r<6>;
    ld.param.b32 %r1, [v];
    {
    .param .b32 a; .param .b32 s; .param .b32 out;
    st.param.b32 [a], %r1;
    st.param.b32 [s], 5;
    call.uni (out), rotate, (a, s);
    ld.param.b32 %r2, [out];
    }
    {
    .param .b32 a; .param .b32 s; .param .b32 out;
    st.param.b32 [a], %r2;
    st.param.b32 [s], 7;
    call.uni (out), rotate, (a, s);
    ld.param.b32 %r3, [out];
    }
    mul.lo.s32 %r4, %r2, 1000;
    add.s32 %r5, %r4, %r3;
    st.param.b32 [r], %r5;
    ret;
}

.visible .entry k(.param .u64 px, .param .u64 py, .param .u32 pg)
{
    .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<2>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [py];
    ld.param.u32 %r1, [pg];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r3, [%rd4];
    mov.u32 %r4, %r3;
    setp.ne.u32 %p1, %r1, 0;
    {
    .param .b32 a; .param .b32 out;
    st.param.b32 [a], %r3;
    @%p1 call.uni (out), twice, (a);
    @%p1 ld.param.b32 %r4, [out];
    }
    add.s64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r4;
    ret;
}
"""


@pytest.mark.parametrize("guard", [0, 1])
def test_waiting_functions_run_inlined(guard):
    x = np.arange(64, dtype=np.uint32) * 3 + 1
    y = np.zeros(64, np.uint32)
    run_ptx(MODULE, "k", 1, 64, [x, y, np.uint32(guard)])
    t = np.arange(64)
    first = x[(t + 5) % 64]
    second = first[(t + 7) % 64]
    want = first * 1000 + second if guard else x
    np.testing.assert_array_equal(y, want.astype(np.uint32))


def _module(text: str):
    module = build(parse(text, "test.ptx"))
    verify(module)
    return module


def test_the_module_is_not_changed():
    module = _module(MODULE)
    kernel = module.functions["k"]
    before = [(b, list(b.instructions), list(b.successors)) for b in kernel.blocks]
    inlined = inline_waiting_calls(module, kernel)
    assert [(b, b.instructions, b.successors) for b in kernel.blocks] == before
    assert not any(i.opcode == "call" for i in inlined.function.instructions())
    assert sum(i.opcode == "bar" for i in inlined.function.instructions()) == 4
    # one static shared array for both call sites
    shared = [v for v in inlined.function.variables.values() if v.space == "shared"]
    assert len(shared) == 1


RECURSIVE = """
.version 8.0
.target sm_80
.address_size 64
.func down(.param .b32 n)
{
    .reg .b32 %r<3>; .reg .pred %p<2>;
    ld.param.b32 %r1, [n];
    bar.sync 0;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 ret;
    sub.u32 %r2, %r1, 1;
    {
    .param .b32 a;
    st.param.b32 [a], %r2;
    call.uni down, (a);
    }
    ret;
}
.visible .entry k(.param .u32 n)
{
    .reg .b32 %r<2>;
    ld.param.u32 %r1, [n];
    {
    .param .b32 a;
    st.param.b32 [a], %r1;
    call.uni down, (a);
    }
    ret;
}
"""


def test_a_recursive_function_that_waits_is_refused_with_its_line():
    module = _module(RECURSIVE)
    with pytest.raises(UnsupportedFeatureError, match="recursively") as info:
        compile_kernel(module, "k")
    # the recursive call inside `down`
    assert info.value.location is not None and info.value.location.line == 16


def test_the_refusal_names_the_source_line_when_the_ptx_has_one():
    text = RECURSIVE.replace("    sub.u32 %r2", "    .loc 1 42 7\n    sub.u32 %r2") \
        + '.file 1 "/src/down.cu"\n'
    with pytest.raises(UnsupportedFeatureError, match="recursively") as info:
        compile_kernel(_module(text), "k")
    assert info.value.source == ("down.cu", 42)
    assert str(info.value).startswith(f"down.cu:42 (PTX {info.value.location}): ")


UNSUPPORTED = """
.version 8.0
.target sm_80
.address_size 64
.func f()
{
    .reg .b32 %r<3>;
    bar.sync 0;
    mov.u32 %r1, %pm3;
    ret;
}
.visible .entry k()
{
    call.uni f, ();
    call.uni f, ();
    ret;
}
"""


def test_problems_inside_inlined_functions_name_the_original_instruction():
    module = _module(UNSUPPORTED)
    problems = unsupported_instructions(module)
    counter = next(i for i in module.functions["f"].instructions() if i.opcode == "mov")
    assert set(problems) == {id(counter)}
