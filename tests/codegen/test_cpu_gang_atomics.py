"""Warp gangs' atomics (codegen/targets/cpu/gang/atomics.py): a warp's lanes
that hit one address all count, and each lane's old value is the memory as the lanes before
it in some order left it. Shared memory takes plain read-modify-writes lane after lane
(straight-line over a segment's full mask, a loop over the mask's bits otherwise), global
memory real atomics; each with uniform and per-lane operands, 32- and 64-bit addresses."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"
BINS, THREADS, BLOCKS = 3, 96, 4

# Thread t of each block adds VALUE to bins[t % 3] (lanes of a warp collide on three
# addresses), where GUARD lets it; its old value goes to olds[block, t] (-1: it did not
# add), and each block's bins to out[block, :] afterwards (GUARD: a predicate, or "" for
# none). ADDRESS: the bin's address in
# %r7 (32-bit shared), %rd5 (64-bit shared window) or %rd6 (a generic address).
BODY = """
.reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<12>;
.shared .align 4 .b32 bins[96];
ld.param.u64 %rd1, [olds]; ld.param.u64 %rd2, [out];
mov.u32 %r1, %tid.x; mov.u32 %r9, %ctaid.x;
setp.lt.u32 %p1, %r1, MODULUS;
mov.u32 %r3, bins;
shl.b32 %r2, %r1, 2; add.u32 %r4, %r3, %r2;
@%p1 st.shared.u32 [%r4], 0;
bar.sync 0;
rem.u32 %r5, %r1, MODULUS;
shl.b32 %r6, %r5, 2; add.u32 %r7, %r3, %r6;
cvt.u64.u32 %rd5, %r7; cvta.shared.u64 %rd6, %rd5;
add.u32 %r10, %r1, 1;
mov.u32 %r8, -1;
and.b32 %r11, %r1, 5; setp.ne.u32 %p3, %r11, 4;
GUARDatomSPACE.add.u32 %r8, [ADDRESS], VALUE;
mad.lo.u32 %r11, %r9, 96, %r1;
mul.wide.u32 %rd3, %r11, 4; add.s64 %rd4, %rd1, %rd3;
st.global.u32 [%rd4], %r8;
bar.sync 0;
mad.lo.u32 %r11, %r9, MODULUS, %r1;
mul.wide.u32 %rd3, %r11, 4; add.s64 %rd4, %rd2, %rd3;
@%p1 ld.shared.u32 %r11, [%r4];
@%p1 st.global.u32 [%rd4], %r11;
ret;"""


def _kernel(space: str, address: str, value: str, guard: str, bins: int = BINS) -> str:
    body = (BODY.replace("SPACE", f".{space}" if space else "").replace("ADDRESS", address)
            .replace("VALUE", value).replace("GUARD", f"@{guard} " if guard else "")
            .replace("MODULUS", str(bins)))
    return HEADER + f".visible .entry k(.param .u64 olds, .param .u64 out)\n{{{body}\n}}\n"


def _run(ptx: str, bins: int = BINS) -> tuple[np.ndarray, np.ndarray]:
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    assert kernel._binary(dev).gang_refusal is None
    olds = np.zeros((BLOCKS, THREADS), np.int32)
    out = np.zeros((BLOCKS, bins), np.uint32)
    buffers = [dev.allocate(a.nbytes, stream=stream) for a in (olds, out)]
    launch(stream, LaunchConfig(grid=BLOCKS, block=THREADS), kernel, *buffers)
    for buffer, array in zip(buffers, (olds, out), strict=True):
        buffer.copy_to(array, stream=stream)
    stream.sync()
    return olds, out


def _check_block(olds: np.ndarray, bins: np.ndarray, values: np.ndarray,
                 adds: np.ndarray) -> None:
    """Each bin holds the sum of its adding threads' values, and ordered by their old
    values, each thread saw exactly the sum of those before it."""
    for b in range(bins.size):
        lanes = [t for t in range(THREADS) if t % bins.size == b and adds[t]]
        assert bins[b] == sum(values[t] for t in lanes)
        seen = 0
        for t in sorted(lanes, key=lambda t: olds[t]):
            assert olds[t] == seen, f"thread {t} of bin {b}: old {olds[t]}, expected {seen}"
            seen += values[t]
    assert (olds[~adds] == -1).all()


@pytest.mark.parametrize("address", ["%r7", "%rd5"])
@pytest.mark.parametrize("value", ["1", "%r10"])
@pytest.mark.parametrize("guard", ["", "%p3"])
def test_shared_lanes_on_one_address_all_count(address, value, guard):
    # (unguarded: the full-mask copy's straight-line lanes; %p3 leaves out the lanes with
    # t & 5 == 4: the loop over the mask's bits)
    olds, out = _run(_kernel("shared", address, value, guard))
    t = np.arange(THREADS)
    values = np.ones(THREADS, np.int64) if value == "1" else t + 1
    adds = np.ones(THREADS, bool) if not guard else (t & 5) != 4
    for block in range(BLOCKS):
        _check_block(olds[block], out[block], values, adds)


def test_generic_address_of_shared_memory():
    olds, out = _run(_kernel("", "%rd6", "%r10", "%p3"))
    t = np.arange(THREADS)
    for block in range(BLOCKS):
        _check_block(olds[block], out[block], t + 1, (t & 5) != 4)


@pytest.mark.parametrize("bins", [1, 96])
@pytest.mark.parametrize("value", ["1", "7", "%r10"])
@pytest.mark.parametrize("guard", ["", "%p3"])
def test_shared_lanes_all_on_one_bin_or_each_on_its_own(bins, value, guard):
    # one bin: the warp's adds of a value alike in all lanes are one add of n times it (the
    # old values the first's plus each lane's rank times it); 96: no two lanes collide
    olds, out = _run(_kernel("shared", "%r7", value, guard, bins), bins)
    t = np.arange(THREADS)
    values = t + 1 if value == "%r10" else np.full(THREADS, int(value), np.int64)
    adds = np.ones(THREADS, bool) if not guard else (t & 5) != 4
    for block in range(BLOCKS):
        _check_block(olds[block], out[block], values, adds)
    if bins == 1 and value != "%r10":
        # lane order within each warp: a lane's old value is the warp's first one's plus
        # the value times the adding lanes below it
        for block in range(BLOCKS):
            for warp in range(THREADS // 32):
                lanes = t[warp * 32:(warp + 1) * 32]
                mine = lanes[adds[lanes]]
                start = olds[block, mine[0]]
                assert (olds[block, mine] == start + values[0] * np.arange(mine.size)).all()


# Every thread of the grid adds VALUE to one global counter (a u32 or u64), old values kept.
GLOBAL_COUNTER = """
.reg .pred %p<2>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [olds]; ld.param.u64 %rd2, [counter];
mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x;
mad.lo.u32 %r4, %r2, %r3, %r1;
and.b32 %r5, %r1, 3; setp.ne.u32 %p1, %r5, 2;
cvt.u64.u32 %rd3, %r4; mul.lo.u64 %rd4, %rd3, 8; add.s64 %rd5, %rd1, %rd4;
mov.u64 %rd6, -1;
GUARDatom.global.add.TYPE DEST, [%rd2], 3;
st.global.u64 [%rd5], %rd6;
ret;"""


@pytest.mark.parametrize("type_", ["u32", "u64"])
@pytest.mark.parametrize("guard", ["", "%p1"])
def test_global_counter_of_the_whole_grid(type_, guard):
    dest = "%rd6" if type_ == "u64" else "%r6"
    body = (GLOBAL_COUNTER.replace("TYPE", type_).replace("DEST", dest)
            .replace("GUARD", f"@{guard} " if guard else ""))
    if type_ == "u32":
        body = body.replace("st.global.u64 [%rd5], %rd6;",
                            "cvt.u64.u32 %rd6, %r6; @!%p1 mov.u64 %rd6, -1;\n"
                            "st.global.u64 [%rd5], %rd6;" if guard else
                            "cvt.u64.u32 %rd6, %r6; st.global.u64 [%rd5], %rd6;")
    ptx = HEADER + f".visible .entry k(.param .u64 olds, .param .u64 counter)\n{{{body}\n}}\n"
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    assert kernel._binary(dev).gang_refusal is None
    threads = 64 * 96
    olds = np.zeros(threads, np.int64)
    counter = np.zeros(1, np.uint64 if type_ == "u64" else np.uint32)
    buffers = [dev.allocate(a.nbytes, stream=stream) for a in (olds, counter)]
    buffers[1].copy_from(counter, stream=stream)
    launch(stream, LaunchConfig(grid=64, block=96), kernel, *buffers)
    for buffer, array in zip(buffers, (olds, counter), strict=True):
        buffer.copy_to(array, stream=stream)
    stream.sync()
    adds = np.ones(threads, bool) if not guard else (np.arange(threads) & 3) != 2
    assert counter[0] == 3 * adds.sum()
    assert (olds[~adds] == -1).all()
    assert (np.sort(olds[adds]) == 3 * np.arange(adds.sum())).all()
