// ldg_vector.cu: wide and read-only loads: float4 and int2 vector loads and stores (ld.v4 /
// ld.v2), __ldg through the non-coherent read-only cache (ld.global.nc), the cache-hinted
// __ldcs / __stcs streaming variants, and a double2 copy.
//
// scale_float4(const float4* x, float4* y, float s, int n4)
//   launch: grid = ((n4 + 255) / 256,), block = (256,), dynamic shared = 0
//   y[i] = x[i] * s component-wise, for i < n4 (n4 = number of float4 elements)
// gather_ldg(const float* table, const int* idx, float* out, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   out[i] = __ldg(&table[__ldg(&idx[i])]) (indices must be in range)
// int2_swap_add(const int2* x, int2* y, int n)
//   launch: as gather_ldg
//   y[i] = make_int2(x[i].y + 1, x[i].x - 1), loaded with __ldg(const int2*)
// stream_copy_double2(const double2* x, double2* y, int n)
//   launch: as gather_ldg
//   y[i] = (x[i].x + x[i].y, x[i].x - x[i].y), loaded with __ldcs and stored with __stcs

extern "C" __global__ void scale_float4(const float4* x, float4* y, float s, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4)
        return;
    float4 v = x[i];
    y[i] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}

extern "C" __global__ void gather_ldg(const float* __restrict__ table,
                                      const int* __restrict__ idx, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = __ldg(&table[__ldg(&idx[i])]);
}

extern "C" __global__ void int2_swap_add(const int2* x, int2* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int2 v = __ldg(&x[i]);
    y[i] = make_int2(v.y + 1, v.x - 1);
}

extern "C" __global__ void stream_copy_double2(const double2* x, double2* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double2 v = __ldcs(&x[i]);
    __stcs(&y[i], make_double2(v.x + v.y, v.x - v.y));
}
