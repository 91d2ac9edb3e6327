"""Shared-memory accesses that passes/shared_bounds.py proves inside their variable for the
launch's block shape run unchecked on the warp gangs; for a larger block the same kernel's
accesses are checked again and fault at their first bad lane instead of writing past the
tile."""

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.shared_bounds import inside, shared_bounds
from ptxport.ptx.parser import parse

# a 16x16 tile transposed through shared memory: thread (tx, ty) stores its index at
# tile[ty][tx] and, after the barrier, writes tile[tx][ty] to out[ty * 16 + tx]
TILE = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<13>; .reg .b64 %rd<4>;
.shared .align 4 .b32 tile[256];
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y;
shl.b32 %r3, %r2, 4; add.s32 %r4, %r3, %r1;
mov.u32 %r5, tile; shl.b32 %r6, %r4, 2; add.s32 %r7, %r5, %r6;
st.shared.u32 [%r7], %r4;
bar.sync 0;
shl.b32 %r8, %r1, 4; add.s32 %r9, %r8, %r2; shl.b32 %r10, %r9, 2; add.s32 %r11, %r5, %r10;
ld.shared.u32 %r12, [%r11];
mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r12;
ret;
}
"""


def _run(rows: int) -> np.ndarray:
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(TILE, code_type="ptx").compile("native").get_kernel("k")
    out = np.zeros(16 * max(rows, 16), np.uint32)
    buffer = dev.allocate(out.nbytes, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=(16, rows)), kernel, buffer)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return out


def _proven(block) -> list[bool]:
    module = build(parse(TILE, "tile.ptx"))
    verify(module)
    kernel = module.functions["k"]
    found = shared_bounds(kernel, block)
    return [inside(found.get(i), 4) for i in kernel.instructions()
            if i.opcode in ("ld", "st") and i.spec.get("space") == "shared"]


def test_a_16_by_16_tile_is_proven_and_transposes():
    assert _proven((16, 16, 1)) == [True, True]
    t = np.arange(256)
    assert (_run(16) == (t % 16) * 16 + t // 16).all()


def test_a_taller_block_is_checked_and_faults():
    assert _proven((16, 17, 1)) == [False, False]
    # row 16's first thread stores at tile[256], the first word past the tile
    line = next(n for n, text in enumerate(TILE.splitlines(), 1) if "st.shared" in text)
    with pytest.raises(IllegalAddressError, match=r"wrote 4 bytes at address 0x[0-9a-f]+, "
                       rf"outside every allocation, at line {line} in block \(0, 0, 0\), "
                       r"thread 256;"):
        _run(17)
