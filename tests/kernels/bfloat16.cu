// bfloat16.cu: bfloat16 arithmetic from cuda_bf16.h: scalar and packed (__nv_bfloat162)
// operations, fma, conversions with rounding, and a bf16-in / float-accumulate dot product as
// mixed-precision kernels do. bf16 results are correctly rounded (round to nearest even).
//
// bf16_axpy(float a, const __nv_bfloat16* x, __nv_bfloat16* y, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   y[i] = __hfma(__float2bfloat16(a), x[i], y[i]): one rounding of a'*x + y to bf16, where
//   a' is a rounded to bf16
// bf162_ops(const __nv_bfloat162* a, const __nv_bfloat162* b, __nv_bfloat162* out, int n)
//   launch: as bf16_axpy; n counts pairs; out is 3 arrays of n pairs, out[k*n + i]:
//   k=0 __hadd2(a, b)  k=1 __hmul2(a, b)  k=2 __hfma2(a, b, a) (fma, one rounding)
// bf16_convert(const float* x, __nv_bfloat16* rn, __nv_bfloat16* rz, float* back,
//              float* low_high, int n)
//   launch: as bf16_axpy
//   rn[i] = __float2bfloat16_rn(x[i]); rz[i] = __float2bfloat16_rz(x[i]) (truncation of the
//   low 16 bits, NaN kept NaN); back[i] = __bfloat162float(rn[i]);
//   low_high[2i], low_high[2i+1] = __low2float, __high2float of __floats2bfloat162_rn(x[i],
//   -x[i])
// bf16_dot(const __nv_bfloat16* a, const __nv_bfloat16* b, float* out, int n)
//   launch: grid = (1,), block = (256,), dynamic shared = 0
//   *out = sum of float(a[i]) * float(b[i]): thread t adds i = t, t+256, ... in order with
//   fmaf, then a fixed shared-memory tree (s[t] += s[t+h], h = 128 .. 1)
#include <cuda_bf16.h>

extern "C" __global__ void bf16_axpy(float a, const __nv_bfloat16* x, __nv_bfloat16* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __hfma(__float2bfloat16(a), x[i], y[i]);
}

extern "C" __global__ void bf162_ops(const __nv_bfloat162* a, const __nv_bfloat162* b,
                                     __nv_bfloat162* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __nv_bfloat162 va = a[i], vb = b[i];
    out[0 * n + i] = __hadd2(va, vb);
    out[1 * n + i] = __hmul2(va, vb);
    out[2 * n + i] = __hfma2(va, vb, va);
}

extern "C" __global__ void bf16_convert(const float* x, __nv_bfloat16* rn, __nv_bfloat16* rz,
                                        float* back, float* low_high, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    __nv_bfloat16 r = __float2bfloat16_rn(v);
    rn[i] = r;
    rz[i] = __float2bfloat16_rz(v);
    back[i] = __bfloat162float(r);
    __nv_bfloat162 pair = __floats2bfloat162_rn(v, -v);
    low_high[2 * i] = __low2float(pair);
    low_high[2 * i + 1] = __high2float(pair);
}

extern "C" __global__ void bf16_dot(const __nv_bfloat16* a, const __nv_bfloat16* b, float* out,
                                    int n)
{
    __shared__ float s[256];
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += 256)
        acc = fmaf(__bfloat162float(a[i]), __bfloat162float(b[i]), acc);
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *out = s[0];
}
