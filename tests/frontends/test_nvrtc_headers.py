"""Headers a CUDA C++ source may include through NVRTC: CCCL's (cooperative groups, cub,
libcu++) from the nvidia-cuda-cccl wheel, and ptxport's own C++ standard headers.

NVRTC has no C++ standard library and, on its own, no cub or <nv/target>; nvcc has both.
Each kernel below runs on Device("cpu") and is checked against numpy.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
from ptxport.errors import CompileError
from ptxport.frontends import nvrtc
from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx

HAVE_NVRTC, WHY_NOT = nvrtc.available()
pytestmark = pytest.mark.skipif(not HAVE_NVRTC, reason=WHY_NOT)

BLOCK = 128
GRID = 4

LIBRARIES = textwrap.dedent("""\
    #include <cooperative_groups.h>
    #include <cooperative_groups/reduce.h>
    #include <cub/block/block_reduce.cuh>
    #include <cub/block/block_scan.cuh>
    #include <cub/warp/warp_reduce.cuh>
    namespace cg = cooperative_groups;

    extern "C" __global__ void cg_tile_sum(const int* x, int* total)
    {
        cg::thread_block block = cg::this_thread_block();
        cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
        int v = cg::reduce(tile, x[blockIdx.x * blockDim.x + block.thread_rank()],
                           cg::plus<int>());
        if (tile.thread_rank() == 0)
            atomicAdd(total, v);
    }

    extern "C" __global__ void cub_block_sum(const int* x, int* sums)
    {
        using BlockReduce = cub::BlockReduce<int, 128>;
        __shared__ typename BlockReduce::TempStorage storage;
        int v = BlockReduce(storage).Sum(x[blockIdx.x * 128 + threadIdx.x]);
        if (threadIdx.x == 0)
            sums[blockIdx.x] = v;
    }

    extern "C" __global__ void cub_warp_max(const float* x, float* maxima)
    {
        using WarpReduce = cub::WarpReduce<float>;
        __shared__ typename WarpReduce::TempStorage storage[4];
        int warp = threadIdx.x / 32;
        float v = WarpReduce(storage[warp]).Reduce(x[blockIdx.x * 128 + threadIdx.x],
                                                    cuda::maximum<>{});
        if (threadIdx.x % 32 == 0)
            maxima[blockIdx.x * 4 + warp] = v;
    }

    extern "C" __global__ void cub_block_exclusive_sum(const int* x, int* out)
    {
        using BlockScan = cub::BlockScan<int, 128>;
        __shared__ typename BlockScan::TempStorage storage;
        int i = blockIdx.x * 128 + threadIdx.x, v;
        BlockScan(storage).ExclusiveSum(x[i], v);
        out[i] = v;
    }
    """)

# Every header NVRTC lacks and ptxport provides, used as CUDA C++ code uses it; each
# expression must be true.
STANDARD = textwrap.dedent("""\
    #include <cfloat>
    #include <climits>
    #include <cmath>
    #include <cstdint>
    #include <limits>
    #include <type_traits>
    #include <utility>
    #include <stdint.h>

    template <typename T>
    __device__ T largest() { return std::numeric_limits<T>::max(); }

    extern "C" __global__ void standard_headers(int* ok)
    {
        int a = 1, b = 2;
        std::swap(a, b);
        std::uint32_t u = UINT32_MAX;
        int64_t wide = INT64_MAX;
        const bool checks[] = {
            FLT_MAX == largest<float>(),
            DBL_EPSILON == std::numeric_limits<double>::epsilon(),
            INT_MAX == largest<int>() && CHAR_BIT == 8 && LLONG_MIN < 0,
            u == 0xffffffffu && wide == 0x7fffffffffffffffll && sizeof(std::int8_t) == 1,
            std::is_same<std::remove_const_t<const std::uint16_t>, unsigned short>::value,
            std::is_floating_point_v<float> && !std::is_signed_v<std::size_t>,
            a == 2 && b == 1 && std::make_pair(a, b).second == 1,
            std::isnan(std::sqrt(-1.0f)) && std::isinf(std::numeric_limits<float>::infinity()),
            std::fabs(-1.5) == 1.5 && std::abs(-3) == 3,
        };
        ok[threadIdx.x] = threadIdx.x < sizeof(checks) ? checks[threadIdx.x] : -1;
    }
    """)
STANDARD_CHECKS = 9


@pytest.fixture(scope="module")
def stream():
    return Device("cpu").create_stream()


@pytest.fixture(scope="module")
def libraries():
    options = ProgramOptions(name="libraries.cu", arch="sm_80")
    return Program(LIBRARIES, "c++", options).compile()


def _run(stream, kernel, host_in: np.ndarray, out_shape, out_dtype):
    device = Device("cpu")
    x = device.allocate(host_in.nbytes, stream=stream)
    x.copy_from(host_in, stream=stream)
    out = np.zeros(out_shape, out_dtype)
    y = device.allocate(out.nbytes, stream=stream)
    y.copy_from(out, stream=stream)
    launch(stream, LaunchConfig(grid=GRID, block=BLOCK), kernel, x, y)
    y.copy_to(out, stream=stream)
    stream.sync()
    return out


def _ints() -> np.ndarray:
    return np.random.default_rng(13).integers(-1000, 1000, GRID * BLOCK).astype(np.int32)


def test_cooperative_groups_tile_reduce(libraries, stream):
    x = _ints()
    total = _run(stream, libraries.get_kernel("cg_tile_sum"), x, 1, np.int32)
    assert total[0] == x.sum()


def test_cub_block_reduce(libraries, stream):
    x = _ints()
    sums = _run(stream, libraries.get_kernel("cub_block_sum"), x, GRID, np.int32)
    np.testing.assert_array_equal(sums, x.reshape(GRID, BLOCK).sum(axis=1))


def test_cub_warp_reduce(libraries, stream):
    x = np.random.default_rng(7).standard_normal(GRID * BLOCK).astype(np.float32)
    maxima = _run(stream, libraries.get_kernel("cub_warp_max"), x, GRID * 4, np.float32)
    np.testing.assert_array_equal(maxima, x.reshape(-1, 32).max(axis=1))


def test_cub_block_scan(libraries, stream):
    x = _ints()
    out = _run(stream, libraries.get_kernel("cub_block_exclusive_sum"), x, x.size, np.int32)
    rows = x.reshape(GRID, BLOCK)
    np.testing.assert_array_equal(out, (np.cumsum(rows, axis=1) - rows).ravel())


def test_standard_headers(stream):
    code = Program(STANDARD, "c++", ProgramOptions(name="standard.cu", arch="sm_80")).compile()
    device = Device("cpu")
    ok = np.zeros(32, np.int32)
    buffer = device.allocate(ok.nbytes, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=32), code.get_kernel("standard_headers"), buffer)
    buffer.copy_to(ok, stream=stream)
    stream.sync()
    assert ok[:STANDARD_CHECKS].tolist() == [1] * STANDARD_CHECKS
    assert (ok[STANDARD_CHECKS:] == -1).all()


@pytest.mark.parametrize("header", ["cstddef", "cassert", "algorithm", "array", "tuple",
                                    "functional", "numeric", "cstring", "float.h", "limits.h",
                                    "stddef.h", "math.h", "assert.h"])
def test_other_standard_headers_are_found(header):
    compile_to_ptx(f'#include <{header}>\nextern "C" __global__ void k() {{}}\n', "h.cu")


def test_standard_headers_refuse_other_compilers():
    text = (nvrtc.std_include_dir() / "__ptxport_std.h").read_text()
    assert "#ifndef __CUDACC_RTC__" in text and "#error" in text


def test_header_directories_come_after_the_users(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    (tmp_path / "climits").write_text("#define MINE 42\n")
    ptx = compile_to_ptx('#include <climits>\nextern "C" __global__ void k(int* o) '
                         '{ *o = MINE; }\n', "mine.cu",
                         NvrtcOptions(include_paths=[str(tmp_path)]))
    assert "42" in ptx
    with pytest.raises(CompileError, match="MINE"):
        compile_to_ptx('#include <climits>\nextern "C" __global__ void k(int* o) '
                       '{ *o = MINE; }\n', "mine.cu")


def test_cccl_comes_from_its_wheel():
    include = nvrtc.cccl_include_dir()
    assert include is not None
    assert (include / "cub" / "cub.cuh").is_file() and (include / "nv" / "target").is_file()
    assert "site-packages" in include.parts or "dist-packages" in include.parts


def test_missing_cccl_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(nvrtc, "cccl_include_dir", lambda: None)
    with pytest.raises(CompileError, match=r"nvidia-cuda-cccl.*pip install 'ptxport\[cuda\]'"):
        compile_to_ptx('#include <cub/cub.cuh>\nextern "C" __global__ void k() {}\n', "c.cu")
