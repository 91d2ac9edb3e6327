"""Dynamic parallelism on the CPU (runtime/backends/cpu/device_launch.py): kernels launching
kernels with CUDA's CDP2 semantics (Programming Guide, "CUDA Dynamic Parallelism"): child
grids complete before their parent's launch does, grids of one stream run in launch order,
tail launches run after the parent and all its other work, arguments of every kind reach the
child, errors of device-side launches are each thread's (cudaGetLastError /
cudaPeekAtLastError), nesting stops at 24 levels, and a child's fault fails the host's launch.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from cpu_harness import index_outside
from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
from ptxport.errors import IllegalAddressError
from ptxport.frontends import nvrtc
from ptxport.runtime.backends.cpu.device_launch import MAX_DEPTH

needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0],
                                 reason="NVRTC compiles the CUDA C++ of this test's kernels")

SOURCE = textwrap.dedent("""\
    struct Pair { int a; double b; };

    extern "C" __global__ void record_params(char c, short s, int i, long long l, float f,
                                             double d, int *p, Pair pair, long long *out) {
      out[0] = c; out[1] = s; out[2] = i; out[3] = l;
      out[4] = (long long)(f * 1000); out[5] = (long long)(d * 1000);
      out[6] = *p; out[7] = pair.a; out[8] = (long long)(pair.b * 1000);
    }

    extern "C" __global__ void launch_params(int *p, long long *out) {
      Pair pair = {-7, 2.5};
      record_params<<<1, 1>>>(-3, -300, 123456, -5000000000LL, 1.25f, -0.125, p, pair, out);
    }

    extern "C" __global__ void recurse(int *levels, int *errors, int depth, int limit) {
      levels[depth] = depth + 1;
      if (depth < limit) {
        recurse<<<1, 1>>>(levels, errors, depth + 1, limit);
        errors[depth] = cudaGetLastError();
      }
    }

    extern "C" __global__ void add_one(int *x, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) atomicAdd(&x[i], 1);
    }

    extern "C" __global__ void double_it(int *x, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) x[i] *= 2;
    }

    extern "C" __global__ void sum_all(const int *x, int n, long long *total) {
      long long s = 0;
      for (int i = 0; i < n; ++i) s += x[i];
      *total = s;
    }

    // every thread: add_one then double_it on its element in its block's stream (in that
    // order), add_one fire-and-forget; thread 0 a tail launch summing everything
    extern "C" __global__ void many(int *x, int n, long long *total) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i >= n) return;
      add_one<<<1, 1>>>(x + i, 1);
      double_it<<<1, 1>>>(x + i, 1);
      add_one<<<1, 1, 0, cudaStreamFireAndForget>>>(x + i, 1);
      if (i == 0) sum_all<<<1, 1, 0, cudaStreamTailLaunch>>>(x, n, total);
    }

    extern "C" __global__ void named_stream(int *x, int n) {
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      add_one<<<(n + 63) / 64, 64, 0, s>>>(x, n);
      double_it<<<(n + 63) / 64, 64, 0, s>>>(x, n);
      cudaStreamDestroy(s);
    }

    // add_one in one stream, double_it in another that waits for an event recorded after it
    extern "C" __global__ void event_order(int *x, int n, int *errors) {
      cudaStream_t first, second;
      cudaEvent_t added, timed;
      cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking);
      cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking);
      errors[0] = cudaEventCreateWithFlags(&added, cudaEventDisableTiming);
      errors[1] = cudaEventCreateWithFlags(&timed, cudaEventDefault);    // no timing on the device
      add_one<<<(n + 63) / 64, 64, 0, first>>>(x, n);
      errors[2] = cudaEventRecord(added, first);
      errors[3] = cudaStreamWaitEvent(second, added, 0);
      double_it<<<(n + 63) / 64, 64, 0, second>>>(x, n);
      errors[4] = cudaEventDestroy(added);
      cudaStreamDestroy(first);
      cudaStreamDestroy(second);
    }

    extern "C" __global__ void bad_launches(int *errors) {
      int t = threadIdx.x * 5;
      add_one<<<1, 2048>>>(errors, 0);              // more threads than a block may have
      errors[t] = cudaPeekAtLastError();
      errors[t + 1] = cudaGetLastError();
      errors[t + 2] = cudaGetLastError();
      add_one<<<dim3(1, 70000), 1>>>(errors, 0);    // a grid too high
      errors[t + 3] = cudaGetLastError();
      add_one<<<1, 1>>>(errors, 0);
      errors[t + 4] = cudaGetLastError();
    }

    extern "C" __global__ void write_at(int *p) { *p = 1; }

    extern "C" __global__ void launch_faulting(int *p, int i) { write_at<<<1, 1>>>(p + i); }
    """)


@pytest.fixture(scope="module")
def code():
    if not nvrtc.available()[0]:
        pytest.skip("NVRTC compiles the CUDA C++ of this test's kernels")
    return Program(SOURCE, "c++", ProgramOptions(extensible_whole_program=True)).compile()


@pytest.fixture
def stream():
    device = Device("cpu")
    device.set_current()
    return device.create_stream()


def _buffer(stream, host: np.ndarray):
    buffer = Device("cpu").allocate(host.nbytes, stream=stream)
    buffer.copy_from(host, stream=stream)
    return buffer


def _host(stream, buffer, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    return out


def test_arguments_of_every_kind_reach_the_child(code, stream):
    p = _buffer(stream, np.array([42], np.int32))
    out = _buffer(stream, np.zeros(9, np.int64))
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("launch_params"), p, out)
    got = _host(stream, out, np.zeros(9, np.int64))
    assert got.tolist() == [-3, -300, 123456, -5000000000, 1250, -125, 42, -7, 2500]


def test_grids_nest_to_depth_24_and_no_deeper(code, stream):
    limit = 30
    levels = _buffer(stream, np.zeros(limit + 1, np.int32))
    errors = _buffer(stream, np.full(limit + 1, -1, np.int32))
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("recurse"), levels, errors,
           np.int32(0), np.int32(limit))
    got_levels = _host(stream, levels, np.zeros(limit + 1, np.int32))
    got_errors = _host(stream, errors, np.zeros(limit + 1, np.int32))
    # the host's grid is depth 0; grids at depths 1..24 run; the launch from depth 24 fails
    assert MAX_DEPTH == 24      # CUDA's hardware limit
    assert got_levels.tolist() == [d + 1 for d in range(MAX_DEPTH + 1)] + \
        [0] * (limit - MAX_DEPTH)
    assert got_errors[:MAX_DEPTH].tolist() == [0] * MAX_DEPTH
    assert got_errors[MAX_DEPTH] == 65      # cudaErrorLaunchMaxDepthExceeded


def test_two_levels(code, stream):
    levels = _buffer(stream, np.zeros(4, np.int32))
    errors = _buffer(stream, np.full(4, -1, np.int32))
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("recurse"), levels, errors,
           np.int32(0), np.int32(2))
    assert _host(stream, levels, np.zeros(4, np.int32)).tolist() == [1, 2, 3, 0]
    assert _host(stream, errors, np.zeros(4, np.int32)).tolist() == [0, 0, -1, -1]


def test_many_children_in_stream_order_then_the_tail_launch(code, stream):
    n = 1000        # 4 blocks of 256 threads, 3 children each: 3000 child grids and a tail
    x0 = np.arange(n, dtype=np.int32)
    x = _buffer(stream, x0)
    total = _buffer(stream, np.zeros(1, np.int64))
    launch(stream, LaunchConfig(grid=(n + 255) // 256, block=256), code.get_kernel("many"), x,
           np.int32(n), total)
    want = (x0 + 1) * 2 + 1       # the block's stream in launch order, fire-and-forget after
    assert np.array_equal(_host(stream, x, x0), want)
    assert _host(stream, total, np.zeros(1, np.int64))[0] == int(want.sum())


def test_a_stream_created_on_the_device_keeps_launch_order(code, stream):
    n = 300
    x0 = np.arange(n, dtype=np.int32)
    x = _buffer(stream, x0)
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("named_stream"), x,
           np.int32(n))
    assert np.array_equal(_host(stream, x, x0), (x0 + 1) * 2)


def test_events_order_streams_created_on_the_device(code, stream):
    n = 200
    x0 = np.arange(n, dtype=np.int32)
    x = _buffer(stream, x0)
    errors = _buffer(stream, np.full(5, -1, np.int32))
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("event_order"), x,
           np.int32(n), errors)
    assert np.array_equal(_host(stream, x, x0), (x0 + 1) * 2)
    assert _host(stream, errors, np.zeros(5, np.int32)).tolist() == [0, 1, 0, 0, 0]


def test_launch_errors_are_each_threads_last_error(code, stream):
    errors = _buffer(stream, np.full(10, -1, np.int32))
    launch(stream, LaunchConfig(grid=1, block=2), code.get_kernel("bad_launches"), errors)
    got = _host(stream, errors, np.zeros(10, np.int32))
    # cudaErrorInvalidConfiguration (9), peeked then taken; the error is cleared; the good
    # launch leaves none (its add_one with n=0 writes nothing)
    assert got.tolist() == [9, 9, 0, 9, 0] * 2


def test_a_fault_in_a_child_fails_the_hosts_launch(code, stream):
    p = _buffer(stream, np.zeros(1, np.int32))
    bad = np.int32(index_outside(stream.device, p))       # the child writes p[bad]
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("launch_faulting"), p, bad)
    with pytest.raises(IllegalAddressError):
        stream.sync()
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("write_at"), p)
    assert _host(stream, p, np.zeros(1, np.int32))[0] == 1     # the device still works


@needs_nvrtc
def test_other_targets_refuse_device_side_launches_by_name():
    from ptxport.codegen import support
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    ptx = Program(SOURCE, "c++", ProgramOptions(extensible_whole_program=True,
                                                arch="compute_80")).compile("ptx").code
    module = build(parse(ptx if isinstance(ptx, str) else ptx.decode()))
    for target in ("spirv", "amdgpu"):
        reasons = support.unsupported(target, module).values()
        assert reasons and all("dynamic parallelism" in r for r in reasons), target
    assert not support.unsupported("cpu", module)
    # nvptx calls NVIDIA's cudadevrt (tests/codegen/test_nvptx_dynamic_parallelism.py)
    assert not support.unsupported("nvptx", module)


# The Programming Guide's "Device-side Launch from PTX" form: cudaGetParameterBuffer(alignment,
# size) and cudaLaunchDevice(func, buffer, grid, block, shared, stream), called by name.
PTX_LAUNCH = """.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b64 func_retval0) cudaGetParameterBuffer
(.param .b64 alignment, .param .b64 size);
.extern .func (.param .b32 func_retval0) cudaLaunchDevice
(.param .b64 func, .param .b64 parameterBuffer, .param .align 4 .b8 gridDimension[12],
 .param .align 4 .b8 blockDimension[12], .param .b32 sharedMemSize, .param .b64 stream);
.visible .entry fill(.param .u64 out, .param .u32 value)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out]; ld.param.u32 %r1, [value];
    mov.u32 %r2, %tid.x; mov.u32 %r3, %ctaid.x;
    mad.lo.u32 %r2, %r3, 8, %r2;
    mul.wide.u32 %rd2, %r2, 4; add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}
.visible .entry launcher(.param .u64 out, .param .u64 status)
{
    .reg .b32 %r<2>; .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out]; ld.param.u64 %rd4, [status];
    {
    .param .b64 a; .param .b64 s; .param .b64 r;
    st.param.b64 [a], 64; st.param.b64 [s], 16;
    call.uni (r), cudaGetParameterBuffer, (a, s);
    ld.param.b64 %rd2, [r];
    }
    st.u64 [%rd2], %rd1;
    st.u32 [%rd2+8], 77;
    mov.u64 %rd3, fill;
    {
    .param .b64 f; .param .b64 b; .param .align 4 .b8 g[12]; .param .align 4 .b8 k[12];
    .param .b32 m; .param .b64 t; .param .b32 r;
    st.param.b64 [f], %rd3; st.param.b64 [b], %rd2;
    st.param.b32 [g], 2; st.param.b32 [g+4], 1; st.param.b32 [g+8], 1;
    st.param.b32 [k], 8; st.param.b32 [k+4], 1; st.param.b32 [k+8], 1;
    st.param.b32 [m], 0; st.param.b64 [t], 0;
    call.uni (r), cudaLaunchDevice, (f, b, g, k, m, t);
    ld.param.b32 %r1, [r];
    }
    st.global.u32 [%rd4], %r1;
    ret;
}
"""


def test_the_ptx_interface_of_the_programming_guide(stream):
    code = Program(PTX_LAUNCH, "ptx").compile()
    out = _buffer(stream, np.zeros(16, np.int32))
    status = _buffer(stream, np.full(1, -1, np.int32))
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("launcher"), out, status)
    assert _host(stream, status, np.zeros(1, np.int32))[0] == 0
    assert _host(stream, out, np.zeros(16, np.int32)).tolist() == [77] * 16


def test_device_side_cuda_malloc_and_free(stream):
    source = textwrap.dedent("""\
        extern "C" __global__ void sum_into(const int *x, int n, int *out) {
          int s = 0;
          for (int i = 0; i < n; ++i) s += x[i];
          *out = s;
        }
        extern "C" __global__ void scratch(int n, int *out, int *errors) {
          int *tmp = 0;
          errors[0] = cudaMalloc((void **)&tmp, n * sizeof(int));
          for (int i = 0; i < n; ++i) tmp[i] = i;
          sum_into<<<1, 1>>>(tmp, n, out);       // the child reads what the parent allocated
          int *none = 0;
          errors[1] = cudaMalloc((void **)&none, 0);     // cudaErrorInvalidValue
          errors[2] = cudaGetLastError();
          errors[3] = cudaMalloc((void **)&none, 1ull << 40);   // more than the heap
          errors[4] = cudaFree(0);
        }
        """)
    if not nvrtc.available()[0]:
        pytest.skip("NVRTC compiles the CUDA C++ of this test's kernels")
    code = Program(source, "c++", ProgramOptions(extensible_whole_program=True)).compile()
    out = _buffer(stream, np.zeros(1, np.int32))
    errors = _buffer(stream, np.full(5, -1, np.int32))
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("scratch"), np.int32(100),
           out, errors)
    assert _host(stream, out, np.zeros(1, np.int32))[0] == sum(range(100))
    assert _host(stream, errors, np.zeros(5, np.int32)).tolist() == [0, 1, 1, 2, 0]


def test_device_runtime_functions_not_provided_are_refused_by_name():
    from ptxport.codegen import support
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    ptx = """.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b32 func_retval0) __cudaCDP2MemsetAsync
(.param .b64 a, .param .b32 b, .param .b64 c, .param .b64 d);
.extern .func (.param .b32 func_retval0) cudaDeviceSynchronize();
.visible .entry k(.param .u64 p)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    { .param .b64 a; .param .b32 b; .param .b64 c; .param .b64 d; .param .b32 r;
      st.param.b64 [a], %rd1; st.param.b32 [b], 0; st.param.b64 [c], 4; st.param.b64 [d], 0;
      call.uni (r), __cudaCDP2MemsetAsync, (a, b, c, d); }
    { .param .b32 r; call.uni (r), cudaDeviceSynchronize, (); }
    ret;
}
"""
    reasons = sorted(support.unsupported("cpu", build(parse(ptx))).values())
    assert len(reasons) == 2
    assert "'__cudaCDP2MemsetAsync', which ptxport does not provide" in reasons[1]
    assert "(CDP1), removed in CUDA 12" in reasons[0]


# A recursive quicksort in the manner of NVIDIA's cdpSimpleQuicksort sample: each grid
# partitions its range and launches one grid per half into streams of its own, down to a
# depth limit below which it sorts by selection.
QUICKSORT = textwrap.dedent("""\
    #define MAX_DEPTH 16
    #define SELECTION_SORT 32

    __device__ void selection_sort(unsigned *data, int left, int right) {
      for (int i = left; i <= right; ++i) {
        unsigned min_val = data[i];
        int min_idx = i;
        for (int j = i + 1; j <= right; ++j)
          if (data[j] < min_val) { min_idx = j; min_val = data[j]; }
        if (i != min_idx) { data[min_idx] = data[i]; data[i] = min_val; }
      }
    }

    extern "C" __global__ void quicksort(unsigned *data, int left, int right, int depth) {
      if (depth >= MAX_DEPTH || right - left <= SELECTION_SORT) {
        selection_sort(data, left, right);
        return;
      }
      unsigned *lptr = data + left, *rptr = data + right;
      unsigned pivot = data[(left + right) / 2];
      while (lptr <= rptr) {
        unsigned lval = *lptr, rval = *rptr;
        while (lval < pivot) { lptr++; lval = *lptr; }
        while (rval > pivot) { rptr--; rval = *rptr; }
        if (lptr <= rptr) { *lptr++ = rval; *rptr-- = lval; }
      }
      int nright = rptr - data, nleft = lptr - data;
      if (left < nright) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s>>>(data, left, nright, depth + 1);
        cudaStreamDestroy(s);
      }
      if (nleft < right) {
        cudaStream_t s1;
        cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s1>>>(data, nleft, right, depth + 1);
        cudaStreamDestroy(s1);
      }
    }
    """)


def test_a_recursive_quicksort(stream):
    if not nvrtc.available()[0]:
        pytest.skip("NVRTC compiles the CUDA C++ of this test's kernels")
    code = Program(QUICKSORT, "c++", ProgramOptions(extensible_whole_program=True)).compile()
    values = np.random.default_rng(7).integers(0, 1 << 30, 5000, dtype=np.uint32)
    data = _buffer(stream, values)
    launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("quicksort"), data,
           np.int32(0), np.int32(len(values) - 1), np.int32(0))
    assert np.array_equal(_host(stream, data, values), np.sort(values))
