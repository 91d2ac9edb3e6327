"""Warp gangs' float4 accesses in Triton's layout, whose lanes are known consecutive when
compiling (passes/lane_offsets.py follows `((tid * 4) & 508) | (ctaid << 10)` and its
widening): predicated by bounds, with a tail block, and after lane 0 has exited (its copy
of the base register is then stale, so the lanes are classified at run time)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import LaunchConfig, Program
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError

HEADER = ".version 8.8\n.target sm_80\n.address_size 64\n"

# out[i] = x[i] + 1 for i < n, each thread's 4 elements at ((tid*4) & 508) | (ctaid << 10)
# and 512 on: the PTX Triton makes of its tutorial's vector add (BLOCK=1024, 4 warps)
ADD = HEADER + """.visible .entry k(.param .u64 x, .param .u64 out, .param .u32 n)
.reqntid 128
{
.reg .pred %p<3>; .reg .b32 %r<40>; .reg .f32 %f<9>; .reg .b64 %rd<12>;
ld.param.u64 %rd7, [x]; ld.param.u64 %rd8, [out]; ld.param.u32 %r27, [n];
mov.u32 %r25, %ctaid.x; shl.b32 %r26, %r25, 10;
mov.u32 %r28, %tid.x; shl.b32 %r29, %r28, 2; and.b32 %r30, %r29, 508;
or.b32 %r31, %r30, %r26; or.b32 %r32, %r31, 512;
setp.lt.s32 %p1, %r31, %r27; setp.lt.s32 %p2, %r32, %r27;
mul.wide.s32 %rd10, %r31, 4;
add.s64 %rd1, %rd7, %rd10; add.s64 %rd2, %rd1, 2048;
add.s64 %rd3, %rd8, %rd10; add.s64 %rd4, %rd3, 2048;
mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000; mov.f32 %f3, 0f00000000;
mov.f32 %f4, 0f00000000;
@%p1 ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
add.f32 %f1, %f1, 0f3F800000; add.f32 %f2, %f2, 0f3F800000;
add.f32 %f3, %f3, 0f3F800000; add.f32 %f4, %f4, 0f3F800000;
@%p1 st.global.v4.f32 [%rd3], {%f1, %f2, %f3, %f4};
mov.f32 %f5, 0f00000000; mov.f32 %f6, 0f00000000; mov.f32 %f7, 0f00000000;
mov.f32 %f8, 0f00000000;
@%p2 ld.global.v4.f32 {%f5, %f6, %f7, %f8}, [%rd2];
add.f32 %f5, %f5, 0f3F800000; add.f32 %f6, %f6, 0f3F800000;
add.f32 %f7, %f7, 0f3F800000; add.f32 %f8, %f8, 0f3F800000;
@%p2 st.global.v4.f32 [%rd4], {%f5, %f6, %f7, %f8};
ret;
}
"""

# thread 0 returns first; the others write tid at out + 16 * tid after a barrier (the base
# register, live across it, is written by lanes 1..31 only: lane 0's copy is stale)
AFTER_EXIT = HEADER + """.visible .entry k(.param .u64 out, .param .u32 n)
{
.reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out]; ld.param.u32 %r5, [n];
mov.u32 %r1, %tid.x;
setp.eq.u32 %p1, %r1, 0;
@%p1 ret;
shl.b32 %r2, %r1, 2;
mul.wide.u32 %rd2, %r2, 4;
add.s64 %rd3, %rd1, %rd2;
bar.sync 0;
setp.lt.u32 %p2, %r1, %r5;
@%p2 st.global.v4.u32 [%rd3], {%r1, %r1, %r1, %r1};
ret;
}
"""


def _run(ptx: str, grid: int, block: int, arrays: list, *scalars):
    return launch_on_cpu(ptx, LaunchConfig(grid=grid, block=block), *arrays, *scalars)


@pytest.mark.parametrize("n", [4096, 4096 - 16, 1040])
def test_triton_float4_add_with_a_tail(n):
    x = np.arange(4096, dtype=np.float32)
    out = np.full(4096, -1, np.float32)
    binary = _run(ADD, 4, 128, [x, out], np.uint32(n))
    assert binary.gang_refusal is None
    assert (out[:n] == x[:n] + 1).all()
    assert (out[n:] == -1).all()        # the bounds' predicate: nothing past n


def test_triton_float4_past_the_allocation_stops_at_the_first_bad_thread():
    x = np.zeros(2048, np.float32)
    out = np.zeros(4096, np.float32)
    with pytest.raises(IllegalAddressError):
        _run(ADD, 4, 128, [x, out], np.uint32(4096))      # x holds only half of n


def test_lanes_after_lane_0_exited():
    out = np.zeros((64, 4), np.uint32)
    _run(AFTER_EXIT, 1, 64, [out], np.uint32(40))
    expect = np.repeat(np.arange(64, dtype=np.uint32)[:, None], 4, axis=1)
    expect[0] = 0
    expect[40:] = 0
    assert (out == expect).all()


def _gang_ir(ptx: str, block: int) -> str:
    module = Program(ptx, code_type="ptx").compile("native").module
    llmod, _ = build_gang(module, "k", (block, 1, 1), CpuOptions())
    return str(llmod)


def test_triton_layout_needs_no_classification_at_run_time():
    """Where the whole warp runs, the float4 accesses' lanes are known consecutive when
    compiling, in the segment that computes their addresses too (the `and`/`or` of Triton's
    aligned index keep the kernel's lane offsets there): each of the 2 loads and 2 stores is
    one masked access after its range check (memory.py's _checked_then), with no look at
    the lanes' addresses (the copy for partial warps classifies them: 4 times). Each of the
    two guarded runs (a load and a store each) is lowered twice where the whole warp runs:
    once where its guard holds in every lane (lowering._lower_whole_run, `whole_run`), once
    under the guard's mask: 8 checked accesses, none classified."""
    text = _gang_ir(ADD, 128)
    assert len(re.findall(r"^whole_run[.\d]*:", text, re.M)) == 2
    assert len(re.findall(r"^access_checked[.\d]*:", text, re.M)) == 8
    assert len(re.findall(r"^classify[.\d]*:", text, re.M)) == 4


# the guarded float4 load keeps its registers' values (7.0) in the lanes it does not load,
# and every lane stores them: the masked load's pass-through
KEEP = HEADER + """.visible .entry k(.param .u64 x, .param .u64 out, .param .u32 n)
.reqntid 128
{
.reg .pred %p<3>; .reg .b32 %r<40>; .reg .f32 %f<9>; .reg .b64 %rd<12>;
ld.param.u64 %rd7, [x]; ld.param.u64 %rd8, [out]; ld.param.u32 %r27, [n];
mov.u32 %r25, %ctaid.x; shl.b32 %r26, %r25, 9;
mov.u32 %r28, %tid.x; shl.b32 %r29, %r28, 2; and.b32 %r30, %r29, 508;
or.b32 %r31, %r30, %r26;
setp.lt.s32 %p1, %r31, %r27;
mul.wide.s32 %rd10, %r31, 4;
add.s64 %rd1, %rd7, %rd10; add.s64 %rd3, %rd8, %rd10;
mov.f32 %f1, 0f40E00000; mov.f32 %f2, 0f40E00000; mov.f32 %f3, 0f40E00000;
mov.f32 %f4, 0f40E00000;
@%p1 ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
st.global.v4.f32 [%rd3], {%f1, %f2, %f3, %f4};
ret;
}
"""


@pytest.mark.parametrize("n", [2048, 1040, 0])
def test_a_guarded_float4_load_keeps_the_registers_of_the_lanes_it_skips(n):
    x = np.arange(2048, dtype=np.float32)
    out = np.full(2048, -1, np.float32)
    _run(KEEP, 4, 128, [x, out], np.uint32(n))
    first = n // 4 * 4         # (a thread loads its 4 elements when its first is below n)
    assert (out[:first] == x[:first]).all()
    assert (out[first:] == 7).all()


# Triton 3.6's form of the vector add when n is not known to be a multiple of 16: each of a
# thread's 4 elements is a predicated scalar load or store through an address register of
# its own (%rd2 = %rd1 + 4, ...), at offset 0
def _scalar_run(op: str, regs: str, preds: str, values: str) -> str:
    lines = []
    for k in range(4):
        if op == "ld":
            lines.append(f"mov.f32 %f{values[k]}, 0f00000000; "
                         f"@%p{preds[k]} ld.global.b32 %f{values[k]}, [%rd{regs[k]}];")
        else:
            lines.append(f"@%p{preds[k]} st.global.b32 [%rd{regs[k]}], %f{values[k]};")
    return "\n".join(lines)


SCALARS = HEADER + """.visible .entry k(.param .u64 x, .param .u64 out, .param .u32 n)
.reqntid 128
{
.reg .pred %p<9>; .reg .b32 %r<40>; .reg .f32 %f<9>; .reg .b64 %rd<20>;
ld.param.u64 %rd17, [x]; ld.param.u64 %rd18, [out]; ld.param.u32 %r27, [n];
mov.u32 %r25, %ctaid.x; shl.b32 %r26, %r25, 9;
mov.u32 %r28, %tid.x; shl.b32 %r29, %r28, 2; and.b32 %r30, %r29, 508;
or.b32 %r31, %r30, %r26; or.b32 %r32, %r31, 1; or.b32 %r33, %r31, 2; or.b32 %r34, %r31, 3;
setp.lt.s32 %p1, %r31, %r27; setp.lt.s32 %p2, %r32, %r27;
setp.lt.s32 %p3, %r33, %r27; setp.lt.s32 %p4, %r34, %r27;
mul.wide.s32 %rd10, %r31, 4;
add.s64 %rd1, %rd17, %rd10; add.s64 %rd2, %rd1, 4; add.s64 %rd3, %rd1, 8;
add.s64 %rd4, %rd1, 12;
add.s64 %rd5, %rd18, %rd10; add.s64 %rd6, %rd5, 4; add.s64 %rd7, %rd5, 8;
add.s64 %rd8, %rd5, 12;
""" + _scalar_run("ld", "1234", "1234", "1234") + """
add.f32 %f1, %f1, 0f3F800000; add.f32 %f2, %f2, 0f3F800000;
add.f32 %f3, %f3, 0f3F800000; add.f32 %f4, %f4, 0f3F800000;
""" + _scalar_run("st", "5678", "1234", "1234") + """
ret;
}
"""


@pytest.mark.parametrize("n", [2048, 2047, 1041, 3])
def test_triton_scalar_runs_through_address_registers_of_their_own(n):
    """Each thread's 4 predicated scalar loads (stores) through registers that are one
    base plus 4, 8, 12 are one masked access of the warp's 128 elements (coalesce.py), not
    4 gathers; the predicates cut the tail element by element."""
    text = _gang_ir(SCALARS, 128)
    assert "masked.load.v128i32" in text and "masked.store.v128i32" in text
    x = np.arange(2048, dtype=np.float32)
    out = np.full(2048, -1, np.float32)
    _run(SCALARS, 4, 128, [x, out], np.uint32(n))
    assert (out[:n] == x[:n] + 1).all()
    assert (out[n:] == -1).all()


def test_quads_take_a_warps_words_apart_and_put_them_together():
    """gang/quads.py's two rounds of 16-element shuffles: word k of lane l at 4 * l + k of
    a .v4 access's 128 words, apart (loads) and together (stores)."""
    import ctypes

    import llvmlite.binding as llvm
    from llvmlite import ir as ll

    from ptxport.codegen.lower import PTR
    from ptxport.codegen.targets.cpu.gang.quads import join_quads, split_quads
    from ptxport.codegen.targets.cpu.machine import target_machine

    i32 = ll.IntType(32)
    wide, lanes = ll.VectorType(i32, 128), ll.VectorType(i32, 32)
    module = ll.Module()
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), [PTR] * 4), "f")
    b = ll.IRBuilder(fn.append_basic_block())
    src, apart, parts, together = fn.args
    for k, part in enumerate(split_quads(b, b.load(src, typ=wide, align=4))):
        b.store(part, b.gep(apart, [ll.Constant(i32, 32 * k)], source_etype=i32), align=4)
    words = [b.load(b.gep(parts, [ll.Constant(i32, 32 * k)], source_etype=i32), typ=lanes,
                    align=4)
             for k in range(4)]
    b.store(join_quads(b, words), together, align=4)   # (numpy's arrays: 4-byte aligned)
    b.ret_void()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), target_machine())
    engine.finalize_object()
    run = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)(engine.get_function_address("f"))
    x = np.arange(128, dtype=np.int32) * 7 + 3
    words = (np.arange(4, dtype=np.int32)[:, None] * 1000 + np.arange(32, dtype=np.int32))
    got_apart = np.zeros((4, 32), np.int32)
    got_together = np.zeros(128, np.int32)
    run(x.ctypes.data, got_apart.ctypes.data, np.ascontiguousarray(words).ctypes.data,
        got_together.ctypes.data)
    assert (got_apart == x.reshape(32, 4).T).all()
    assert (got_together == words.T.reshape(128)).all()
