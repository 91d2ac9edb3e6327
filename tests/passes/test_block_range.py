"""The block_range pass: a kernel launched on a box of blocks computes them as the whole
grid's blocks (hidden first-block and grid-size parameters)."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.frontends import nvrtc
from ptxport.ir import nodes as ir
from ptxport.passes import block_range
from ptxport.runtime.program import ObjectCode

pytestmark = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC builds the kernel")

SOURCE = r"""
__device__ __noinline__ unsigned row() { return blockIdx.y; }
extern "C" __global__ void where(unsigned *out) {
    unsigned b = (blockIdx.z * gridDim.y + row()) * gridDim.x + blockIdx.x;
    unsigned t = b * blockDim.x + threadIdx.x;
    out[t] = b * 1000000 + gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
}
"""


def test_pass_adds_hidden_parameters_and_leaves_the_module_alone():
    code = Program(SOURCE, "c++").compile()
    module = block_range.run(code.module, "where")
    kernel = module.functions["where"]
    assert [p.name for p in kernel.params[-6:]] == list(block_range.HIDDEN_PARAMS)
    assert len(code.module.functions["where"].params) == 1
    # no read of %ctaid is left unadjusted: each is a mov that the next instruction adds
    # the first block to; %nctaid is not read at all
    hidden = {f"%{name}" for name in block_range.HIDDEN_PARAMS}
    instructions = list(kernel.instructions())
    reads = 0
    for inst, following in zip(instructions, instructions[1:], strict=False):
        for operand in inst.operands:
            if isinstance(operand, ir.SpecialRegister) and operand.name == "%ctaid":
                reads += 1
                assert inst.opcode == "mov" and following.opcode == "add"
                assert following.operands[1] is inst.operands[0]
                assert following.operands[2].name in hidden
            assert not (isinstance(operand, ir.SpecialRegister) and operand.name == "%nctaid")
    assert reads == 3          # x and z in the kernel, y in the inlined row()


@pytest.mark.parametrize("device", ["cpu", "opencl:0"])
def test_a_box_of_blocks_computes_the_whole_grids_blocks(device):
    from ptxport.runtime.backends import availability

    if device == "opencl:0" and not availability("opencl")[0]:
        pytest.skip(f"no OpenCL device: {availability('opencl')[1]}")
    code = Program(SOURCE, "c++").compile()
    ranged = ObjectCode(code.ptx, block_range.run(code.module, "where"), "ranged")
    dev = Device(device)
    stream = dev.create_stream()
    grid, block = (3, 4, 2), 32
    total = 3 * 4 * 2 * block
    out = dev.allocate(4 * total, stream=stream)
    out.fill(0, 4, stream=stream)
    # the box y in [1, 3), z = 1 of the grid (3, 4, 2)
    launch(stream, LaunchConfig(grid=(3, 2, 1), block=block), ranged.get_kernel("where"), out,
           *map(np.uint32, (0, 1, 1, *grid)))
    host = np.empty(total, np.uint32)
    out.copy_to(host, stream=stream)
    stream.sync()
    want = np.zeros(total, np.uint32)
    for z, y, x in [(1, y, x) for y in (1, 2) for x in range(3)]:
        b = (z * 4 + y) * 3 + x
        want[b * block:(b + 1) * block] = b * 1000000 + 30402
    np.testing.assert_array_equal(host, want)
