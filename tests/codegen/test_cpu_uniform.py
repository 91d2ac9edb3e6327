"""passes/uniformity.py: which registers a warp gang keeps as one scalar. Each case is a kernel
whose registers' classification is asserted, and run on the gang path against numpy where a
wrong "uniform" would give every lane one lane's value."""

from __future__ import annotations

import numpy as np

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.passes.uniformity import uniform_registers

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# %r3 gets a constant on each side of an if on the lane's parity: the same value in the lanes
# that write it, but different lanes hold different values after the join. %r6 (a loop
# counter of a loop every lane runs alike) and %r7 (written after lanes past n returned) are
# the same in every lane. %r9 counts a loop whose trip count differs by lane.
KERNEL = """
.visible .entry k(.param .u64 out, .param .u32 n)
{
.reg .pred %p<6>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out]; ld.param.u32 %r10, [n];
mov.u32 %r1, %tid.x;
setp.ge.u32 %p5, %r1, %r10;
@%p5 bra END;
and.b32 %r2, %r1, 1; setp.eq.u32 %p1, %r2, 1;
@%p1 bra ODD;
mov.u32 %r3, 10;
bra JOIN;
ODD:
mov.u32 %r3, 20;
JOIN:
mov.u32 %r6, 0; mov.u32 %r7, 7;
LOOP:
add.u32 %r6, %r6, 1; setp.lt.u32 %p2, %r6, 4;
@%p2 bra LOOP;
mov.u32 %r9, 0;
COUNT:
add.u32 %r9, %r9, 1; and.b32 %r8, %r1, 3; setp.le.u32 %p3, %r9, %r8;
@%p3 bra COUNT;
mad.lo.u32 %r4, %r3, 1000, %r9; mad.lo.u32 %r4, %r6, 100, %r4; add.u32 %r4, %r4, %r7;
mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r4;
END:
ret;
}
"""


def test_classification():
    module = Program(HEADER + KERNEL, code_type="ptx").compile("native").module
    kernel = module.functions["k"]
    uniform = {r.name for r in uniform_registers(kernel)}
    assert {"%r6", "%r7", "%r10", "%rd1"} <= uniform
    assert not {"%r1", "%r2", "%r3", "%r4", "%r8", "%r9", "%p1", "%p3"} & uniform


def test_values_written_apart_stay_apart():
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(HEADER + KERNEL, code_type="ptx").compile("native").get_kernel("k")
    out = np.zeros(64, np.uint32)
    buf = dev.allocate(out.nbytes, stream=stream)
    buf.copy_from(out, stream=stream)
    n = 50
    launch(stream, LaunchConfig(grid=1, block=64), kernel, buf, np.uint32(n))
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    t = np.arange(n)
    expected = np.where(t % 2, 20, 10) * 1000 + (t % 4 + 1) + 4 * 100 + 7
    np.testing.assert_array_equal(out[:n], expected)
    assert (out[n:] == 0).all()


# threadIdx.x >> 5 (the warp index in 32-wide rows) picks each warp's element of a table,
# and a branch on it; threadIdx.y is the row. Uniform only where rows are multiples of 32
# threads wide: in 48-wide rows the warps straddle rows and their lanes differ.
WARP_INDEX = """
.visible .entry w(.param .u64 out, .param .u64 table)
{
.reg .pred %p<2>; .reg .b32 %r<10>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [out]; ld.param.u64 %rd4, [table];
mov.u32 %r1, %tid.x; mov.u32 %r2, %r1; shr.u32 %r3, %r2, 5; div.u32 %r9, %r1, 64;
mov.u32 %r7, %tid.y; mov.u32 %r8, %ntid.x; mad.lo.u32 %r6, %r7, %r8, %r1;
mul.wide.u32 %rd5, %r3, 4; add.u64 %rd6, %rd4, %rd5; ld.global.u32 %r4, [%rd6];
setp.eq.u32 %p1, %r3, 1;
@%p1 bra SKIP;
add.u32 %r4, %r4, %r9;
SKIP:
mad.lo.u32 %r4, %r4, 1000, %r1;
mul.wide.u32 %rd2, %r6, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r4;
ret;
}
"""


def test_warp_index_is_uniform_in_32_wide_rows():
    module = Program(HEADER + WARP_INDEX, code_type="ptx").compile("native").module
    kernel = module.functions["w"]
    wide = {r.name for r in uniform_registers(kernel, (64, 2, 1))}
    assert {"%r3", "%r9", "%p1", "%r7"} <= wide      # %r7: threadIdx.y, rows of 64
    assert not {"%r1", "%r2", "%r4", "%r6"} & wide
    narrow = {r.name for r in uniform_registers(kernel, (48, 2, 1))}
    assert not {"%r3", "%r9", "%p1", "%r7"} & narrow
    assert not {"%r3", "%r7"} & {r.name for r in uniform_registers(kernel)}

    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(HEADER + WARP_INDEX, code_type="ptx").compile("native").get_kernel("w")
    table = np.array([5, 7, 11, 13], np.uint32)
    for x in (64, 48, 96):
        out = np.zeros(2 * x, np.uint32)
        bufs = [dev.allocate(a.nbytes, stream=stream) for a in (out, table)]
        bufs[1].copy_from(table, stream=stream)
        launch(stream, LaunchConfig(grid=1, block=(x, 2)), kernel, *bufs)
        bufs[0].copy_to(out, stream=stream)
        stream.sync()
        assert kernel._binary(dev).gang_refusal is None
        t = np.arange(x)
        w = t >> 5
        value = table[w] + np.where(w == 1, 0, t // 64)
        want = np.concatenate([value * 1000 + t] * 2).astype(np.uint32)
        assert (out == want).all(), x


# A loop whose trip count differs by lane (0 to 7), then code every lane runs together:
# min-PC scheduling keeps the lanes that left the loop waiting at its exit (later in program
# order) until the others leave it too, so %r6 (the block index plus one, written there) is
# one scalar and the full-mask shuffle starts no segment (a grid-stride loop before a warp
# reduction: reduce_warp.cu). In LATE_EXIT the exit comes before the loop in program order:
# lanes that leave early run it while others still loop, so %r6 stays a vector there.
AFTER_LOOP = """
.visible .entry after_loop(.param .u64 out)
{
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out]; mov.u32 %r6, 0;
mov.u32 %r1, %tid.x; and.b32 %r2, %r1, 7; mov.u32 %r3, 0; mov.u32 %r4, 0;
LOOP:
setp.ge.u32 %p1, %r4, %r2;
@%p1 bra DONE;
add.u32 %r3, %r3, %r4; add.u32 %r4, %r4, 1;
bra.uni LOOP;
DONE:
mov.u32 %r5, %ctaid.x; add.u32 %r6, %r5, 1;
shfl.sync.bfly.b32 %r7, %r3, 1, 31, -1;
mad.lo.u32 %r8, %r6, 1000, %r7;
mad.lo.u32 %r10, %r5, 64, %r1;
mul.wide.u32 %rd2, %r10, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r8;
ret;
}
"""

LATE_EXIT = """
.visible .entry late_exit(.param .u64 out)
{
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out]; mov.u32 %r6, 0;
mov.u32 %r1, %tid.x; and.b32 %r2, %r1, 7; mov.u32 %r3, 0; mov.u32 %r4, 0;
bra.uni LOOP;
DONE:
mov.u32 %r5, %ctaid.x; add.u32 %r6, %r5, 1;
mad.lo.u32 %r8, %r6, 1000, %r3;
mad.lo.u32 %r10, %r5, 64, %r1;
mul.wide.u32 %rd2, %r10, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r8;
ret;
LOOP:
setp.ge.u32 %p1, %r4, %r2;
@%p1 bra DONE;
add.u32 %r3, %r3, %r4; add.u32 %r4, %r4, 1;
bra.uni LOOP;
}
"""


def test_lanes_that_leave_a_loop_apart_meet_after_it():
    from ptxport.passes.segment import inline_warp_ops

    program = Program(HEADER + AFTER_LOOP + LATE_EXIT, code_type="ptx").compile("native")
    after, late = (program.module.functions[name] for name in ("after_loop", "late_exit"))
    uniform = uniform_registers(after)
    assert "%r6" in {r.name for r in uniform}
    assert not {"%r3", "%r4", "%r7", "%r8", "%p1"} & {r.name for r in uniform}
    assert len(inline_warp_ops(after, uniform)) == 1
    # (%r6 is written twice: not a block constant, which is uniform wherever written)
    late_uniform = {r.name for r in uniform_registers(late)}
    assert "%r6" not in late_uniform
    # %r5 = %ctaid.x, written once where lanes are apart: each lane that writes it writes
    # the block's one value (passes/uniformity.py's block constants)
    assert "%r5" in late_uniform

    dev = Device("cpu")
    stream = dev.create_stream()
    t = np.arange(64) & 7
    sums = t * (t - 1) // 2
    for name, expected in (("after_loop", sums[np.arange(64) ^ 1]), ("late_exit", sums)):
        kernel = program.get_kernel(name)
        out = np.zeros(2 * 64, np.uint32)
        buf = dev.allocate(out.nbytes, stream=stream)
        launch(stream, LaunchConfig(grid=2, block=64), kernel, buf)
        buf.copy_to(out, stream=stream)
        stream.sync()
        assert kernel._binary(dev).gang_refusal is None
        np.testing.assert_array_equal(out, np.concatenate([expected + 1000, expected + 2000]))
