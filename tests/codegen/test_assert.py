"""Device-side assert (CUDA's `__assertfail`): on the CPU a failed assert prints CUDA's text to
stderr and fails the launch with KernelAssertError, and the device stays usable; a true one
changes nothing. NVPTX keeps the call for the CUDA driver (ptxas accepts it), AMDGPU traps,
SPIR-V refuses it by name. The corpus case (assert_kernel.cu) runs with indices in range on
every backend; here one thread of one block gets a bad one."""

from __future__ import annotations

import re

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx, ptxas_errors, ptxas_path
from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
from ptxport.errors import KernelAssertError, KernelTrapError, UnsupportedFeatureError
from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx

SOURCE = KERNEL_DIR / "assert_kernel.cu"
N, LIMIT, BLOCK = 250, 300, 64
ASSERT_LINE = next(i for i, text in enumerate(SOURCE.read_text().splitlines(), 1)
                   if "assert(j" in text)
FUNCTION = "void checked_gather(const int *, const float *, float *, int, int)"


def _ptx(lineinfo: bool) -> str:
    """The corpus file's PTX with line information (.file/.loc) or without (whatever NVRTC
    writes by default)."""
    if not lineinfo:
        return re.sub(r"^\s*\.(loc|file)\b.*$", "", corpus_ptx(SOURCE, "sm_80"), flags=re.M)
    return compile_to_ptx(SOURCE.read_text(), SOURCE.name,
                          NvrtcOptions(arch="sm_80", extra=["-lineinfo"]))


_KERNELS: dict[bool, object] = {}


def _kernel(lineinfo: bool):
    if lineinfo not in _KERNELS:
        program = Program(_ptx(lineinfo), code_type="ptx",
                          options=ProgramOptions(name="assert_kernel.ptx"))
        _KERNELS[lineinfo] = program.compile("native").get_kernel("checked_gather")
    return _KERNELS[lineinfo]


def _gather(stream, kernel, idx: np.ndarray, src: np.ndarray) -> np.ndarray:
    """dst after checked_gather(idx, src, dst, N, LIMIT); raises what the launch raises."""
    dev = Device("cpu")
    buffers = [dev.allocate(a.nbytes, stream=stream) for a in (idx, src, src[:N])]
    buffers[0].copy_from(idx, stream=stream)
    buffers[1].copy_from(src, stream=stream)
    launch(stream, LaunchConfig(grid=(N + BLOCK - 1) // BLOCK, block=BLOCK), kernel,
           *buffers, np.int32(N), np.int32(LIMIT))
    dst = np.empty(N, np.float32)
    buffers[2].copy_to(dst, stream=stream)
    stream.sync()
    return dst


def _inputs():
    rng = np.random.default_rng(13)
    return (rng.integers(0, LIMIT, N).astype(np.int32),
            rng.uniform(-100, 100, LIMIT).astype(np.float32))


def test_true_assert_changes_nothing(capfd):
    idx, src = _inputs()
    stream = Device("cpu").create_stream()
    assert np.array_equal(_gather(stream, _kernel(False), idx, src), src[idx] * 2)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("lineinfo", [False, True], ids=["plain", "lineinfo"])
def test_failed_assert_in_one_thread_prints_cudas_text_and_fails_the_launch(capfd, lineinfo):
    idx, src = _inputs()
    idx[2 * BLOCK + 5] = LIMIT                  # block 2, thread 5 fails its assert
    stream = Device("cpu").create_stream()
    with pytest.raises(KernelAssertError) as caught:
        _gather(stream, _kernel(lineinfo), idx, src)
    text = (f"assert_kernel.cu:{ASSERT_LINE}: {FUNCTION}: block: [2,0,0], thread: [5,0,0] "
            "Assertion `j >= 0 && j < limit` failed.")
    assert isinstance(caught.value, KernelTrapError)
    assert text in str(caught.value)
    assert capfd.readouterr().err == text + "\n"
    # where: the user's line first, then the PTX line, when the PTX has line information
    place = re.search(r"at (.*?): assert_kernel", str(caught.value))[1]
    assert re.fullmatch(rf"assert_kernel\.cu:{ASSERT_LINE} \(PTX line \d+\)" if lineinfo
                        else r"line \d+", place), place


def test_device_is_usable_after_a_failed_assert(capfd):
    idx, src = _inputs()
    bad = idx.copy()
    bad[0] = -1
    stream = Device("cpu").create_stream()
    with pytest.raises(KernelAssertError):
        _gather(stream, _kernel(False), bad, src)
    assert np.array_equal(_gather(stream, _kernel(False), idx, src), src[idx] * 2)
    assert capfd.readouterr().err.count("Assertion") == 1   # the assert belongs to one launch


@pytest.mark.parametrize("native", [True, False], ids=["native", "resolver"])
def test_failed_assert_after_a_barrier_in_a_kernel_with_warp_shuffles(capfd, native):
    """Threads that wait (a barrier, a shuffle) run in rounds, natively or through the Python
    resolver: the one whose assert fails stops the block there, and the next launch starts
    afresh."""
    kernel = Program(_ptx(False), code_type="ptx").compile("native") \
        .get_kernel("checked_reverse")
    kernel._binary(Device("cpu")).native_waits = native
    dev = Device("cpu")
    stream = dev.create_stream()
    x = np.arange(512, dtype=np.int32)
    x[2 * 128 + 10] = -1                         # read by block 2's thread 127 - 10
    xs, ys = dev.allocate(x.nbytes, stream=stream), dev.allocate(x.nbytes, stream=stream)
    xs.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=128), kernel, xs, ys)
    with pytest.raises(KernelAssertError, match=r"block: \[2,0,0\], thread: \[117,0,0\] "
                                                r"Assertion `v >= 0` failed\."):
        stream.sync()
    x[2 * 128 + 10] = 7
    xs.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=128), kernel, xs, ys)
    y = np.empty(512, np.int32)
    ys.copy_to(y, stream=stream)
    stream.sync()
    v = x.reshape(4, 128)[:, ::-1]
    assert np.array_equal(y, (v + v[:, np.arange(128) ^ 1]).reshape(-1))
    assert capfd.readouterr().err.count("Assertion") == 1


def test_nvptx_keeps_the_call_of_the_drivers_assertfail():
    ptx = Program(_ptx(False), code_type="ptx").compile("nvptx:sm_90").code
    assert re.search(r"\.extern \.func __assertfail\s*\(", ptx)
    assert re.search(r"call\.uni\s+__assertfail,", ptx)
    if ptxas_path() is not None:
        assert ptxas_errors(ptx, "sm_90") == ""


def test_amdgpu_traps_after_a_failed_assert():
    from ptxport.codegen.targets import amdgpu
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    llvm_ir = str(amdgpu.build_llvm(build(parse(_ptx(False))), "gfx1100"))
    assert re.search(r'call void @"?llvm\.trap"?\(\)', llvm_ir)
    assert "__assertfail" not in llvm_ir


def test_spirv_refuses_assert_by_name():
    with pytest.raises(UnsupportedFeatureError, match="__assertfail") as caught:
        Program(_ptx(True), code_type="ptx").compile("spirv")
    assert caught.value.source == ("assert_kernel.cu", ASSERT_LINE)
