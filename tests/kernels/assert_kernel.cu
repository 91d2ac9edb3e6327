// assert_kernel.cu: device-side assert (the CUDA driver's __assertfail), which ends the
// kernel when its expression is false and leaves it be when it is true.
//
// checked_gather(const int* idx, const float* src, float* dst, int n, int limit)
//   launch: grid = (4,), block = (64,), dynamic shared = 0
//   each thread with i = blockIdx.x * 64 + threadIdx.x < n asserts 0 <= idx[i] < limit,
//   then dst[i] = src[idx[i]] * 2 (exact); the case's indices are all in range, so the
//   assert has no effect (tests/codegen/test_assert.py gives one thread a bad index)
// checked_reverse(const int* x, int* y)
//   launch: grid = (4,), block = (128,), dynamic shared = 0
//   each block reverses its 128 values through shared memory; after the barrier each thread
//   asserts its value v = x[block * 128 + 127 - t] is not negative, then writes
//   y[block * 128 + t] = v + (the v of lane t ^ 1, by __shfl_xor_sync); the case's values are
//   all >= 0 (the test gives one a negative value: an assert after a barrier, in a kernel
//   with a warp shuffle)

extern "C" __global__ void checked_gather(const int* idx, const float* src, float* dst, int n,
                                          int limit)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int j = idx[i];
    assert(j >= 0 && j < limit);
    dst[i] = src[j] * 2.0f;
}

extern "C" __global__ void checked_reverse(const int* x, int* y)
{
    __shared__ int s[128];
    s[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];
    __syncthreads();
    int v = s[127 - threadIdx.x];
    assert(v >= 0);
    y[blockIdx.x * 128 + threadIdx.x] = v + __shfl_xor_sync(0xffffffffu, v, 1);
}
