"""Warp gangs' guarded runs (codegen/targets/cpu/gang/guarded_runs.py: straight-line code
whose every lasting effect is guarded by one predicate, jumped over by warps in which no
lane has it) and the joining of blocks split only by labels nothing branches to
(gang/fallthrough.py: Triton's debug labels). In the shape of Triton 3.6's cross-warp
reduction (a butterfly per warp, each warp's total to shared memory, a guarded middle
stage in the first lanes, the total broadcast), with labels between its instructions:
which runs qualify, and results against numpy and thread by thread, for 2-4 warps, with
the middle stage's lanes in any warp, NaNs and signed zeros."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import run_ptx
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.gang.fallthrough import join_fallthrough
from ptxport.codegen.targets.cpu.gang.guarded_runs import guarded_runs
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# out[t] = max over the block's threads of src[t] (PTX's max: a NaN gives the other
# operand, -0 below +0); the middle stage's lanes are threads FIRST..FIRST+3 (FIRST a
# multiple of 4), which read the slots of warps 0, 1, .. WARPS-1, 0, ..; thread FIRST
# stores the total. AFTER: instructions after the
# stage's guarded store, before the barrier.
REDUCE = HEADER + """.visible .entry k(.param .u64 src, .param .u64 dst)
{
.reg .pred %p<8>; .reg .b32 %r<40>; .reg .b64 %rd<6>;
.shared .align 16 .b8 smem[16];
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.f32 %r2, [%rd4];
$L__tmp1:
shfl.sync.bfly.b32 %r3, %r2, 16, 31, -1;
$L__tmp2:
max.f32 %r4, %r2, %r3;
$L__tmp3:
shfl.sync.bfly.b32 %r5, %r4, 8, 31, -1;
max.f32 %r6, %r4, %r5;
shfl.sync.bfly.b32 %r7, %r6, 4, 31, -1;
max.f32 %r8, %r6, %r7;
shfl.sync.bfly.b32 %r9, %r8, 2, 31, -1;
max.f32 %r10, %r8, %r9;
shfl.sync.bfly.b32 %r11, %r10, 1, 31, -1;
$L__tmp4:
max.f32 %r12, %r10, %r11;
and.b32 %r13, %r1, 31;
setp.eq.u32 %p1, %r13, 0;
shr.u32 %r14, %r1, 3;
and.b32 %r15, %r14, 12;
mov.u32 %r16, smem;
add.s32 %r17, %r16, %r15;
@%p1 st.shared.b32 [%r17], %r12;
$L__tmp5:
bar.sync 0;
sub.s32 %r18, %r1, FIRST;
setp.lt.u32 %p2, %r18, 4;
and.b32 %r19, %r18, 3;
setp.eq.u32 %p3, %r19, 0;
and.pred %p4, %p2, %p3;
rem.u32 %r28, %r18, WARPS;
shl.b32 %r20, %r28, 2;
add.s32 %r21, %r16, %r20;
$L__tmp6:
@%p2 ld.shared.b32 %r22, [%r21];
$L__tmp7:
shfl.sync.bfly.b32 %r23, %r22, 2, 31, -1;
$L__tmp8:
max.f32 %r24, %r22, %r23;
$L__tmp9:
shfl.sync.bfly.b32 %r25, %r24, 1, 31, -1;
$L__tmp10:
max.f32 %r26, %r24, %r25;
$L__tmp11:
@%p4 st.shared.b32 [%r16], %r26;
AFTER
$L__tmp12:
bar.sync 0;
ld.shared.b32 %r27, [smem];
add.s64 %rd5, %rd2, %rd3;
st.global.b32 [%rd5], %r27;
ret;
}
"""


def _ptx(first: int, warps: int, after: str = "") -> str:
    return REDUCE.replace("FIRST", str(first)).replace("WARPS", str(warps)) \
        .replace("AFTER", after)


def _runs(ptx: str) -> list[tuple[str, list[str]]]:
    """(predicate, opcodes) of each guarded run of kernel `k`."""
    kernel = join_fallthrough(build(parse(ptx)).functions["k"])
    runs = guarded_runs(kernel, {})
    found = []
    for block in kernel.blocks:
        for i, inst in enumerate(block.instructions):
            if id(inst) in runs:
                predicate, length = runs[id(inst)]
                found.append((predicate.name,
                              [x.opcode for x in block.instructions[i:i + length]]))
    return found


def _run(ptx: str, src: np.ndarray) -> np.ndarray:
    out = np.zeros_like(src)
    run_ptx(ptx, "k", grid=1, block=src.size, args=[src.copy(), out])
    return out


def test_labels_nothing_branches_to_join_their_blocks():
    kernel = build(parse(_ptx(0, 4))).functions["k"]
    joined = join_fallthrough(kernel)
    assert len(kernel.blocks) > 10
    assert [b.label for b in joined.blocks if b.instructions] == ["%entry"]
    assert list(joined.instructions()) == list(kernel.instructions())


def test_a_branch_target_keeps_its_block():
    ptx = _ptx(0, 4).replace("bar.sync 0;\nsub.s32", "bar.sync 0;\nsetp.eq.u32 %p5, %r1, "
                             "999;\n@%p5 bra $L__tmp6;\nsub.s32")
    joined = join_fallthrough(build(parse(ptx)).functions["k"])
    labels = [b.label for b in joined.blocks if b.instructions]
    assert "$L__tmp6" in labels and "$L__tmp1" not in labels
    assert joined.blocks[labels.index("$L__tmp6")].instructions[0].opcode == "ld"


def test_the_middle_stage_is_a_guarded_run():
    # its guards: %p2 and %p4 = %p2 and %p3 (which implies %p2)
    assert _runs(_ptx(0, 4)) == [("%p2", ["ld", "shfl", "max", "shfl", "max", "st"])]
    # and the gang lowering jumps over it (its whole-run test passes)
    code = str(build_gang(build(parse(_ptx(0, 4))), "k", (128, 1, 1), CpuOptions())[0])
    assert "guarded_run" in code


def test_a_write_read_after_the_run_ends_it_before():
    # %r26 read after the store: the run cannot skip the max that writes it; what is left
    # (the load and the shuffles) writes nothing read later, but no guarded access is
    # after the load: the run is the load alone, too short
    after = "add.f32 %r30, %r26, %r26;\nst.shared.b32 [smem+4], %r30;"
    assert _runs(_ptx(0, 4, after)) == []


def test_a_negated_or_unrelated_guard_ends_the_run():
    negated = _ptx(0, 4).replace("@%p4 st.shared", "@!%p4 st.shared")
    assert _runs(negated) == []
    unrelated = _ptx(0, 4).replace("@%p4 st.shared", "@%p1 st.shared")
    assert _runs(unrelated) == []


@pytest.mark.parametrize("warps", [2, 3, 4])
@pytest.mark.parametrize("first", [0, 32, 68])
def test_results_as_thread_by_thread(warps, first, cpu_options):
    """The middle stage in the lanes of warp first // 32 (the other warps skip it); a block
    of 2-4 warps."""
    if first + 4 > 32 * warps:
        pytest.skip("the stage's lanes lie past the block")
    rng = np.random.default_rng(first + warps)
    src = rng.standard_normal(32 * warps).astype(np.float32)
    src[5] = np.nan                 # one NaN: the others' maximum
    src[40 % src.size] = 7.5
    ptx = _ptx(first, warps)
    slots = [np.nanmax(src[32 * w:32 * w + 32]) for w in range(warps)]
    want = np.full(src.size, max(slots), np.float32)
    got = _run(ptx, src)
    np.testing.assert_array_equal(got, want)
    cpu_options(gang=False)
    np.testing.assert_array_equal(_run(ptx, src), want)


def test_signed_zeros_and_all_nan_warps():
    src = np.full(128, -0.0, np.float32)
    src[64:96] = np.nan             # a warp of NaNs: its slot is the canonical NaN
    src[100] = 0.0                  # +0 above -0
    got = _run(_ptx(0, 4), src)
    assert (got.view(np.uint32) == np.uint32(0)).all()
