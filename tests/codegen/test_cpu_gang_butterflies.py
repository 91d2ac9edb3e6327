"""Whole-warp butterfly reductions on warp gangs (codegen/targets/cpu/gang/butterflies.py: a
broadcast of lane 0 after the last step, which changes no value): which chains get one,
and each lane's result against thread by thread, bit for bit, for sums and maxima with
NaNs and signed zeros, offsets in either order, whole and partial warps."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import run_ptx
from ptxport.codegen.targets.cpu.gang.butterflies import broadcast_butterflies
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"


def _ptx(op: str = "max.f32", offsets=(16, 8, 4, 2, 1), mask: str = "-1") -> str:
    """dst[t] = the reduction of src over t's warp by butterfly steps with `offsets`."""
    steps = []
    for k, o in enumerate(offsets):
        steps.append(f"shfl.sync.bfly.b32 %t{k}, %v{k}, {o}, 31, {mask};")
        steps.append(f"{op} %v{k + 1}, %v{k}, %t{k};")
    n = len(offsets)
    return HEADER + f""".visible .entry k(.param .u64 src, .param .u64 dst)
{{
.reg .b32 %r<4>; .reg .b32 %v<{n + 2}>; .reg .b32 %t<{n + 1}>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.b32 %v0, [%rd4];
{chr(10).join(steps)}
add.s64 %rd5, %rd2, %rd3;
st.global.b32 [%rd5], %v{n};
ret;
}}
"""


def _broadcasts(ptx: str, threads: int = 64) -> int:
    kernel = build(parse(ptx)).functions["k"]
    out = broadcast_butterflies(kernel, (threads, 1, 1))
    return sum(i.opcode == "shfl" and i.spec.get("mode") == "idx" for i in out.instructions())


def test_a_whole_reduction_gets_one_broadcast():
    assert _broadcasts(_ptx()) == 1
    assert _broadcasts(_ptx(offsets=(1, 2, 4, 8, 16))) == 1
    assert _broadcasts(_ptx("add.f32")) == 1
    assert _broadcasts(_ptx("add.s32")) == 1


@pytest.mark.parametrize("ptx", [
    _ptx(offsets=(16, 8, 4, 2)),                # lanes not all alike yet
    _ptx(offsets=(2, 1)),                       # Triton's cross-warp stage: groups of four
    _ptx(offsets=(16, 8, 4, 2, 2)),             # an offset twice, one missing
    _ptx("sub.f32"),                            # not commutative
    _ptx(mask="0xffff"),                        # half the warp
])
def test_no_broadcast(ptx):
    assert _broadcasts(ptx) == 0


def test_no_broadcast_where_warps_are_partial():
    assert _broadcasts(_ptx(), threads=48) == 0


def _run(ptx: str, src: np.ndarray) -> np.ndarray:
    out = np.zeros_like(src)
    run_ptx(ptx, "k", grid=1, block=src.size, args=[src.copy(), out])
    return out


@pytest.mark.parametrize("threads", [64, 96, 48])
@pytest.mark.parametrize("op, offsets", [("max.f32", (16, 8, 4, 2, 1)),
                                         ("add.f32", (16, 8, 4, 2, 1)),
                                         ("min.f32", (1, 2, 4, 8, 16)),
                                         ("add.s32", (16, 8, 4, 2, 1))])
def test_each_lane_as_thread_by_thread(threads, op, offsets, cpu_options):
    rng = np.random.default_rng(threads)
    src = rng.standard_normal(threads).astype(np.float32)
    src[3] = np.nan                             # a NaN in the first warp
    src[32:48] = -0.0                           # signed zeros in the second
    src[40] = 0.0
    if threads > 64:
        src[64:] = np.nan                       # a warp of NaNs
    ptx = _ptx(op, offsets)
    got = _run(ptx, src).view(np.uint32)
    cpu_options(gang=False)
    want = _run(ptx, src).view(np.uint32)
    np.testing.assert_array_equal(got, want)
    for w in range(0, threads, 32):             # (a whole warp's lanes agree)
        assert len(set(want[w:w + 32].tolist())) == 1 or threads - w < 32
