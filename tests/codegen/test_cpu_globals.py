"""A module's .global variables are one for all its kernels on the CPU, as in CUDA (each
kernel's code binds them to the module's storage at load time), and two loads of the same
module have their own."""

from __future__ import annotations

import numpy as np

from ptxport import Device, LaunchConfig, Program, launch

PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .global .align 4 .u32 counter = 5;
.visible .global .align 8 .u64 where = counter;
.visible .entry bump()
{
    .reg .b32 %r<3>;
    ld.global.u32 %r1, [counter];
    add.u32 %r2, %r1, 10;
    st.global.u32 [counter], %r2;
    ret;
}
.visible .entry read(.param .u64 out)
{
    .reg .b32 %r<3>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.global.u64 %rd2, [where];
    ld.u32 %r1, [%rd2];
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


def _read(program, stream, device) -> int:
    buffer = device.allocate(4, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=1), program.get_kernel("read"), buffer)
    out = np.zeros(1, np.uint32)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    return int(out[0])


def test_kernels_of_a_module_share_its_variables():
    device = Device("cpu")
    stream = device.create_stream()
    first = Program(PTX, code_type="ptx").compile("native")
    second = Program(PTX, code_type="ptx").compile("native")
    assert _read(first, stream, device) == 5
    for _ in range(2):
        launch(stream, LaunchConfig(grid=1, block=1), first.get_kernel("bump"))
    # `read` sees `bump`'s writes, through an address initialized to the variable's
    assert _read(first, stream, device) == 25
    # another load of the module has its own variables
    assert _read(second, stream, device) == 5
