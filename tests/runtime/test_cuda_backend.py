"""The cuda backend: the same checks as the CPU device's, on an NVIDIA GPU.

Tests marked `needs_gpu` are skipped, with the reason the backend gives, where no NVIDIA GPU
and driver are present; the rest (the reason itself, error mapping, ptxas and the cubin cache)
run everywhere. Kernels run both ways the backend can load them: the program's own PTX
("native") and ptxport's NVPTX output ("ptxport", skipped while that target is missing).
A kernel fault leaves a CUDA context unusable, so those tests run in a child process.
"""

import importlib.util
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from kernel_cases import CASES, KernelCase, run_case
from kernel_cases.runtime import run_on_device
from ptxport import Device, EventOptions, LaunchConfig, Program, launch, system
from ptxport.errors import (
    BackendUnavailableError,
    CompileError,
    IllegalAddressError,
    InvalidValueError,
    KernelAssertError,
    KernelExecutionError,
    KernelTrapError,
    LaunchError,
    OutOfMemoryError,
)
from ptxport.frontends import nvrtc
from ptxport.runtime import backends

AVAILABLE, WHY_NOT = backends.availability("cuda")
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no NVIDIA GPU: {WHY_NOT}")
HAS_NVPTX = importlib.util.find_spec("ptxport.codegen.targets.nvptx") is not None

try:
    from cuda.bindings import driver as _cu
except ImportError:
    _cu = None
needs_bindings = pytest.mark.skipif(_cu is None, reason="cuda-bindings is not installed")

# PTX ISA 7.8, which every CUDA 12/13 driver JITs (NVRTC 13.5's own 9.5 needs a newer one).
KERNELS_PTX = """
.version 7.8
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 dynamic_words[];

.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u32 saxpy_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;

	ld.param.f32 	%f1, [saxpy_param_0];
	ld.param.u64 	%rd1, [saxpy_param_1];
	ld.param.u64 	%rd2, [saxpy_param_2];
	ld.param.u32 	%r2, [saxpy_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd3, %rd2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.nc.f32 	%f2, [%rd6];
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	st.global.f32 	[%rd7], %f4;
$L__BB0_2:
	ret;
}

// struct {float scale; int pad; double offset;} s by value; each block reverses its part of
// `in` through dynamic shared memory: out[i] = in[reversed i] * s.scale + s.offset.
.visible .entry reverse_block(
	.param .align 8 .b8 reverse_block_param_0[16],
	.param .u64 reverse_block_param_1,
	.param .u64 reverse_block_param_2
)
{
	.reg .f32 	%f<5>;
	.reg .f64 	%fd<3>;
	.reg .b32 	%r<7>;
	.reg .b64 	%rd<14>;

	ld.param.f32 	%f1, [reverse_block_param_0];
	ld.param.f64 	%fd1, [reverse_block_param_0+8];
	ld.param.u64 	%rd1, [reverse_block_param_1];
	ld.param.u64 	%rd2, [reverse_block_param_2];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %ctaid.x;
	mad.lo.s32 	%r4, %r3, %r2, %r1;
	mul.wide.u32 	%rd5, %r4, 4;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.f32 	%f2, [%rd6];
	mov.u64 	%rd7, dynamic_words;
	mul.wide.u32 	%rd8, %r1, 4;
	add.s64 	%rd9, %rd7, %rd8;
	st.shared.f32 	[%rd9], %f2;
	bar.sync 	0;
	sub.s32 	%r5, %r2, %r1;
	add.s32 	%r6, %r5, -1;
	mul.wide.u32 	%rd10, %r6, 4;
	add.s64 	%rd11, %rd7, %rd10;
	ld.shared.f32 	%f3, [%rd11];
	mul.rn.f32 	%f4, %f3, %f1;
	cvt.f64.f32 	%fd2, %f4;
	add.rn.f64 	%fd2, %fd2, %fd1;
	cvt.rn.f32.f64 	%f4, %fd2;
	add.s64 	%rd12, %rd4, %rd5;
	st.global.f32 	[%rd12], %f4;
	ret;
}

// *where = 7: given an address no allocation holds, an illegal address.
.visible .entry store_seven(
	.param .u64 store_seven_param_0
)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [store_seven_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, 7;
	st.global.u32 	[%rd2], %r1;
	ret;
}

.visible .entry trap_now()
{
	trap;
	ret;
}
"""

STRUCT = np.dtype({"names": ["scale", "pad", "offset"], "formats": [np.float32, np.int32,
                                                                     np.float64],
                   "offsets": [0, 4, 8], "itemsize": 16})


# -- everywhere --------------------------------------------------------------------------------

def test_the_reason_is_given_where_cuda_cannot_run():
    if AVAILABLE:
        assert system.backends["cuda"] == ""
        assert Device("cuda:0") in system.devices
        return
    assert WHY_NOT and system.backends["cuda"] == WHY_NOT
    with pytest.raises(BackendUnavailableError) as e:
        Device("cuda:0")
    assert str(e.value) == f"the cuda backend cannot run here: {WHY_NOT}"
    assert all(d.backend != "cuda" for d in system.devices)


def test_ptxport_devices_says_why_cuda_is_absent():
    result = subprocess.run([sys.executable, "-m", "ptxport.cli", "devices"],
                            capture_output=True, text=True, check=True)
    if AVAILABLE:
        assert "cuda:0: " in result.stdout
    else:
        assert f"cuda: absent: {WHY_NOT}" in result.stdout


@needs_bindings
@pytest.mark.parametrize(("name", "error"), [
    ("CUDA_ERROR_ILLEGAL_ADDRESS", IllegalAddressError),
    ("CUDA_ERROR_MISALIGNED_ADDRESS", IllegalAddressError),
    ("CUDA_ERROR_ASSERT", KernelAssertError),
    ("CUDA_ERROR_LAUNCH_FAILED", KernelTrapError),
    ("CUDA_ERROR_OUT_OF_MEMORY", OutOfMemoryError),
    ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", CompileError),
    ("CUDA_ERROR_NO_BINARY_FOR_GPU", CompileError),
])
def test_driver_errors_become_ptxport_errors(name, error):
    from ptxport.runtime.backends.cuda import _failure

    failure = _failure(getattr(_cu.CUresult, name), "kernel k failed on cuda:0")
    assert type(failure) is error
    assert str(failure).startswith("kernel k failed on cuda:0: ")
    if error in (IllegalAddressError, KernelTrapError, KernelAssertError):
        assert "restart the process" in str(failure)


@needs_bindings
def test_refused_launch_shapes_are_launch_errors():
    from ptxport.runtime.backends.cuda import _failure

    refused = _failure(_cu.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "cannot launch k")
    assert isinstance(refused, LaunchError)
    other = _failure(_cu.CUresult.CUDA_ERROR_UNKNOWN, "kernel k failed on cuda:0")
    assert type(other) is KernelExecutionError


def test_ptxas_arch_follows_an_architecture_specific_target():
    from ptxport.runtime.backends.cuda import _ptxas_arch

    assert _ptxas_arch(".version 8.0\n.target sm_80\n", "sm_90") == "sm_90"
    assert _ptxas_arch(".version 8.0\n.target sm_90a\n", "sm_90") == "sm_90a"
    assert _ptxas_arch(".version 8.0\n.target sm_90a, texmode_independent\n", "sm_90") \
        == "sm_90a"


def test_cubins_are_assembled_once_and_cached(tmp_path, monkeypatch):
    from ptxport.runtime.backends import cuda

    if cuda.wheel_ptxas() is None:
        pytest.skip("no ptxas: pip install nvidia-cuda-nvcc")
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    cubin = cuda.assemble(KERNELS_PTX, "sm_90", "kernels")
    assert cubin[:4] == b"\x7fELF"
    assert cuda.cached_cubin(KERNELS_PTX, "sm_90") == cubin
    monkeypatch.setattr(cuda, "wheel_ptxas", lambda: None)  # a machine without ptxas
    assert cuda.assemble(KERNELS_PTX, "sm_90", "kernels") == cubin
    with pytest.raises(BackendUnavailableError, match="pip install nvidia-cuda-nvcc"):
        cuda.assemble(KERNELS_PTX, "sm_80", "kernels")


def test_ptxas_refusals_carry_its_log(tmp_path, monkeypatch):
    from ptxport.runtime.backends import cuda

    if cuda.wheel_ptxas() is None:
        pytest.skip("no ptxas: pip install nvidia-cuda-nvcc")
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    bad = KERNELS_PTX.replace("fma.rn.f32 \t%f4, %f2, %f1, %f3;", "fma.rn.f32 \t%f4, %f2, %f1;")
    with pytest.raises(CompileError, match="ptxas .* refused the PTX of kernels for sm_90") as e:
        cuda.assemble(bad, "sm_90", "kernels")
    assert "kernels.ptx" in e.value.log


# -- on an NVIDIA GPU ------------------------------------------------------------------------

@pytest.fixture(params=["native", "ptxport"])
def ptx_source(request, monkeypatch):
    """Run the test with the program's own PTX and with ptxport's NVPTX output."""
    if not AVAILABLE:
        pytest.skip(f"no NVIDIA GPU: {WHY_NOT}")
    if request.param == "ptxport" and not HAS_NVPTX:
        pytest.skip("ptxport's NVPTX target (ptxport.codegen.targets.nvptx) is not there yet")
    monkeypatch.setattr(backends.get("cuda"), "ptx_source", request.param)
    return request.param


@pytest.fixture
def dev():
    if not AVAILABLE:
        pytest.skip(f"no NVIDIA GPU: {WHY_NOT}")
    return Device("cuda:0")


@pytest.fixture
def stream(dev):
    return dev.create_stream()


@pytest.fixture
def kernels(ptx_source):
    return Program(KERNELS_PTX, code_type="ptx").compile("native")


@needs_gpu
def test_device_names_and_properties(dev):
    from cuda.bindings import driver

    assert Device("cuda") is dev and Device("CUDA:0") is dev and str(dev) == "cuda:0"
    assert Device() is dev  # the best device present
    p = dev.properties
    _, count = driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0)
    assert dev.name == p.name and p.name
    assert p.multiprocessor_count == count > 0
    assert p.warp_size == 32 and p.max_threads_per_block == 1024
    assert p.max_block_dims == (1024, 1024, 64)
    assert p.max_grid_dims == (2**31 - 1, 65535, 65535)
    assert p.max_shared_memory_per_block == 48 * 1024
    assert p.max_shared_memory_per_block_optin >= p.max_shared_memory_per_block
    assert p.total_global_memory > 1 << 30 and p.total_constant_memory == 64 * 1024
    assert dev.compute_capability >= (7, 0)
    assert dev.arch == "".join(map(str, dev.compute_capability))
    assert not p.integrated and p.unified_addressing


@needs_gpu
@pytest.mark.parametrize("size", [0, 1, 7, 256, 1000, 1 << 20])
def test_allocations_are_aligned_and_device_only(dev, size):
    buf = dev.allocate(size)
    assert buf.size == size and buf.handle % 256 == 0 and buf.device is dev
    assert buf.is_device_accessible and not buf.is_host_accessible
    with pytest.raises(InvalidValueError, match="not addressable from the host"):
        buf.view(np.uint8)
    assert buf.__dlpack_device__() == (2, 0)
    buf.close()


@needs_gpu
def test_out_of_memory(dev):
    with pytest.raises(OutOfMemoryError, match="could not allocate"):
        dev.allocate(dev.properties.total_global_memory * 4)
    dev.allocate(1 << 20).close()  # the device is still usable


@needs_gpu
def test_copies_host_device_and_between_buffers(dev, stream):
    src = np.arange(1 << 16, dtype=np.int32)
    a = dev.allocate(src.nbytes, stream=stream)
    b = dev.allocate(src.nbytes, stream=stream)
    a.copy_from(src, stream=stream)
    b.copy_from(a, stream=stream)
    c = b.copy_to(stream=stream)
    out = np.zeros_like(src)
    c.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, src)


@needs_gpu
@pytest.mark.parametrize(("value", "width", "dtype"), [
    (0xAB, 1, np.uint8), (0xBEEF, 2, np.uint16), (0x3F800000, 4, np.uint32)])
def test_fill_with_every_width(dev, stream, value, width, dtype):
    buf = dev.allocate(4096, stream=stream)
    buf.fill(value, width, stream=stream)
    out = np.zeros(4096 // width, dtype)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert (out == value).all()


@needs_gpu
def test_saxpy(dev, stream, kernels):
    n = 100_000
    x_host = np.arange(n, dtype=np.float32) % 1000
    y_host = np.ones(n, dtype=np.float32)
    x = dev.allocate(x_host.nbytes, stream=stream)
    y = dev.allocate(y_host.nbytes, stream=stream)
    x.copy_from(x_host, stream=stream)
    y.copy_from(y_host, stream=stream)
    saxpy = kernels.get_kernel("saxpy")
    launch(stream, LaunchConfig(grid=(n + 255) // 256, block=256), saxpy, np.float32(2), x, y,
           np.int32(n))
    out = np.empty_like(y_host)
    y.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, 2 * x_host + y_host)  # exact: small integers


@needs_gpu
def test_struct_argument_and_dynamic_shared_memory_past_48_kib(dev, stream, kernels):
    blocks, threads = 64, 256
    src = np.random.default_rng(1).standard_normal(blocks * threads).astype(np.float32)
    s = np.zeros((), STRUCT)
    s["scale"], s["pad"], s["offset"] = 3.0, -1, 0.25
    x = dev.allocate(src.nbytes, stream=stream)
    y = dev.allocate(src.nbytes, stream=stream)
    x.copy_from(src, stream=stream)
    reverse = kernels.get_kernel("reverse_block")
    for shmem in (threads * 4, 100 * 1024):  # the second needs CUDA's opt-in
        y.fill(0, 4, stream=stream)
        launch(stream, LaunchConfig(grid=blocks, block=threads, shmem_size=shmem), reverse,
               s[()], x, y)
        out = np.empty_like(src)
        y.copy_to(out, stream=stream)
        stream.sync()
        reversed_ = src.reshape(blocks, threads)[:, ::-1].ravel()
        expected = ((reversed_ * np.float32(3)).astype(np.float64) + 0.25).astype(np.float32)
        np.testing.assert_array_equal(out, expected)


@needs_gpu
def test_launches_over_the_limits_are_refused(dev, stream, kernels):
    reverse = kernels.get_kernel("reverse_block")
    x = dev.allocate(1024, stream=stream)
    with pytest.raises(LaunchError, match="at most 1024"):
        launch(stream, LaunchConfig(grid=1, block=2048), reverse, np.zeros((), STRUCT)[()], x, x)
    too_much = dev.properties.max_shared_memory_per_block_optin + 1
    with pytest.raises(LaunchError, match="available"):
        launch(stream, LaunchConfig(grid=1, block=32, shmem_size=too_much), reverse,
               np.zeros((), STRUCT)[()], x, x)


@needs_gpu
def test_streams_events_and_timing(dev, kernels):
    n = 1 << 20
    first, second = dev.create_stream(), dev.create_stream()
    x = dev.allocate(4 * n, stream=first)
    y = dev.allocate(4 * n, stream=first)
    x.fill(int(np.float32(1).view(np.uint32)), 4, stream=first)
    y.fill(0, 4, stream=first)
    start = first.record(options=EventOptions(enable_timing=True))
    saxpy = kernels.get_kernel("saxpy")
    for _ in range(10):
        launch(first, LaunchConfig(grid=n // 256, block=256), saxpy, np.float32(1), x, y,
               np.int32(n))
    end = first.record(options={"enable_timing": True})
    second.wait(end)  # the copy on `second` sees all ten launches
    out = np.empty(n, np.float32)
    y.copy_to(out, stream=second)
    second.sync()
    assert (out == 10).all()
    end.sync()
    assert end.is_done and end - start > 0


@needs_gpu
def test_a_module_the_driver_cannot_load_is_a_compile_error(dev, stream, monkeypatch):
    monkeypatch.setattr(backends.get("cuda"), "ptx_source", "native")
    bad = KERNELS_PTX.replace(".target sm_80", ".target sm_100a")  # not this GPU's
    kernel = Program(bad, code_type="ptx").compile("native").get_kernel("trap_now")
    with pytest.raises(CompileError, match="sm_100a|cannot JIT|cannot load"):
        launch(stream, LaunchConfig(grid=1, block=1), kernel)


_FAULT = """
import numpy as np
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime import backends
backends.get("cuda").ptx_source = {source!r}
kernels = Program({ptx!r}, code_type="ptx").compile("native")
stream = Device("cuda:0").create_stream()
{launch}
try:
    stream.sync()
except Exception as e:
    print(type(e).__name__, e)
"""


def _fault_in_child(source: str, launch_line: str) -> str:
    script = _FAULT.format(source=source, ptx=KERNELS_PTX, launch=launch_line)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                            text=True, timeout=120, check=False)
    return result.stdout + result.stderr


@needs_gpu
def test_an_illegal_address_is_an_illegal_address_error(ptx_source):
    output = _fault_in_child(ptx_source, 'launch(stream, LaunchConfig(grid=1, block=1), '
                             'kernels.get_kernel("store_seven"), np.uint64(0x10))')
    assert output.startswith("IllegalAddressError kernel store_seven failed on cuda:0"), output


@needs_gpu
def test_a_trap_is_a_kernel_trap_error(ptx_source):
    output = _fault_in_child(ptx_source, 'launch(stream, LaunchConfig(grid=1, block=1), '
                             'kernels.get_kernel("trap_now"))')
    assert output.startswith("KernelTrapError kernel trap_now failed on cuda:0"), output


_ASSERT = """
import numpy as np
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime import backends
if {device!r} == "cuda:0":
    backends.get("cuda").ptx_source = {source!r}
kernel = Program({ptx!r}, code_type="ptx").compile("native").get_kernel("checked_gather")
dev = Device({device!r})
stream = dev.create_stream()
idx = np.arange(250, dtype=np.int32)
idx[2 * 64 + 5] = 300
src = np.zeros(300, np.float32)
buffers = [dev.allocate(a.nbytes, stream=stream) for a in (idx, src, src)]
buffers[0].copy_from(idx, stream=stream)
launch(stream, LaunchConfig(grid=4, block=64), kernel, *buffers, np.int32(250), np.int32(300))
try:
    stream.sync()
except Exception as e:
    print(type(e).__name__)
"""


@needs_gpu
def test_a_failed_assert_prints_cudas_text_as_the_cpu_device_does(ptx_source):
    """NVIDIA's driver prints the text of a failed assert (the PTX keeps the call of its
    __assertfail); the CPU device prints the same line; both raise KernelAssertError."""
    source = KERNEL_DIR / "assert_kernel.cu"
    ptx = corpus_ptx(source, "sm_80")
    line = next(i for i, text in enumerate(source.read_text().splitlines(), 1)
                if "assert(j" in text)
    outputs = []
    for device in ("cuda:0", "cpu"):
        script = _ASSERT.format(source=ptx_source, ptx=ptx, device=device)
        result = subprocess.run([sys.executable, "-c", script], capture_output=True,
                                text=True, timeout=120, check=False)
        outputs.append((result.stdout, [line for line in result.stderr.splitlines()
                                        if "Assertion" in line]))
    assert outputs[0] == outputs[1] == ("KernelAssertError\n", [
        f"assert_kernel.cu:{line}: void checked_gather(const int *, const float *, float *, int, "
        "int): block: [2,0,0], thread: [5,0,0] Assertion `j >= 0 && j < limit` failed."])


# -- the corpus, as on the CPU device ------------------------------------------------------------

_PROGRAMS: dict[tuple[str, str], object] = {}


def _corpus_program(file: str, source: str):
    if (file, source) not in _PROGRAMS:
        ptx = corpus_ptx(KERNEL_DIR / file, "sm_80")
        _PROGRAMS[file, source] = Program(ptx, code_type="ptx").compile("native")
    return _PROGRAMS[file, source]


def cuda_launcher(source: str):
    """The kernel_cases launcher contract on Device("cuda:0")."""
    def launcher(case: KernelCase, args) -> dict[int, np.ndarray]:
        kernel = _corpus_program(case.file, source).get_kernel(case.kernel)
        return run_on_device(Device("cuda:0"), kernel, case, args)
    return launcher


@needs_gpu
@pytest.mark.skipif(not nvrtc.available()[0], reason="the corpus's PTX needs NVRTC")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernel_on_cuda(case: KernelCase, ptx_source):
    run_case(case, cuda_launcher(ptx_source))
