// The 16-bit element types of ptxport's BLAS kernels (gemm.cu, routines.cu), shared by both:
// ptxport/blas/portable.py's kernel_source puts this file in front of each (the NVRTC cache
// key covers the source text, so a change here recompiles them).
#pragma once

typedef unsigned short u16;
typedef unsigned int u32;

__device__ __forceinline__ float f16_to_f32(u16 h) {
  float f;
  asm("{ .reg .b16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ u16 f32_to_f16(float f) {
  u16 h;
  asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float bf16_to_f32(u16 b) { return __int_as_float((u32)b << 16); }
__device__ __forceinline__ u16 f32_to_bf16(float f) {   // round to nearest even; NaN stays NaN
  u32 bits = (u32)__float_as_int(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (u16)0x7fc0;
  return (u16)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
