// half_precision.cu: IEEE binary16 arithmetic from cuda_fp16.h: scalar __half operations,
// packed __half2 SIMD arithmetic with __hfma2, comparisons, and conversions to and from float,
// int and double with explicit rounding modes. Every result is a correctly rounded binary16
// operation (numpy float16 gives the same bits), except where a line says otherwise.
//
// half_axpy(__half a, const __half* x, __half* y, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   y[i] = __hfma(a, x[i], y[i]): one rounding of a*x + y to binary16
// half2_ops(const __half2* a, const __half2* b, const __half2* c, __half2* out, int n)
//   launch: as half_axpy; n counts __half2 pairs; out is 5 arrays of n pairs, out[k*n + i]:
//   k=0 __hadd2(a, b)  k=1 __hmul2(a, b)  k=2 __hfma2(a, b, c)  k=3 __hsub2(a, b)
//   k=4 __hmax2(a, b) (NaN-aware as fmax: a NaN loses to a number)
// half_convert(const float* x, __half* h_rn, __half* h_rz, __half* h_rd, __half* h_ru,
//              int* to_int, float* back, double* dbl, int n)
//   launch: as half_axpy
//   h_rn/rz/rd/ru[i] = x[i] rounded to binary16 to nearest-even / toward zero / down / up
//   (__float2half_rn, _rz, _rd, _ru); to_int[i] = __half2int_rn(h_rn[i]) (NaN -> 0 and
//   saturating as cvt.rni.s32.f16 does); back[i] = __half2float(h_rn[i]);
//   dbl[i] = (double)__half2float(__hneg(h_rn[i]))
// half_compare(const __half* a, const __half* b, unsigned char* out, int n)
//   launch: as half_axpy; out is 4 arrays of n bytes, 1 or 0, out[k*n + i]:
//   k=0 __hlt(a, b)  k=1 __hgeu(a, b) (unordered: true if either is NaN)  k=2 __hisnan(a)
//   k=3 __hbeq2 of (a, b) packed with (b, a) into __half2 (both halves equal)
#include <cuda_fp16.h>

extern "C" __global__ void half_axpy(__half a, const __half* x, __half* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __hfma(a, x[i], y[i]);
}

extern "C" __global__ void half2_ops(const __half2* a, const __half2* b, const __half2* c,
                                     __half2* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half2 va = a[i], vb = b[i], vc = c[i];
    out[0 * n + i] = __hadd2(va, vb);
    out[1 * n + i] = __hmul2(va, vb);
    out[2 * n + i] = __hfma2(va, vb, vc);
    out[3 * n + i] = __hsub2(va, vb);
    out[4 * n + i] = __hmax2(va, vb);
}

extern "C" __global__ void half_convert(const float* x, __half* h_rn, __half* h_rz, __half* h_rd,
                                        __half* h_ru, int* to_int, float* back, double* dbl,
                                        int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    __half rn = __float2half_rn(v);
    h_rn[i] = rn;
    h_rz[i] = __float2half_rz(v);
    h_rd[i] = __float2half_rd(v);
    h_ru[i] = __float2half_ru(v);
    to_int[i] = __half2int_rn(rn);
    back[i] = __half2float(rn);
    dbl[i] = (double)__half2float(__hneg(rn));
}

extern "C" __global__ void half_compare(const __half* a, const __half* b, unsigned char* out,
                                        int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half va = a[i], vb = b[i];
    out[0 * n + i] = __hlt(va, vb);
    out[1 * n + i] = __hgeu(va, vb);
    out[2 * n + i] = __hisnan(va);
    out[3 * n + i] = __hbeq2(__halves2half2(va, vb), __halves2half2(vb, va));
}
