"""Shared-memory accesses that passes/shared_bounds.py proves inside their variable for the
launch's block shape run unchecked on the warp gangs; for a larger block the same kernel's
accesses are checked again and fault at their first bad lane instead of writing past the
tile."""

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
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
    out = np.zeros(16 * max(rows, 16), np.uint32)
    assert launch_on_cpu(TILE, LaunchConfig(grid=1, block=(16, rows)), out).gang_refusal is None
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



# A stencil's tile: an 18x18 tile with a one-word border; thread (tx, ty) of a 16x16 block
# stores t = 16 * ty + tx at tile[ty + 1][tx + 1] and, after the barrier, the threads inside
# the block's border write the sum of their four neighbours' values, read at [%r7+4],
# [%r7-4], [%r7-72] and [%r7+`below`] (72: the next row).
def _halo(below: int) -> str:
    return f""".version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{{
.reg .b32 %r<20>; .reg .b64 %rd<4>; .reg .pred %p<4>;
.shared .align 4 .b32 tile[324];
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y;
shl.b32 %r3, %r2, 4; add.s32 %r4, %r3, %r1;
mad.lo.s32 %r5, %r2, 18, %r1; add.s32 %r6, %r5, 19; shl.b32 %r10, %r6, 2;
mov.u32 %r11, tile; add.s32 %r7, %r11, %r10;
st.shared.u32 [%r7], %r4;
bar.sync 0;
mov.u32 %r12, 0;
add.s32 %r8, %r1, -1; setp.gt.u32 %p1, %r8, 13;
add.s32 %r9, %r2, -1; setp.gt.u32 %p2, %r9, 13;
or.pred %p3, %p1, %p2;
@%p3 bra DONE;
ld.shared.u32 %r13, [%r7+4]; ld.shared.u32 %r14, [%r7+-4];
ld.shared.u32 %r15, [%r7+{below}]; ld.shared.u32 %r16, [%r7+-72];
add.s32 %r17, %r13, %r14; add.s32 %r18, %r15, %r16; add.s32 %r12, %r17, %r18;
DONE:
mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r12;
ret;
}}
"""


def _run_halo(below: int) -> np.ndarray:
    out = np.zeros(256, np.uint32)
    binary = launch_on_cpu(_halo(below), LaunchConfig(grid=1, block=(16, 16)), out)
    assert binary.gang_refusal is None
    return out


def _halo_reads_proven(below: int) -> list[bool]:
    module = build(parse(_halo(below), "halo.ptx"))
    verify(module)
    kernel = module.functions["k"]
    found = shared_bounds(kernel, (16, 16, 1))
    return [inside(found.get(i), 4) for i in kernel.instructions()
            if i.opcode == "ld" and i.spec.get("space") == "shared"]


def test_proven_halo_reads_add_their_offsets_after_the_extension():
    from ptxport.codegen.targets.cpu.gang.build import build_gang
    from ptxport.codegen.targets.cpu.options import CpuOptions

    assert _halo_reads_proven(72) == [True, True, True, True]
    t = np.arange(256).reshape(16, 16)
    expected = np.zeros((16, 16), np.int64)
    expected[1:15, 1:15] = t[1:15, 2:] + t[1:15, :14] + t[2:, 1:15] + t[:14, 1:15]
    assert (_run_halo(72).reshape(16, 16) == expected).all()
    # a proven read's offset is added to its pointer in 64 bits, to the pointer made from
    # the base's one extension (a negative offset only there: the frame's are positive),
    # not to its 32-bit address before the extension
    text = str(build_gang(build(parse(_halo(72), "halo.ptx")), "k", (16, 16, 1),
                          CpuOptions())[0])
    lines = text.splitlines()
    after = [before for before, line in zip(lines, lines[1:], strict=False)
             if "getelementptr i8" in line and line.endswith("i64 -72")]
    assert after and all("getelementptr i8" in line and " sext " not in line
                         for line in after)


def test_a_halo_read_past_the_tile_is_checked_and_faults():
    # [%r7+160]: two rows down and to the right, past the tile (1296 bytes) for the
    # threads (13, 14) and (14, 14)
    assert _halo_reads_proven(160) == [True, True, False, True]
    line = next(n for n, text in enumerate(_halo(160).splitlines(), 1) if "+160]" in text)
    with pytest.raises(IllegalAddressError, match=r"read 4 bytes at address 0x[0-9a-f]+, "
                       rf"outside every allocation, at line {line} in block \(0, 0, 0\), "
                       r"thread 237;"):
        _run_halo(160)


# A histogram's shared atomics, bins[data[t]] of bytes: inside a 256-word array whatever the
# bytes (unchecked), past the end of a 255-word one for the byte 255 (checked: it faults)
BINS = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 data, .param .u64 out)
{
.reg .b32 %r<12>; .reg .b64 %rd<8>;
.shared .align 4 .b32 bins[WORDS];
ld.param.u64 %rd1, [data]; ld.param.u64 %rd2, [out];
mov.u32 %r1, %tid.x; mov.u32 %r2, bins;
shl.b32 %r3, %r1, 2; add.s32 %r4, %r2, %r3;
mov.u32 %r5, 0;
st.shared.u32 [%r4], %r5;
bar.sync 0;
cvt.u64.u32 %rd3, %r1; add.s64 %rd4, %rd1, %rd3;
ld.global.u8 %r6, [%rd4];
shl.b32 %r7, %r6, 2; add.s32 %r8, %r2, %r7;
atom.shared.add.u32 %r9, [%r8], 1;
bar.sync 0;
ld.shared.u32 %r10, [%r4];
mul.wide.u32 %rd5, %r1, 4; add.s64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r10;
ret;
}
"""


def _bins(words: int, data: np.ndarray, threads: int) -> np.ndarray:
    ptx = BINS.replace("WORDS", str(words))
    module = build(parse(ptx, "bins.ptx"))
    verify(module)
    kernel = module.functions["k"]
    atoms = [i for i in kernel.instructions() if i.opcode == "atom"]
    assert inside(shared_bounds(kernel, (threads, 1, 1)).get(atoms[0]), 4) == (words >= 256)
    dev = Device("cpu")
    stream = dev.create_stream()
    compiled = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    source = dev.allocate(data.nbytes, stream=stream)
    source.copy_from(data, stream=stream)
    out = np.zeros(threads, np.uint32)
    buffer = dev.allocate(out.nbytes, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=threads), compiled, source, buffer)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    return out


def test_byte_indexed_shared_atomics_are_proven_and_count():
    data = np.random.default_rng(5).integers(0, 256, 256, dtype=np.uint8)
    data[:40] = 7      # a bin that many lanes of one warp hit
    assert (_bins(256, data, 256) == np.bincount(data, minlength=256)).all()


def test_byte_indexed_shared_atomics_past_the_array_fault():
    data = np.zeros(255, np.uint8)
    data[100] = 255    # bins[255], the word past a 255-word array
    line = next(n for n, text in enumerate(BINS.splitlines(), 1) if "atom.shared" in text)
    with pytest.raises(IllegalAddressError, match=rf"at line {line} in block \(0, 0, 0\), "
                       r"thread 100;"):
        _bins(255, data, 255)
