"""A cuda.core script runs with only its import changed.

SAXPY_SCRIPT is the shape of cuda.core's examples/saxpy.py (templates without extern "C",
name_expressions, compile("cubin"), ProgramOptions(std=..., arch=f"sm_{dev.arch}"),
get_kernel by the C++ name, launch on a stream), with numpy and Device.allocate where the
example uses CuPy arrays. The test runs it as text after replacing its import line only.
"""

from __future__ import annotations

import textwrap

import pytest

from ptxport import Buffer, Device, LaunchConfig, MemoryResource, Program, launch
from ptxport.errors import InvalidValueError, UnsupportedFeatureError
from ptxport.frontends import nvrtc

HAVE_NVRTC, WHY_NOT = nvrtc.available()

CUDA_CORE_IMPORT = "from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch"

SAXPY_SCRIPT = textwrap.dedent('''\
    import sys

    import numpy as np

    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

    # compute out = a * x + y
    code = """
    template<typename T>
    __global__ void saxpy(const T a,
                          const T* x,
                          const T* y,
                          T* out,
                          size_t N) {
        const unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
        for (size_t i=tid; i<N; i+=gridDim.x*blockDim.x) {
            out[i] = a * x[i] + y[i];
        }
    }
    """

    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()

    # prepare program
    program_options = ProgramOptions(std="c++11", arch=f"sm_{dev.arch}")
    prog = Program(code, code_type="c++", options=program_options)
    mod = prog.compile(
        "cubin",
        logs=sys.stdout,
        name_expressions=("saxpy<float>", "saxpy<double>"),
    )

    # run in single precision
    ker = mod.get_kernel("saxpy<float>")
    dtype = np.float32

    size = np.uint64(1000)
    a = dtype(10)
    rng = np.random.default_rng(0)
    x = rng.random(size, dtype=dtype)
    y = rng.random(size, dtype=dtype)
    x_buf = dev.memory_resource.allocate(x.nbytes, stream=s)
    y_buf = dev.allocate(y.nbytes, stream=s)
    out_buf = dev.allocate(x.nbytes, stream=s)
    x_buf.copy_from(x, stream=s)
    y_buf.copy_from(y, stream=s)
    dev.sync()

    block = 32
    grid = int((size + block - 1) // block)
    config = LaunchConfig(grid=grid, block=block)
    ker_args = (a, x_buf, y_buf, out_buf, size)

    launch(s, config, ker, *ker_args)
    out = np.empty_like(x)
    out_buf.copy_to(out, stream=s)
    s.sync()
    assert np.allclose(out, a * x + y)

    # run in double precision
    ker = mod.get_kernel("saxpy<double>")
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    xd_buf, yd_buf = dev.allocate(xd.nbytes, stream=s), dev.allocate(yd.nbytes, stream=s)
    outd_buf = dev.allocate(xd.nbytes, stream=s)
    xd_buf.copy_from(xd, stream=s)
    yd_buf.copy_from(yd, stream=s)
    launch(s, config, ker, np.float64(10), xd_buf, yd_buf, outd_buf, size)
    outd = np.empty_like(xd)
    outd_buf.copy_to(outd, stream=s)
    s.sync()
    assert np.allclose(outd, 10 * xd + yd)

    dev.memory_resource.deallocate(x_buf.handle, x.nbytes, stream=s)
    for buf in (y_buf, out_buf, xd_buf, yd_buf, outd_buf):
        buf.close(s)
    s.sync()
    print("done")
    ''')


@pytest.mark.skipif(not HAVE_NVRTC, reason=WHY_NOT)
def test_cuda_core_saxpy_runs_with_only_the_import_changed(capsys):
    assert SAXPY_SCRIPT.count(CUDA_CORE_IMPORT) == 1
    script = SAXPY_SCRIPT.replace(CUDA_CORE_IMPORT, CUDA_CORE_IMPORT.replace(
        "from cuda.core", "from ptxport"))
    exec(compile(script, "cuda_core_saxpy.py", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip().endswith("done")



PTX = textwrap.dedent("""\
    .version 8.0
    .target sm_80
    .address_size 64
    .visible .entry noop() { ret; }
    """)


def _noop():
    return Program(PTX, "ptx").compile().get_kernel("noop")


def test_launch_config_takes_cuda_cores_arguments_in_its_order():
    config = LaunchConfig((4, 2), (2, 1), 64, 128, False, True)
    assert config.grid == (4, 2, 1) and config.cluster == (2, 1, 1)
    assert config.block == (64, 1, 1) and config.shmem_size == 128
    assert config.programmatic_stream_serialization and not config.is_cooperative
    assert LaunchConfig(grid=1, block=1).cluster is None


def test_cluster_launches_are_refused():
    # (cooperative launches run on the cpu device: test_cooperative.py)
    stream = Device("cpu").create_stream()
    with pytest.raises(UnsupportedFeatureError, match=r"cluster.*noop"):
        launch(stream, LaunchConfig(grid=1, block=32, cluster=2), _noop())


def test_programmatic_stream_serialization_launches():
    stream = Device("cpu").create_stream()
    launch(stream, LaunchConfig(grid=2, block=32, programmatic_stream_serialization=True),
           _noop())
    stream.sync()


def test_memory_resource_allocates_and_deallocates_buffers():
    device = Device("cpu")
    resource = device.memory_resource
    assert resource is device.memory_resource and isinstance(resource, MemoryResource)
    assert resource.is_device_accessible and resource.is_host_accessible
    assert resource.device_id == 0
    buffer = resource.allocate(256)
    assert isinstance(buffer, Buffer) and buffer.size == 256 and buffer.handle % 256 == 0
    with pytest.raises(InvalidValueError, match="has 256 bytes, not 128"):
        resource.deallocate(buffer.handle, 128)
    resource.deallocate(buffer.handle, 256)
    device.sync()
    assert buffer.is_closed
    with pytest.raises(InvalidValueError, match="not the address of a live buffer"):
        resource.deallocate(buffer.handle or 256, 256)
    with pytest.raises(InvalidValueError, match="not the address of a live buffer"):
        resource.deallocate(device.allocate(64).handle, 64)
