"""A tile loop's global loads checked once at its entry (passes/hoist_global_checks.py): the
tiled SGEMM of tests/kernels/gemm_tiled.cu (its PTX: tests/passes/golden/tile_loop.ptx), whose
loop holds two barriers and runs to K, a parameter. Results with the test and without it
(CpuOptions.hoist_global_checks) must agree, where the test holds for some warps and fails
for others (a partial last tile: the range over every tile's lanes runs past A's end, though
the guard `ka < K` keeps every access inside), and an access outside its allocation must
fault with the same error, naming its line, thread and address, either way."""

from pathlib import Path

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.passes.hoist_global_checks import hoist_global_checks
from ptxport.ptx.parser import parse

PTX = (Path(__file__).resolve().parents[1] / "passes" / "golden" / "tile_loop.ptx").read_text()


def _gemm(m: int, n: int, k: int, a_words: int | None = None):
    """C = A @ B by sgemm_tiled (alpha 1, beta 0) on one worker; A's buffer holds a_words
    floats (m * k by default: fewer make the last rows' loads run off its end)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(PTX, code_type="ptx").compile("native").get_kernel("sgemm_tiled")
    rng = np.random.default_rng(3)
    a = rng.standard_normal(m * k).astype(np.float32)
    b = rng.standard_normal(k * n).astype(np.float32)
    c = np.zeros(m * n, np.float32)
    words = m * k if a_words is None else a_words
    bufs = [dev.allocate(4 * words, stream=stream), dev.allocate(b.nbytes, stream=stream),
            dev.allocate(c.nbytes, stream=stream)]
    bufs[0].copy_from(a[:words], stream=stream)
    bufs[1].copy_from(b, stream=stream)
    bufs[2].copy_from(c, stream=stream)
    grid = ((n + 15) // 16, (m + 15) // 16)
    launch(stream, LaunchConfig(grid=grid, block=(16, 16)), kernel, np.int32(m), np.int32(n),
           np.int32(k), np.float32(1), bufs[0], bufs[1], np.float32(0), bufs[2])
    bufs[2].copy_to(c, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return c.reshape(m, n), a.reshape(m, k) @ b.reshape(k, n), int(bufs[0].handle)


def test_the_tile_loop_has_its_test():
    kernel = build(parse(PTX, "tile_loop.ptx")).functions["sgemm_tiled"]
    count = len(list(kernel.instructions()))
    f, notes, found, _ = hoist_global_checks(kernel, (16, 16, 1))
    assert f is not kernel and len(notes) == 1
    # A's load and B's, one test at the entry, one `and.pred ok, ok, ok` keeping ok live
    assert len(found.checked) == 2 and len(found.tests) == 1 and len(found.kept) == 1
    assert len(list(kernel.instructions())) == count      # (the module's kernel as it was)
    assert all(id(i) in found.checked for i in f.instructions() if i.opcode == "ld"
               and i.spec.get("space") == "global" and "%rd14" not in str(i.operands[1]))


@pytest.mark.parametrize("hoist", [True, False])
@pytest.mark.parametrize("m, n, k", [(48, 48, 48), (40, 24, 40), (32, 32, 7), (16, 48, 1)])
def test_tiles_full_and_partial_give_the_product(cpu_options, hoist, m, n, k):
    cpu_options(hoist_global_checks=hoist)
    got, want, _ = _gemm(m, n, k)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _faulting_gemm():
    """The error of a launch whose A holds 32 x 32 floats but for its last 8, and A's
    address: row 31's second tile (k0 = 16) reads words 31 * 32 + 16 .. + 31, lanes 8.. of
    that half warp outside (thread 248 of block (0, 1, 0): x 8, y 15); the blocks run in
    order on one worker, so that thread of the first column block is the first to fault."""
    bases = []
    made = Device.allocate

    def noted(self, size, **kw):
        buffer = made(self, size, **kw)
        bases.append(int(buffer.handle))
        return buffer
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Device, "allocate", noted)
        with pytest.raises(IllegalAddressError) as error:
            _gemm(32, 32, 32, a_words=32 * 32 - 8)
    return str(error.value), bases[0]


@pytest.mark.parametrize("hoist", [True, False])
def test_a_load_past_the_end_of_a_faults_where_it_runs(cpu_options, one_worker, hoist):
    cpu_options(hoist_global_checks=hoist)
    text, base = _faulting_gemm()
    line = next(i for i, s in enumerate(PTX.splitlines(), 1)
                if "ld.global.f32" in s and "[%rd15]" in s)
    assert text.startswith(f"kernel 'sgemm_tiled' read 4 bytes at address "
                           f"{base + 4 * (31 * 32 + 24):#x}, outside every allocation, at line "
                           f"{line} in block (0, 1, 0), thread 248; nothing was read there "
                           "and the device is still usable"), text


# thread t of a 64-thread block (two warps) sums a[i * 64 + t] (or, DOWN, a[(m - 1 - i) * 64
# + t]) over i < m, a barrier in every pass; BOUND: the loop's bound, the parameter m or a
# constant
ROWS = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 out, .param .u32 m)
{
.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<2>;
ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [m];
mov.u32 %r2, %tid.x;
mul.wide.u32 %rd3, %r2, 4; add.s64 %rd4, %rd1, %rd3;
START
mov.u32 %r3, 0; mov.u32 %r4, 0;
LOOP:
ld.global.u32 %r5, [%rd4];
add.s32 %r4, %r4, %r5;
bar.sync 0;
add.s64 %rd4, %rd4, STEP; add.s32 %r3, %r3, 1;
setp.lt.s32 %p1, %r3, BOUND;
@%p1 bra LOOP;
add.s64 %rd5, %rd2, %rd3; st.global.u32 [%rd5], %r4;
ret;
}
"""


def _rows(words: int, m: int, bound: str, down: bool):
    ptx = ROWS.replace("BOUND", bound).replace("STEP", "-256" if down else "256").replace(
        "START", "add.s32 %r6, %r1, -1; mul.wide.s32 %rd6, %r6, 256; add.s64 %rd4, %rd4, %rd6;"
        if down else "")
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    a = np.arange(words, dtype=np.uint32)
    out = np.zeros(64, np.uint32)
    bufs = [dev.allocate(x.nbytes, stream=stream) for x in (a, out)]
    bufs[0].copy_from(a, stream=stream)
    try:
        launch(stream, LaunchConfig(grid=1, block=64), kernel, *bufs, np.uint32(m))
        bufs[1].copy_to(out, stream=stream)
        stream.sync()
    except IllegalAddressError as e:
        return ptx, int(bufs[0].handle), str(e)
    assert kernel._binary(dev).gang_refusal is None
    return ptx, int(bufs[0].handle), out


@pytest.mark.parametrize("hoist", [True, False])
@pytest.mark.parametrize("bound", ["%r1", "5"])
@pytest.mark.parametrize("down", [False, True])
def test_rows_summed_across_barriers(cpu_options, hoist, bound, down):
    cpu_options(hoist_global_checks=hoist)
    _, _, out = _rows(64 * 5, 5, bound, down)
    assert (out == np.arange(64 * 5).reshape(5, 64).sum(axis=0)).all()


@pytest.mark.parametrize("hoist", [True, False])
@pytest.mark.parametrize("bound", ["%r1", "5"])
@pytest.mark.parametrize("down", [False, True])
def test_a_row_past_the_end_faults_at_its_first_lane(cpu_options, hoist, bound, down):
    # the buffer ends 40 words into row 4: up, row 4 is the last pass's, and thread 40 (of
    # the second warp) the first outside; down, row 4 is the first pass's
    cpu_options(hoist_global_checks=hoist)
    ptx, base, text = _rows(64 * 4 + 40, 5, bound, down)
    line = next(i for i, s in enumerate(ptx.splitlines(), 1) if "ld.global" in s)
    assert text.startswith(f"kernel 'k' read 4 bytes at address {base + 4 * (64 * 4 + 40):#x}, "
                           f"outside every allocation, at line {line} in block (0, 0, 0), "
                           f"thread 40;"), text


def test_the_rows_loop_has_its_test():
    for bound in ("%r1", "5"):
        for down in (False, True):
            ptx = ROWS.replace("BOUND", bound).replace("STEP", "-256" if down else "256")
            kernel = build(parse(ptx.replace("START", ""), "rows.ptx")).functions["k"]
            _, notes, found, _ = hoist_global_checks(kernel, (64, 1, 1))
            assert len(notes) == 1 and len(found.checked) == 1, (bound, down)
