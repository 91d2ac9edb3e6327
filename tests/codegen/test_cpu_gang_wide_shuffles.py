"""Warp gangs' shuffles of a 64-bit value's halves (gang/warp.py `_half_of`): a double's
`__shfl_*_sync` is two shfl.b32 of halves split just before, by `mov.b64 {lo, hi}, x` (NVRTC
13.0) or by cvt.u32.u64 and shr.u64 (13.5); the gang moves x's 64-bit lanes and narrows
them. Bit for bit against a model of PTX's shfl (an out-of-range source keeps the lane's own
value), on warp gangs and thread by thread, with the cases where the halves are not x's at
the shfl: x written again after the split, a guarded split (some lanes keep older halves),
halves of two registers, a barrier between the split and the shfl where nothing reads x
after it (the warp's frame does not keep x there: gang/streams.held)."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import assert_same_words, kernel_ptx, launch_on_cpu
from ptxport import LaunchConfig

BODY = """
.reg .u32 %t, %lo, %hi, %lo2, %hi2, %u; .reg .u64 %pi, %pj, %po, %off, %a, %x, %x2, %y, %s;
.reg .pred %odd;
mov.u32 %t, %tid.x;
ld.param.u64 %pi, [pin]; ld.param.u64 %pj, [pin2]; ld.param.u64 %po, [pout];
mul.wide.u32 %off, %t, 8;
add.u64 %a, %pi, %off; ld.global.u64 %x, [%a];
add.u64 %a, %pj, %off; ld.global.u64 %x2, [%a];
add.u64 %a, %po, %off;
and.b32 %u, %t, 1; setp.ne.u32 %odd, %u, 0;
// 0: 13.0's split, down 3
mov.b64 {%lo, %hi}, %x;
shfl.sync.down.b32 %lo2, %lo, 3, 31, -1;
shfl.sync.down.b32 %hi2, %hi, 3, 31, -1;
mov.b64 %y, {%lo2, %hi2}; st.global.u64 [%a], %y; add.u64 %a, %a, 256;
// 1: 13.5's split, bfly 5 (high half first)
cvt.u32.u64 %lo, %x; shr.u64 %s, %x, 32; cvt.u32.u64 %hi, %s;
shfl.sync.bfly.b32 %hi2, %hi, 5, 31, -1;
shfl.sync.bfly.b32 %lo2, %lo, 5, 31, -1;
mov.b64 %y, {%lo2, %hi2}; st.global.u64 [%a], %y; add.u64 %a, %a, 256;
// 2: x written after the split: the old x moves (up 2)
mov.b64 {%lo, %hi}, %x;
add.u64 %x, %x, 1;
shfl.sync.up.b32 %lo2, %lo, 2, 0, -1;
shfl.sync.up.b32 %hi2, %hi, 2, 0, -1;
mov.b64 %y, {%lo2, %hi2}; st.global.u64 [%a], %y; add.u64 %a, %a, 256;
// 3: a guarded split: even lanes keep the halves of x2 (idx 7)
mov.b64 {%lo, %hi}, %x2;
@%odd mov.b64 {%lo, %hi}, %x;
shfl.sync.idx.b32 %lo2, %lo, 7, 31, -1;
shfl.sync.idx.b32 %hi2, %hi, 7, 31, -1;
mov.b64 %y, {%lo2, %hi2}; st.global.u64 [%a], %y; add.u64 %a, %a, 256;
// 4: halves of two registers (lo from x, hi from x2), down 1
mov.b64 {%lo, %hi}, %x;
mov.b64 {%u, %hi}, %x2;
shfl.sync.down.b32 %lo2, %lo, 1, 31, -1;
shfl.sync.down.b32 %hi2, %hi, 1, 31, -1;
mov.b64 %y, {%lo2, %hi2}; st.global.u64 [%a], %y; add.u64 %a, %a, 256;
// 5: the high half of x2 by a signed shift (13.5's form from an s64), up 1
shr.s64 %s, %x2, 32; cvt.u32.u64 %hi, %s; cvt.u32.u64 %lo, %x2;
shfl.sync.up.b32 %hi2, %hi, 1, 0, -1;
shfl.sync.up.b32 %lo2, %lo, 1, 0, -1;
mov.b64 %y, {%lo2, %hi2}; st.global.u64 [%a], %y; add.u64 %a, %a, 256;
// 6: a barrier between x2's split and the shuffles (down 2), x2 read no more: a warp
// resumes after it without x2 (not in its frame), so the halves move, not x2
mov.b64 {%lo, %hi}, %x2;
bar.sync 0;
shfl.sync.down.b32 %lo2, %lo, 2, 31, -1;
shfl.sync.down.b32 %hi2, %hi, 2, 31, -1;
mov.b64 %y, {%lo2, %hi2}; st.global.u64 [%a], %y;
"""
PTX = kernel_ptx(BODY, ".param .u64 pin, .param .u64 pin2, .param .u64 pout")


def _moved(v: np.ndarray, mode: str, b: int) -> np.ndarray:
    """PTX's shfl of 32 lanes' values with clamp 31 (down, bfly, idx) or 0 (up)."""
    lanes = np.arange(32)
    source = {"down": lanes + b, "up": lanes - b, "bfly": lanes ^ b,
              "idx": np.full(32, b)}[mode]
    inside = (source >= 0) & (source <= 31)
    return np.where(inside, v[np.clip(source, 0, 31)], v)


def _model(x: np.ndarray, x2: np.ndarray) -> np.ndarray:
    odd = np.arange(32) % 2 == 1
    low, high = np.uint64(0xFFFF_FFFF), np.uint64(0xFFFF_FFFF_0000_0000)
    later = x + np.uint64(1)     # (case 2 adds 1 to x after its split)
    mixed = (later & low) | (x2 & high)
    return np.stack([_moved(x, "down", 3), _moved(x, "bfly", 5), _moved(x, "up", 2),
                     _moved(np.where(odd, later, x2), "idx", 7), _moved(mixed, "down", 1),
                     _moved(x2, "up", 1), _moved(x2, "down", 2)])


@pytest.mark.parametrize("gang", [True, False])
def test_shuffles_of_64_bit_halves(cpu_options, gang):
    cpu_options(gang=gang)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1 << 63, 32, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    x2 = rng.integers(0, 1 << 63, 32, dtype=np.uint64) | np.uint64(1 << 63)
    out = np.zeros((7, 32), np.uint64)
    binary = launch_on_cpu(PTX, LaunchConfig(grid=1, block=32), x, x2, out)
    assert (binary.gang_refusal is None) == gang
    assert_same_words(out, _model(x, x2))
