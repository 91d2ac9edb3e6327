"""cpu_uniform.py: which registers a warp gang keeps as one scalar. Each case is a kernel
whose registers' classification is asserted, and run on the gang path against numpy where a
wrong "uniform" would give every lane one lane's value."""

from __future__ import annotations

import numpy as np

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu_uniform import uniform_registers

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
