// assert_kernel.cu: device-side assert (the CUDA driver's __assertfail), which ends the
// kernel when its expression is false and leaves it be when it is true.
//
// checked_gather(const int* idx, const float* src, float* dst, int n, int limit)
//   launch: grid = (4,), block = (64,), dynamic shared = 0
//   each thread with i = blockIdx.x * 64 + threadIdx.x < n asserts 0 <= idx[i] < limit,
//   then dst[i] = src[idx[i]] * 2 (exact); the case's indices are all in range, so the
//   assert has no effect (tests/codegen/test_assert.py gives one thread a bad index)

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
