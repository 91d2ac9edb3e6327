"""Device-side assert (CUDA's `__assertfail`): on the CPU and on opencl:0 (the SPIR-V target on
Intel's OpenCL CPU runtime) a failed assert prints CUDA's text on stderr, as CUDA does (the
opencl backend from the launch's assert log), and fails the launch with KernelAssertError,
and the device stays usable; a true one changes nothing. NVPTX keeps the call for the CUDA
driver (ptxas accepts it), AMDGPU traps. The corpus case (assert_kernel.cu) runs with indices
in range on every backend; here one thread of one block gets a bad one."""

from __future__ import annotations

import re

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx, ptxas_errors, ptxas_path
from cpu_harness import index_outside
from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
from ptxport.errors import (
    IllegalAddressError,
    KernelAssertError,
    KernelTrapError,
    UnsupportedFeatureError,
)
from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx
from ptxport.runtime.backends import availability

_OPENCL, _WHY = availability("opencl")
DEVICES = ["cpu", pytest.param("opencl:0", marks=pytest.mark.skipif(
    not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}"))]

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


def _gather(stream, kernel, idx: np.ndarray, src: np.ndarray, dst=None) -> np.ndarray:
    """dst after checked_gather(idx, src, dst, N, LIMIT) (dst: a device buffer, zeros
    without one); raises what the launch raises."""
    dev = stream.device
    buffers = [dev.allocate(a.nbytes, stream=stream) for a in (idx, src)]
    if dst is None:
        dst = dev.allocate(4 * N, stream=stream)
        dst.copy_from(np.zeros(N, np.float32), stream=stream)
    buffers.append(dst)
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


def _printed(captured) -> str:
    """What a device printed for failed asserts: on stderr, as CUDA does, and nothing on
    stdout."""
    assert captured.out == ""
    return captured.err


@pytest.mark.parametrize("device", DEVICES)
def test_true_assert_changes_nothing(capfd, device):
    idx, src = _inputs()
    stream = Device(device).create_stream()
    assert np.array_equal(_gather(stream, _kernel(False), idx, src), src[idx] * 2)
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("lineinfo", [False, True], ids=["plain", "lineinfo"])
def test_failed_assert_in_one_thread_prints_cudas_text_and_fails_the_launch(capfd, lineinfo,
                                                                            device):
    idx, src = _inputs()
    idx[2 * BLOCK + 5] = LIMIT                  # block 2, thread 5 fails its assert
    stream = Device(device).create_stream()
    with pytest.raises(KernelAssertError) as caught:
        _gather(stream, _kernel(lineinfo), idx, src)
    text = (f"assert_kernel.cu:{ASSERT_LINE}: {FUNCTION}: block: [2,0,0], thread: [5,0,0] "
            "Assertion `j >= 0 && j < limit` failed.")
    assert isinstance(caught.value, KernelTrapError)
    assert text in str(caught.value)
    assert _printed(capfd.readouterr()) == text + "\n"
    # where: the user's line first, then the PTX line, when the PTX has line information
    place = re.search(r"at (.*?): assert_kernel", str(caught.value))[1]
    assert re.fullmatch(rf"assert_kernel\.cu:{ASSERT_LINE} \(PTX line \d+\)" if lineinfo
                        else r"line \d+", place), place


@pytest.mark.parametrize("device", DEVICES)
def test_device_is_usable_after_a_failed_assert(capfd, device):
    idx, src = _inputs()
    bad = idx.copy()
    bad[0] = -1
    stream = Device(device).create_stream()
    with pytest.raises(KernelAssertError):
        _gather(stream, _kernel(False), bad, src)
    assert np.array_equal(_gather(stream, _kernel(False), idx, src), src[idx] * 2)
    # the assert belongs to one launch
    assert _printed(capfd.readouterr()).count("Assertion") == 1


def _fail_then_recover_after_a_barrier(device: str, kernel, capfd) -> None:
    """checked_reverse fails one assert in block 2 (after its barrier, among shuffles), then
    runs correctly on the next launch; the assertion is printed once."""
    dev = Device(device)
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
    assert _printed(capfd.readouterr()).count("Assertion") == 1


@pytest.mark.parametrize("native", [True, False], ids=["native", "resolver"])
def test_failed_assert_after_a_barrier_in_a_kernel_with_warp_shuffles(capfd, native):
    """Threads that wait (a barrier, a shuffle) run in rounds, natively or through the Python
    resolver: the one whose assert fails stops the block there, and the next launch starts
    afresh."""
    kernel = Program(_ptx(False), code_type="ptx").compile("native") \
        .get_kernel("checked_reverse")
    kernel._binary(Device("cpu")).native_waits = native
    _fail_then_recover_after_a_barrier("cpu", kernel, capfd)


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


# --- opencl: what stops, what goes on -------------------------------------------------------

opencl_only = pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}")

# v % 2 puts a '%' in the message (where it must stay as it is)
THROUGH_FUNCTIONS = r"""
__device__ __noinline__ int checked(int v)
{
    assert(v % 2 == 0);
    return v * 2;
}

__device__ __noinline__ int twice_checked(int v)
{
    return checked(v) + 1;
}

extern "C" __global__ void through_functions(const int* x, int* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = twice_checked(x[i]);
}

extern "C" __global__ void poke_then_assert(int* p, long long offset)
{
    p[offset] = 1;
    assert(offset == 0);
}
"""


def _opencl_program(source: str, name: str):
    ptx = compile_to_ptx(source, name, NvrtcOptions(arch="sm_80", extra=["-lineinfo"]))
    return Program(ptx, code_type="ptx").compile("native")


@opencl_only
def test_opencl_thread_whose_assert_fails_stops_there_and_the_others_go_on(capfd):
    idx, src = _inputs()
    idx[BLOCK + 9] = -3
    stream = Device("opencl:0").create_stream()
    dst = stream.device.allocate(4 * N, stream=stream)
    dst.copy_from(np.full(N, -1, np.float32), stream=stream)
    with pytest.raises(KernelAssertError, match=r"block: \[1,0,0\], thread: \[9,0,0\]"):
        _gather(stream, _kernel(False), idx, src, dst)
    out = np.empty(N, np.float32)
    dst.copy_to(out, stream=stream)
    stream.sync()
    assert out[BLOCK + 9] == -1                 # not written after its assert
    others = np.arange(N) != BLOCK + 9
    assert np.array_equal(out[others], src[idx[others]] * 2)
    capfd.readouterr()


@opencl_only
def test_opencl_assert_in_a_device_function_stops_its_callers(capfd):
    program = _opencl_program(THROUGH_FUNCTIONS, "through.cu")
    dev = Device("opencl:0")
    stream = dev.create_stream()
    x = np.arange(0, 128, 2, dtype=np.int32)
    x[37] = 5
    xs, ys = dev.allocate(x.nbytes, stream=stream), dev.allocate(x.nbytes, stream=stream)
    xs.copy_from(x, stream=stream)
    ys.copy_from(np.full(64, -1, np.int32), stream=stream)
    launch(stream, LaunchConfig(grid=2, block=32), program.get_kernel("through_functions"),
           xs, ys)
    text = ("through.cu:4: int checked(int): block: [1,0,0], thread: [5,0,0] Assertion "
            "`v % 2 == 0` failed.")
    with pytest.raises(KernelAssertError) as caught:
        stream.sync()
    assert str(caught.value) == ("kernel 'through_functions' failed a device-side assert at "
                                 f"{re.search(r'at (through.cu:4 .*?):', str(caught.value))[1]}"
                                 f": {text}")
    assert _printed(capfd.readouterr()) == text + "\n"
    y = np.empty(64, np.int32)
    ys.copy_to(y, stream=stream)
    stream.sync()
    # its callers returned at once: the kernel did not store what they would have returned
    assert y[37] == -1
    # threads that did not fail may have stopped after a call too (CUDA stops the grid)
    done = (y != -1) & (np.arange(64) != 37)
    assert np.array_equal(y[done], x[done] * 2 + 1)
    # the next launch is clean
    x[37] = 6
    xs.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=32), program.get_kernel("through_functions"),
           xs, ys)
    ys.copy_to(y, stream=stream)
    stream.sync()
    assert np.array_equal(y, x * 2 + 1)


@opencl_only
def test_opencl_launch_reports_its_first_fault_whether_access_or_assert(capfd):
    program = _opencl_program(THROUGH_FUNCTIONS, "through.cu")
    dev = Device("opencl:0")
    stream = dev.create_stream()
    p = dev.allocate(16, stream=stream)
    kernel = program.get_kernel("poke_then_assert")
    # the bad write comes first: it is what the launch reports; the assert still prints
    far = np.int64(index_outside(dev, p))       # p[far]: no allocation there
    launch(stream, LaunchConfig(grid=1, block=1), kernel, p, far)
    with pytest.raises(IllegalAddressError, match=r"at through.cu:21 \(PTX line \d+\) in "
                                                  r"block \(0, 0, 0\), thread 0;"):
        stream.sync()
    assert "Assertion `offset == 0` failed." in _printed(capfd.readouterr())
    # an assert alone is an assert, not an illegal address
    launch(stream, LaunchConfig(grid=1, block=1), kernel, p, np.int64(1))
    with pytest.raises(KernelAssertError):
        stream.sync()
    launch(stream, LaunchConfig(grid=1, block=1), kernel, p, np.int64(0))
    stream.sync()


@opencl_only
def test_opencl_assert_after_a_barrier_in_a_kernel_with_warp_shuffles(capfd):
    kernel = Program(_ptx(False), code_type="ptx").compile("native") \
        .get_kernel("checked_reverse")
    _fail_then_recover_after_a_barrier("opencl:0", kernel, capfd)


# __assertfail with its message read from a kernel parameter
_RUN_TIME_MESSAGE = """
.version 8.0
.target sm_80
.address_size 64

.global .align 1 .b8 file_name[5] = {107, 46, 99, 117, 0};
.extern .func __assertfail(.param .b64 m, .param .b64 f, .param .b32 l, .param .b64 fn,
                           .param .b64 c);

.visible .entry k(.param .u64 message)
{
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [message];
    mov.u64 %rd2, file_name;
    cvta.global.u64 %rd3, %rd2;
    {
    .param .b64 p0;
    st.param.b64 [p0], %rd1;
    .param .b64 p1;
    st.param.b64 [p1], %rd3;
    .param .b32 p2;
    st.param.b32 [p2], 3;
    .param .b64 p3;
    st.param.b64 [p3], %rd3;
    .param .b64 p4;
    st.param.b64 [p4], 1;
    call.uni __assertfail, (p0, p1, p2, p3, p4);
    }
    ret;
}
"""


def test_spirv_refuses_an_assert_whose_text_is_known_only_at_run_time():
    with pytest.raises(UnsupportedFeatureError, match="assert's message is not the address "
                                                      "of a string constant"):
        Program(_RUN_TIME_MESSAGE, code_type="ptx").compile("spirv")


@opencl_only
def test_opencl_prints_every_failed_assert_up_to_the_logs_room(capfd):
    from ptxport.runtime.backends.opencl_records import ASSERT_LOG_CAPACITY

    program = _opencl_program(THROUGH_FUNCTIONS, "through.cu")
    dev = Device("opencl:0")
    stream = dev.create_stream()
    for blocks in (2, ASSERT_LOG_CAPACITY // 32 + 2):
        n = 32 * blocks
        xs, ys = dev.allocate(4 * n, stream=stream), dev.allocate(4 * n, stream=stream)
        xs.copy_from(np.ones(n, np.int32), stream=stream)    # every thread fails
        launch(stream, LaunchConfig(grid=blocks, block=32),
               program.get_kernel("through_functions"), xs, ys)
        with pytest.raises(KernelAssertError):
            stream.sync()
        lines = _printed(capfd.readouterr()).splitlines()
        kept = min(n, ASSERT_LOG_CAPACITY)
        assert len(lines) == kept + (n > kept)
        assert all(line.endswith("Assertion `v % 2 == 0` failed.") for line in lines[:kept])
        if n > kept:
            assert lines[-1] == (f"ptxport: {n - kept} more failed asserts in this launch "
                                 f"(only the first {kept} are kept)")
        else:   # in order of block and thread
            assert lines[0].startswith("through.cu:4: int checked(int): block: [0,0,0], "
                                       "thread: [0,0,0]")
            assert "block: [1,0,0], thread: [31,0,0]" in lines[-1]


# --- trap on opencl: recorded like a failed assert -------------------------------------------

TRAPS = r"""
__device__ __noinline__ int halve(int v)
{
    if (v % 2) __trap();
    return v / 2;
}

extern "C" __global__ void halves(const int* x, int* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = halve(x[i]) + 1;
}
"""


@opencl_only
def test_opencl_trap_fails_the_launch_and_stops_its_callers(capfd):
    program = _opencl_program(TRAPS, "traps.cu")
    dev = Device("opencl:0")
    stream = dev.create_stream()
    x = np.arange(0, 128, 2, dtype=np.int32)
    x[41] = 7
    xs, ys = dev.allocate(x.nbytes, stream=stream), dev.allocate(x.nbytes, stream=stream)
    xs.copy_from(x, stream=stream)
    ys.copy_from(np.full(64, -1, np.int32), stream=stream)
    launch(stream, LaunchConfig(grid=2, block=32), program.get_kernel("halves"), xs, ys)
    with pytest.raises(KernelTrapError) as caught:
        stream.sync()
    assert not isinstance(caught.value, KernelAssertError)
    assert re.search(r"kernel 'halves' executed trap at traps\.cu:4 .*in block \(1, 0, 0\), "
                     r"thread \(9, 0, 0\)", str(caught.value)), str(caught.value)
    y = np.empty(64, np.int32)
    ys.copy_to(y, stream=stream)
    stream.sync()
    assert y[41] == -1                        # its caller returned at once
    done = (y != -1) & (np.arange(64) != 41)
    assert np.array_equal(y[done], x[done] // 2 + 1)
    x[41] = 8                                 # the device is usable, the next launch clean
    xs.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=32), program.get_kernel("halves"), xs, ys)
    ys.copy_to(y, stream=stream)
    stream.sync()
    assert np.array_equal(y, x // 2 + 1)
    capfd.readouterr()
