"""Shared-memory range checks of counted one-block loops done once before the loop in warp
gangs (passes/hoist_checks.py): which loops and accesses qualify, the same results with and
without the hoisting and thread by thread, and an out-of-bounds access in such a loop still
faulting where it is, with the same error."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.ir import nodes as ir
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.hoist_checks import hoist_checks
from ptxport.ptx.parser import parse

# FILL copies in[] to tile[256] (8 steps), SUM adds tile[tid + 32 i] for i < LIMIT (4 a
# step), PICK adds tile[index[tid]] and the next (lane-varying addresses from memory)
SOURCE = (Path(__file__).resolve().parents[1] / "passes" / "golden" / "shared_loop.ptx") \
    .read_text()


# SUM reading the tile's address in the loop (`mov.u32 r, tile`, as NVRTC's packing loops
# do): a shared variable's address is alike in the block, so SUM qualifies as before
TILE_IN_LOOP = SOURCE.replace("    add.s32 %r10, %r4, %r9;\n", "    mov.u32 %r17, tile;\n"
                              "    add.s32 %r18, %r17, %r2;\n    add.s32 %r10, %r18, %r9;\n")


# SUM addressing the tile through 64-bit registers, as NVRTC 13.0 does (mov.u64 rd, tile;
# mul.wide.s32 of the counter; add.s64 of the thread's tid * 4): exact in 64 bits, it
# qualifies too
WIDE = SOURCE.replace(".reg .b64 %rd<12>;", ".reg .b64 %rd<16>;") \
    .replace("    mov.u32 %r3, tile;\n", "    mov.u32 %r3, tile;\n    mov.u64 %rd10, tile;\n") \
    .replace("    shl.b32 %r9, %r8, 7;\n    add.s32 %r10, %r4, %r9;\n",
             "    mul.wide.s32 %rd12, %r8, 128;\n    add.s64 %rd13, %rd10, %rd12;\n"
             "    add.s64 %rd14, %rd13, %rd4;\n") \
    .replace("[%r10", "[%rd14")


def _ptx(limit: int, source: str = SOURCE) -> str:
    text = source.replace("setp.ne.s32 %p2, %r8, 8;", f"setp.ne.s32 %p2, %r8, {limit};")
    assert text != source or limit == 8
    return text


def _kernel(limit: int = 8):
    module = build(parse(_ptx(limit), "shared_loop.ptx"))
    verify(module)
    return module.functions["shared_loop"]


def _run(cpu_options, limit: int = 8, source: str = SOURCE, **options):
    cpu_options(**options)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(_ptx(limit, source), code_type="ptx").compile("native") \
        .get_kernel("shared_loop")
    src = np.arange(256, dtype=np.float32) * 0.5 + 1
    index = (np.arange(32, dtype=np.uint32) * 7) % 250
    bufs = [dev.allocate(n, stream=stream) for n in (src.nbytes, 128, index.nbytes)]
    bufs[0].copy_from(src, stream=stream)
    bufs[2].copy_from(index, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=32), kernel, *bufs)
    out = np.empty(32, np.float32)
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    return src, index, out


def test_counted_loops_with_affine_addresses_are_versioned():
    kernel = _kernel()
    f, notes, prechecked, copies, _ = hoist_checks(kernel, (32, 1, 1))
    assert [n.split(":")[0] for n in notes] == ["the loop FILL", "the loop SUM"], notes
    assert "2 iterations" in notes[1]
    # the copies' shared accesses: FILL's store and SUM's four loads; PICK keeps its checks
    code = {id(i): i for i in f.instructions()}
    assert len(prechecked) == 5
    assert all(code[i].opcode in ("ld", "st") for i in prechecked)
    assert set(copies.values()) >= prechecked
    labels = [b.label for b in f.blocks]
    for loop in ("FILL", "SUM"):
        at = labels.index(loop)
        assert labels[at - 3:at] == [f"{loop}_hoisted_checks", f"{loop}_prechecked",
                                     f"{loop}_prechecked_done"]
    assert "PICK_hoisted_checks" not in labels
    assert kernel.blocks[0].label == f.blocks[0].label and len(kernel.blocks) < len(f.blocks)


def test_a_loop_of_unknown_trip_count_is_left_alone():
    # a bound that the counter may step over (8 - 0 is not a multiple of 3): not counted
    text = SOURCE.replace("add.s32 %r8, %r8, 4;", "add.s32 %r8, %r8, 3;")
    module = build(parse(text, "shared_loop.ptx"))
    verify(module)
    _, notes, *_ = hoist_checks(module.functions["shared_loop"], (32, 1, 1))
    assert [n.split(":")[0] for n in notes] == ["the loop FILL"]


def test_a_shared_variables_address_read_in_the_loop_qualifies():
    module = build(parse(_ptx(8, TILE_IN_LOOP), "shared_loop.ptx"))
    verify(module)
    f, notes, prechecked, *_ = hoist_checks(module.functions["shared_loop"], (32, 1, 1))
    assert [n.split(":")[0] for n in notes] == ["the loop FILL", "the loop SUM"], notes
    assert len(prechecked) == 5
    # (the test block reads the tile's address as the loop does)
    head = next(b for b in f.blocks if b.label == "SUM_hoisted_checks")
    assert any(i.opcode == "mov" and isinstance(i.operands[1], ir.Variable)
               for i in head.instructions)


def test_a_loop_of_64_bit_shared_addresses_qualifies():
    assert WIDE.count("[%rd14") == 4
    module = build(parse(_ptx(8, WIDE), "shared_loop.ptx"))
    verify(module)
    f, notes, prechecked, *_ = hoist_checks(module.functions["shared_loop"], (32, 1, 1))
    assert [n.split(":")[0] for n in notes] == ["the loop FILL", "the loop SUM"], notes
    assert len(prechecked) == 5
    # the 64-bit uniform part is tested at both ends and against wrapping
    head = next(b for b in f.blocks if b.label == "SUM_hoisted_checks")
    assert sum(i.opcode == "setp" for i in head.instructions) == 4


def test_a_widened_value_that_may_wrap_does_not_qualify():
    # cvt.s64.s32 of 2^30 k: past 2^31 - 1 from k = 2 on, so the widened value is not the
    # affine form's (the s32 wraps): SUM keeps its checks
    text = _ptx(8, WIDE).replace("    mul.wide.s32 %rd12, %r8, 128;\n",
                                 "    shl.b32 %r9, %r8, 30;\n    cvt.s64.s32 %rd12, %r9;\n")
    module = build(parse(text, "shared_loop.ptx"))
    verify(module)
    _, notes, *_ = hoist_checks(module.functions["shared_loop"], (32, 1, 1))
    assert [n.split(":")[0] for n in notes] == ["the loop FILL"], notes


# The loops of TILE_IN_LOOP and WIDE compute what SOURCE's do, and fault at the same access
# (its line moved): their hoisted runs are compared with SOURCE's runs without the hoisting
# and thread by thread (the same images as SOURCE's case, not two more compiles each).
@pytest.mark.parametrize("source", [SOURCE, TILE_IN_LOOP, WIDE], ids=["before", "in_loop", "wide"])
def test_sums_agree_with_and_without_hoisting_and_threads(cpu_options, source):
    src, index, out = _run(cpu_options, source=source)
    tid = np.arange(32)
    want = sum(src[tid + 32 * i] for i in range(8)) + src[index] + src[index + 1]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    for options in ({"hoist_checks": False}, {"gang": False}):
        np.testing.assert_array_equal(_run(cpu_options, source=SOURCE, **options)[2], out)


def _fault_line(source: str) -> int:
    return next(i for i, text in enumerate(source.splitlines(), 1)
                if text.startswith("    ld.shared.f32 %f3, ["))


@pytest.mark.parametrize("source", [SOURCE, TILE_IN_LOOP, WIDE], ids=["before", "in_loop", "wide"])
def test_out_of_bounds_in_a_versioned_loop_names_the_same_access(cpu_options, source):
    # SUM runs 12 steps: the third iteration reads tile[256 + tid], past the 1 KiB of shared
    # memory; the test before the loop fails, the loop runs checked and faults there
    messages = []
    for options, ptx in (({}, source), ({"hoist_checks": False}, SOURCE),
                         ({"gang": False}, SOURCE)):
        with pytest.raises(IllegalAddressError) as caught:
            _run(cpu_options, 12, ptx, **options)
        messages.append(re.sub(r"0x[0-9a-f]+", "ADDRESS", str(caught.value))
                        .replace(f" at line {_fault_line(ptx)} ", " at line LINE "))
    assert messages[0] == messages[1] == messages[2], messages
    assert "read 4 bytes" in messages[0] and \
        "at line LINE in block (0, 0, 0), thread 0;" in messages[0], messages[0]


# `if (i < n) v = x[2 * i]` (a guarded copy beside its branch: if_convert's `linear`), then
# a hoisted loop: v += tile[32 + tid] three times
SPLIT_THEN_LOOP = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 x, .param .u64 out, .param .u32 n)
{
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
.shared .align 4 .u32 tile[64];
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x; mov.u32 %r3, %ctaid.x; mad.lo.s32 %r4, %r3, 32, %r2;
mul.wide.s32 %rd3, %r4, 8; add.s64 %rd4, %rd1, %rd3;
mov.u32 %r5, 0;
setp.ge.s32 %p1, %r4, %r1;
@%p1 bra SKIP;
ld.global.u32 %r5, [%rd4];
SKIP:
shl.b32 %r6, %r2, 2; mov.u32 %r7, tile; add.s32 %r8, %r7, %r6;
st.shared.u32 [%r8+128], %r4;
mov.u32 %r9, 0;
LOOP:
ld.shared.u32 %r10, [%r8+128];
add.u32 %r5, %r5, %r10;
add.s32 %r9, %r9, 1;
setp.lt.s32 %p2, %r9, 3;
@%p2 bra LOOP;
mul.wide.s32 %rd5, %r4, 4; add.s64 %rd6, %rd2, %rd5; st.global.u32 [%rd6], %r5;
ret;
}
"""


@pytest.mark.parametrize("options", [{}, {"hoist_checks": False}, {"gang": False}])
def test_a_guarded_copy_and_a_hoisted_loop_in_one_kernel(cpu_options, options):
    from ptxport.passes.if_convert import if_convert

    module = build(parse(SPLIT_THEN_LOOP, "split.ptx"))
    verify(module)
    converted, _, linear, _ = if_convert(module.functions["k"], (32, 1, 1))
    assert linear, "the strided load's copy beside its branch"
    _, notes, *_ = hoist_checks(converted, (32, 1, 1))
    assert [n.split(":")[0] for n in notes] == ["the loop LOOP"]
    cpu_options(**options)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SPLIT_THEN_LOOP, code_type="ptx").compile("native").get_kernel("k")
    x = np.arange(128, dtype=np.uint32) * 5 + 1
    bufs = [dev.allocate(n, stream=stream) for n in (x.nbytes, 64 * 4)]
    bufs[0].copy_from(x, stream=stream)
    # n = 40: warp 0 all in, warp 1 split at the bound (its lanes run the guarded copy)
    launch(stream, LaunchConfig(grid=2, block=32), kernel, *bufs, np.uint32(40))
    out = np.empty(64, np.uint32)
    bufs[1].copy_to(out, stream=stream)
    stream.sync()
    i = np.arange(64)
    np.testing.assert_array_equal(out, np.where(i < 40, x[(2 * i) % 128], 0) + 3 * i)
