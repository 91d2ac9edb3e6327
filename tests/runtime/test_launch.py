"""Programs, kernels and launches: the DESIGN.md example, argument checks, launch limits."""

import gc
import sys
import weakref

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
from ptxport.errors import (
    ArgumentError,
    CompileError,
    InvalidValueError,
    KernelNotFoundError,
    LaunchError,
    PtxSyntaxError,
)
from ptxport.frontends import nvrtc

needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC is not installed")

SAXPY_CU = """
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y,
                                 int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture
def stream():
    return Device("cpu").create_stream()


@pytest.fixture
def misc(misc_ptx):
    return Program(misc_ptx, code_type="ptx").compile("native")


def _saxpy_hosts(n):
    return np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)


@needs_nvrtc
def test_design_example_as_written(fake_kernels):
    source = SAXPY_CU
    n = 1000
    x_host, y_host = _saxpy_hosts(n)
    expected = 2 * x_host + y_host

    # DESIGN.md, "Public API", as written:
    dev = Device("cpu")            # or "cuda:0", "hip:0", "opencl:0"; Device() is the best one present  # noqa: E501
    dev.set_current()
    stream = dev.create_stream()
    kernel = Program(source, code_type="c++").compile("native").get_kernel("saxpy")   # or code_type="ptx"  # noqa: E501
    x = dev.allocate(x_host.nbytes, stream=stream); x.copy_from(x_host, stream=stream)  # noqa: E702
    y = dev.allocate(y_host.nbytes, stream=stream); y.copy_from(y_host, stream=stream)  # noqa: E702
    launch(stream, LaunchConfig(grid=(n + 255) // 256, block=256), kernel, np.float32(2), x, y, np.int32(n))  # noqa: E501
    y.copy_to(y_host, stream=stream)
    stream.sync()

    np.testing.assert_array_equal(y_host, expected)
    assert fake_kernels.calls == [("saxpy", (4, 1, 1), (256, 1, 1), 0)]


def test_ptx_saxpy_and_the_subscript_launch(fake_kernels, saxpy_ptx, stream):
    kernel = Program(saxpy_ptx, code_type="ptx").compile("native").get_kernel("saxpy")
    n = 300
    x_host, y_host = _saxpy_hosts(n)
    dev = stream.device
    x, y = dev.allocate(x_host.nbytes), dev.allocate(y_host.nbytes)
    x.copy_from(x_host, stream=stream)
    y.copy_from(y_host, stream=stream)
    kernel[(n + 127) // 128, 128, stream](np.float32(3), x, y, np.int32(n))
    kernel[(n + 127) // 128, 128, stream, 0](np.float32(1), x, y, np.int32(n))
    y.copy_to(y_host, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(y_host, 4 * np.arange(n, dtype=np.float32) + 1)
    assert fake_kernels.compiled == ["saxpy"]      # compiled once per device, then kept

    dev.sync()                                     # the default stream, without a stream given
    kernel[1, 32](np.float32(1), x, y, np.int32(0))
    dev.sync()
    assert len(fake_kernels.calls) == 3


def test_arguments_info(saxpy_ptx, misc):
    saxpy = Program(saxpy_ptx, code_type="ptx").compile("native").get_kernel("saxpy")
    assert saxpy.num_arguments == 4
    assert [(a.offset, a.size, a.type, a.pointer) for a in saxpy.arguments_info] == [
        (0, 4, "f32", False), (8, 8, "u64", True), (16, 8, "u64", True), (24, 4, "u32", False)]
    assert saxpy.arguments_info[1].evidence == "converted with cvta"
    struct, out = misc.get_kernel("store_struct").arguments_info
    assert (struct.type, struct.size, struct.alignment, struct.pointer) == ("b8[16]", 16, 8, False)
    assert out.pointer is True
    pointers = [a.pointer for a in misc.get_kernel("scalars").arguments_info]
    assert pointers == [False, False, None, None, False]  # 8-byte values: unknown
    assert misc.get_kernel("tile").static_shared_bytes == 4096


def test_unknown_kernel_lists_the_kernels(misc):
    with pytest.raises(KernelNotFoundError,
                       match="no kernel named 'nope'; the kernels are: store_struct, tile, "
                             "scalars, mark, fault"):
        misc.get_kernel("nope")


def test_program_errors(saxpy_ptx):
    with pytest.raises(InvalidValueError, match="code_type"):
        Program(saxpy_ptx, code_type="cubin")
    with pytest.raises(InvalidValueError, match="unknown target 'sass'"):
        Program(saxpy_ptx, code_type="ptx").compile("sass")
    with pytest.raises(PtxSyntaxError, match="bad.ptx:"):
        Program(".version 8.0\n.target sm_80\n.address_size 64\n.entry k( { ret; }",
                code_type="ptx", options=ProgramOptions(name="bad.ptx")).compile("native")


@needs_nvrtc
def test_cpp_compile_errors_carry_nvrtcs_log():
    with pytest.raises(CompileError, match="NVRTC refused") as caught:
        Program('extern "C" __global__ void k() { undeclared(); }', code_type="c++",
                options=ProgramOptions(name="broken.cu")).compile("native")
    assert "undeclared" in caught.value.log


@needs_nvrtc
def test_program_options_reach_nvrtc():
    source = """
    #if !defined(SCALE) || !defined(ENABLED)
    #error macros missing
    #endif
    extern "C" __global__ void k(float* p) { p[0] = SCALE; }
    """
    options = ProgramOptions(name="options.cu", define_macro=["SCALE=2", ("ENABLED", "1")],
                             std="c++17", use_fast_math=True, arch="sm_80")
    code = Program(source, code_type="c++", options=options).compile("native")
    assert code.kernel_names == ("k",) and ".target sm_80" in code.code


def test_missing_code_generator_is_a_clear_error(monkeypatch, saxpy_ptx, stream):
    monkeypatch.setitem(sys.modules, "ptxport.codegen.targets.cpu", None)
    kernel = Program(saxpy_ptx, code_type="ptx").compile("native").get_kernel("saxpy")
    buf = stream.device.allocate(16)
    with pytest.raises(CompileError, match="CPU code generator"):
        launch(stream, LaunchConfig(grid=1, block=4), kernel, np.float32(1), buf, buf,
               np.int32(4))


# -- arguments ------------------------------------------------------------------------------

def _saxpy(fake_kernels, saxpy_ptx):
    return Program(saxpy_ptx, code_type="ptx").compile("native").get_kernel("saxpy")


@pytest.mark.parametrize(("args", "message"), [
    ((np.float32(2),), "takes 4 argument\\(s\\) \\(.f32 saxpy_param_0, .u64 saxpy_param_1"),
    ((2.0, "X", "Y", np.int32(4)),
     "argument 0 \\(saxpy_param_0: .f32, 4 bytes\\): got a Python float.*np.float32"),
    ((np.float32(2), "X", "Y", 4), "argument 3 .*Python int.*np.int32\\(...\\) or np.uint32"),
    ((np.float64(2), "X", "Y", np.int32(4)), "got float64 of 8 bytes; pass np.float32"),
    ((np.int32(2), "X", "Y", np.int32(4)), "is floating-point: got int32"),
    ((np.float32(2), "X", "Y", np.float32(4)), "argument 3 .* is an integer: got float32"),
    ((np.float32(2), np.int64(0), "Y", np.int32(4)),
     "argument 1 .* is a pointer: pass a Buffer, not int64"),
    ((np.float32(2), "X", "Y", "X"), "argument 3 .* is a value, not a pointer"),
    ((np.float32(2), np.zeros(4, np.float32), "Y", np.int32(4)),
     "argument 1 .*shape \\(4,\\) cannot be passed: copy it into a Buffer"),
    ((np.float32(2), "X", [1.0], np.int32(4)), "argument 2 .*cannot pass a list"),
    ((np.float32(2), "X", "closed", np.int32(4)), "argument 2 .*the buffer is closed"),
])
def test_argument_errors_name_the_parameter(fake_kernels, saxpy_ptx, stream, args, message):
    kernel = _saxpy(fake_kernels, saxpy_ptx)
    dev = stream.device
    closed = dev.allocate(16)
    closed.close()
    buffers = {"X": dev.allocate(16), "Y": dev.allocate(16), "closed": closed}
    args = [buffers[a] if isinstance(a, str) else a for a in args]
    with pytest.raises(ArgumentError, match=message):
        launch(stream, LaunchConfig(grid=1, block=4), kernel, *args)
    stream.sync()
    assert fake_kernels.calls == [] and fake_kernels.compiled == []


def test_values_are_packed_by_the_parameter_layout(fake_kernels, misc, stream, host_array):
    struct = np.dtype([("scale", np.float32), ("pad", np.int32), ("offset", np.float64)])
    value = np.array([(1.5, 7, -2.25)], dtype=struct)[0]
    seen = {}

    def store_struct(grid, block, shmem, raw, out):
        seen["struct"] = np.frombuffer(raw, struct)[0]
        host_array(int(out), 1, np.float32)[0] = seen["struct"]["scale"]

    def scalars(grid, block, shmem, d, flag, big, unused, half):
        seen["scalars"] = (d, flag, big, unused, half)

    fake_kernels["store_struct"] = store_struct
    fake_kernels["scalars"] = scalars
    out = stream.device.allocate(4)
    launch(stream, LaunchConfig(grid=1, block=1), misc.get_kernel("store_struct"), value, out)
    stream.sync()
    assert tuple(seen["struct"]) == (1.5, 7, -2.25) and out.view(np.float32)[0] == 1.5

    raw_address = np.uint64(out.handle)  # a raw device address is passed on as is
    launch(stream, LaunchConfig(grid=1, block=1), misc.get_kernel("store_struct"),
           np.zeros((), struct)[()], raw_address)
    launch(stream, LaunchConfig(grid=1, block=1), misc.get_kernel("scalars"),
           np.float64(0.5), np.bool_(True), out, np.int64(-3), np.uint16(9))
    stream.sync()
    assert tuple(seen["struct"]) == (0.0, 0, 0.0) and out.view(np.float32)[0] == 0.0
    d, flag, big, unused, half = seen["scalars"]
    assert (d, flag, big, half) == (0.5, 1, out.handle, 9) and unused == np.uint64(2**64 - 3)

    with pytest.raises(ArgumentError,
                       match="argument 0 .*b8\\[16\\].*got a structured scalar of 8 bytes"):
        launch(stream, LaunchConfig(grid=1, block=1), misc.get_kernel("store_struct"),
               np.zeros((), [("a", np.float64)])[()], out)



def test_the_same_arguments_again_pack_to_what_they_hold_now(fake_kernels, misc, saxpy_ptx,
                                                               stream):
    """A launch passing the very objects of the last one reuses its packing, but a structured
    scalar (a view into its array) or a 0-d array changed since packs anew, and a Buffer
    closed since is refused, naming the argument."""
    struct = np.dtype([("scale", np.float32), ("pad", np.int32), ("offset", np.float64)])
    array = np.array([(1.5, 7, -2.25)], dtype=struct)
    value = array[0]
    seen = []
    fake_kernels["store_struct"] = lambda grid, block, shmem, raw, out: seen.append(
        (tuple(np.frombuffer(raw, struct)[0]), int(out)))
    kernel, out = misc.get_kernel("store_struct"), stream.device.allocate(4)
    config = LaunchConfig(grid=1, block=1)
    for scale in (1.5, 1.5, 3.0):
        array[0]["scale"] = scale
        launch(stream, config, kernel, value, out)
    stream.sync()
    assert seen == [((scale, 7, -2.25), out.handle) for scale in (1.5, 1.5, 3.0)]
    ys = []
    fake_kernels["saxpy"] = lambda grid, block, shmem, a, x, y, n: ys.append(int(y))
    saxpy = _saxpy(fake_kernels, saxpy_ptx)
    x, y = stream.device.allocate(16), stream.device.allocate(16)
    a, n = np.float32(2), np.int32(4)
    for _ in range(2):
        launch(stream, config, saxpy, a, x, y, n)
    stream.sync()
    y.close()
    with pytest.raises(ArgumentError, match="argument 2 .*the buffer is closed"):
        launch(stream, config, saxpy, a, x, y, n)
    stream.sync()
    # (the memo holds the Buffers weakly: one dropped is freed as without it, and whatever
    # comes at its id later packs anew)
    y = stream.device.allocate(16)
    launch(stream, config, saxpy, a, x, y, n)
    stream.sync()
    alive = weakref.ref(y)
    del y
    gc.collect()
    assert alive() is None
    for _ in range(3):
        y = stream.device.allocate(16)
        launch(stream, config, saxpy, a, x, y, n)
        stream.sync()
        assert ys[-1] == y.handle
        del y

# -- launch limits --------------------------------------------------------------------------

@pytest.mark.parametrize(("config", "message"), [
    (dict(grid=1, block=1025), "that is 1025 threads; a block may have at most 1024"),
    (dict(grid=1, block=(32, 32, 2)), "that is 2048 threads"),
    (dict(grid=1, block=(1, 1, 65)), "block.z may be at most 64"),
    (dict(grid=1, block=(1, 1025, 1)), "1025 threads"),
    (dict(grid=2**31, block=1), "grid.x may be at most 2147483647"),
    (dict(grid=(1, 65536), block=1), "grid.y may be at most 65535"),
    (dict(grid=(1, 1, 65536), block=1), "grid.z may be at most 65535"),
    (dict(grid=1, block=32, shmem_size=227 * 1024 + 1), "at most 232448 are available"),
])
def test_launches_cuda_refuses_are_refused_before_anything_runs(
        fake_kernels, saxpy_ptx, stream, config, message):
    kernel = _saxpy(fake_kernels, saxpy_ptx)
    buf = stream.device.allocate(16)
    with pytest.raises(LaunchError, match=message):
        launch(stream, LaunchConfig(**config), kernel, np.float32(1), buf, buf, np.int32(4))
    stream.sync()
    assert fake_kernels.calls == [] and fake_kernels.compiled == []


@pytest.mark.parametrize(("config", "message"), [
    (dict(grid=0, block=1), "grid dimensions must be at least 1"),
    (dict(grid=1, block=(32, 0)), "block dimensions must be at least 1"),
    (dict(grid=(1, 1, 1, 1), block=1), "grid has 4 dimensions"),
    (dict(grid=1.0, block=1), "grid must be an int"),
    (dict(block=1), "needs grid="),
    (dict(grid=1, block=1, shmem_size=-4), "must not be negative"),
])
def test_bad_launch_configs(config, message):
    with pytest.raises(LaunchError, match=message):
        LaunchConfig(**config)


def test_config_normalises_to_three_dims():
    config = LaunchConfig(grid=(4, 2), block=np.int64(128))
    assert (config.grid, config.block, config.shmem_size) == ((4, 2, 1), (128, 1, 1), 0)


def test_static_shared_memory_and_maxntid_count(fake_kernels, misc, stream):
    fake_kernels["tile"] = lambda *args: None
    tile = misc.get_kernel("tile")
    buf = stream.device.allocate(4)
    limit = 227 * 1024
    launch(stream, LaunchConfig(grid=1, block=128, shmem_size=limit - 4096), tile, buf)
    with pytest.raises(LaunchError, match="4096 bytes of static shared memory"):
        launch(stream, LaunchConfig(grid=1, block=128, shmem_size=limit - 4095), tile, buf)
    with pytest.raises(LaunchError, match="at most 128 threads per block \\(.maxntid 128, 1, 1"):
        launch(stream, LaunchConfig(grid=1, block=129), tile, buf)
    stream.sync()
    assert len(fake_kernels.calls) == 1


def test_program_compiles_for_a_named_target(saxpy_ptx):
    """compile(target) gives that target's code now, and the kernels stay launchable."""
    code = Program(saxpy_ptx, code_type="ptx").compile("nvptx:sm_90")
    assert code.code_type == "nvptx:sm_90"
    assert ".entry" in code.code and ".target sm_90" in code.code
    assert code.ptx == saxpy_ptx and code.get_kernel(code.kernel_names[0])
    cpu = Program(saxpy_ptx, code_type="ptx").compile("cpu")
    assert set(cpu.code) == set(cpu.kernel_names)
    assert all("define" in text for text in cpu.code.values())
    with pytest.raises(InvalidValueError, match="nvptx needs one of"):
        Program(saxpy_ptx, code_type="ptx").compile("nvptx:sm_1")
