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
// bf16_add_sums(__nv_bfloat16* dbias, __nv_bfloat16* dweight, const float* sums, int C)
//   launch: grid = (1,), block = (32 * warps,), dynamic shared = 8 * C bytes; C % 8 == 0
//   dbias[i] = bf16_rn(sums[i] + float(dbias[i])), dweight[i] = bf16_rn(sums[C + i] +
//   float(dweight[i])) (a float add, then one rounding to bf16), through shared memory, with
//   llm.c's layernorm_backward_kernel10 addressing: warp w handles the 256-element chunks
//   c = w, w + warps, ..., lane l elements 256c + 8l .. 256c + 8l + 7 (16-byte loads)
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

struct __align__(16) bf16x8 { __nv_bfloat16 v[8]; };
struct __align__(16) f32x4 { float v[4]; };

extern "C" __global__ void bf16_add_sums(__nv_bfloat16* dbias, __nv_bfloat16* dweight,
                                         const float* sums, int C)
{
    extern __shared__ float shared[];
    for (int i = threadIdx.x; i < 2 * C; i += blockDim.x)
        shared[i] = sums[i];
    __syncthreads();
    int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int chunks = (C + 255) / 256;
    for (int c = warp; c < chunks; c += warps) {
        int g = lane * 8 + c * 256;
        if (g >= C)
            break;
        bf16x8 b = *(bf16x8*)(dbias + g), w = *(bf16x8*)(dweight + g);
        for (int o = 0; o < 2; o++) {
            f32x4 sb = *(const f32x4*)(shared + g + 4 * o);
            f32x4 sw = *(const f32x4*)(shared + C + g + 4 * o);
            for (int i = 0; i < 4; i++) {
                b.v[4 * o + i] = __float2bfloat16_rn(sb.v[i] + __bfloat162float(b.v[4 * o + i]));
                w.v[4 * o + i] = __float2bfloat16_rn(sw.v[i] + __bfloat162float(w.v[4 * o + i]));
            }
        }
        *(bf16x8*)(dbias + g) = b;
        *(bf16x8*)(dweight + g) = w;
    }
}
