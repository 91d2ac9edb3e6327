// atomics_float.cu: floating-point atomic additions: float and double atomicAdd on global and
// shared memory, __half2 and __nv_bfloat162 packed atomicAdd, and block/system-scoped float
// adds. Floating-point addition is not associative, so the inputs are chosen to make every
// order give the same bits: small integers (or multiples of 0.25) whose partial sums stay
// exactly representable (below 2**24 for float, 2**53 for double, 2**11 for half, 2**8 for
// bfloat16).
//
// atomic_add_float(const float* x, float* total, float* bins, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   *total += sum of x (global atomicAdd(float*, float)); bins[i % 16] += x[i] through a
//   shared-memory array of 16 floats per block, merged with one global atomicAdd per bin
//   (host zeroes total and bins)
// atomic_add_double_scoped(const double* x, double* total_block, double* total_system, int n)
//   launch: as atomic_add_float
//   *total_block += sum of x via atomicAdd_block, *total_system += sum via atomicAdd_system
//   (both on global memory; block scope is enough for correctness only within a block, but
//   the result after the kernel is the same)
// atomic_add_half2(const __half2* x, __half2* total, int n)
//   launch: as atomic_add_float
//   both halves of *total accumulate the corresponding halves of x[0:n] (atomicAdd on
//   __half2: each half is an independent binary16 add)
// atomic_add_bf162(const __nv_bfloat162* x, __nv_bfloat162* total, int n)
//   launch: as atomic_add_float; as atomic_add_half2 in bfloat16
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void atomic_add_float(const float* x, float* total, float* bins, int n)
{
    __shared__ float local_bins[16];
    if (threadIdx.x < 16)
        local_bins[threadIdx.x] = 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(total, x[i]);
        atomicAdd(&local_bins[i % 16], x[i]);
    }
    __syncthreads();
    if (threadIdx.x < 16)
        atomicAdd(&bins[threadIdx.x], local_bins[threadIdx.x]);
}

extern "C" __global__ void atomic_add_double_scoped(const double* x, double* total_block,
                                                    double* total_system, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    atomicAdd_block(total_block, x[i]);
    atomicAdd_system(total_system, x[i]);
}

extern "C" __global__ void atomic_add_half2(const __half2* x, __half2* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(total, x[i]);
}

extern "C" __global__ void atomic_add_bf162(const __nv_bfloat162* x, __nv_bfloat162* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(total, x[i]);
}
