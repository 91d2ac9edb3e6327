// Inline PTX (asm volatile) in CUDA C++, as performance code writes it: special registers
// (%laneid, %warpid is not portable and is avoided), 64-bit add with carry (add.cc / addc),
// byte permutes (prmt), bit-field extract and insert (bfe, bfi), a three-input logic op
// (lop3), funnel shifts (shf), and a predicate set and selected inside one asm block.
#include <vector>

#include "common.h"

__device__ unsigned lane_id() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

// (hi:lo) = (ahi:alo) + (bhi:blo) with the carry between the two 32-bit halves.
__device__ unsigned long long add64(unsigned alo, unsigned ahi, unsigned blo, unsigned bhi) {
  unsigned lo, hi;
  asm("add.cc.u32 %0, %2, %4;\n\t"
      "addc.u32 %1, %3, %5;"
      : "=r"(lo), "=r"(hi)
      : "r"(alo), "r"(ahi), "r"(blo), "r"(bhi));
  return ((unsigned long long)hi << 32) | lo;
}

__device__ unsigned max_or_zero(int a, int b) {
  unsigned r;
  asm("{\n\t"
      ".reg .pred p;\n\t"
      "setp.gt.s32 p, %1, %2;\n\t"
      "selp.u32 %0, %1, 0, p;\n\t"
      "}"
      : "=r"(r)
      : "r"(a), "r"(b));
  return r;
}

__global__ void inline_asm(const unsigned *x, unsigned long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned v = x[i], w = x[(i + 1) % n];
  unsigned long long *o = out + i * 8;
  unsigned r;
  o[0] = lane_id();
  o[1] = add64(v, w, 0xFFFFFFFFu - w, v);
  asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(r) : "r"(v), "r"(w));
  o[2] = r;
  asm("bfe.u32 %0, %1, 7, 9;" : "=r"(r) : "r"(v));
  o[3] = r;
  asm("bfi.b32 %0, %1, %2, 4, 12;" : "=r"(r) : "r"(w), "r"(v));
  o[4] = r;
  asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(r) : "r"(v), "r"(w), "r"(v ^ w ^ 0x5A5A5A5Au));
  o[5] = r;
  asm("shf.l.wrap.b32 %0, %1, %2, 13;" : "=r"(r) : "r"(v), "r"(w));
  o[6] = r;
  o[7] = max_or_zero((int)v, (int)w);
}

static unsigned byte_of(unsigned a, unsigned b, unsigned selector) {
  unsigned long long both = ((unsigned long long)b << 32) | a;
  return (unsigned)(both >> (8 * (selector & 7))) & 0xFF;
}

int main() {
  const int n = 512;
  std::vector<unsigned> x(n);
  for (int i = 0; i < n; ++i) x[i] = i * 2654435761u + 12345u;
  std::vector<unsigned long long> want(n * 8);
  for (int i = 0; i < n; ++i) {
    unsigned v = x[i], w = x[(i + 1) % n];
    unsigned long long *o = &want[i * 8];
    o[0] = i % 32;
    o[1] = (((unsigned long long)w << 32) | v) + (((unsigned long long)v << 32) | (0xFFFFFFFFu - w));
    o[2] = byte_of(v, w, 0) | byte_of(v, w, 4) << 8 | byte_of(v, w, 1) << 16 | byte_of(v, w, 5) << 24;
    o[3] = (v >> 7) & 0x1FF;
    o[4] = (v & ~(0xFFFu << 4)) | ((w & 0xFFFu) << 4);
    unsigned c = v ^ w ^ 0x5A5A5A5Au;
    o[5] = (v & w) | (v & c) | (w & c);  // 0xE8 is the majority function
    o[6] = (w << 13) | (v >> 19);
    o[7] = (int)v > (int)w ? v : 0;
  }
  unsigned *dx;
  unsigned long long *out;
  CHECK(cudaMalloc(&dx, n * sizeof(unsigned)));
  CHECK(cudaMallocManaged(&out, n * 8 * sizeof(unsigned long long)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  inline_asm<<<n / 128, 128>>>(dx, out, n);
  CHECK(cudaDeviceSynchronize());
  const char *names[8] = {"%laneid", "add.cc / addc", "prmt", "bfe", "bfi", "lop3", "shf.l.wrap",
                          "setp / selp in a scoped block"};
  for (int f = 0; f < 8; ++f) {
    std::vector<unsigned long long> got_f(n), want_f(n);
    for (int i = 0; i < n; ++i) got_f[i] = out[i * 8 + f], want_f[i] = want[i * 8 + f];
    expect_equal(names[f], got_f.data(), want_f.data(), n);
  }
  CHECK(cudaFree(dx));
  CHECK(cudaFree(out));
  return finish();
}
