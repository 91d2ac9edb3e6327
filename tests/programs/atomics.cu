// Atomics on global and shared memory, each compared with its sequential result: add (int,
// unsigned, unsigned long long, integer-valued float and double), sub, min, max, and, or,
// xor, exch, inc and dec with wrap-around, a CAS loop, and block-scoped adds.
#include <algorithm>
#include <climits>
#include <vector>

#include "common.h"

struct Results {
  int add_i, sub_i, min_i, max_i;
  unsigned add_u, and_u, or_u, xor_u, inc_u, dec_u;
  unsigned long long add_ull;
  float add_f;
  double add_d;
  int cas_max, exch_seen, shared_sum;
};

__device__ void cas_max(int *address, int value) {
  int old = *address;
  while (old < value) {
    int prev = atomicCAS(address, old, value);
    if (prev == old) break;
    old = prev;
  }
}

__global__ void everything(Results *r, int n) {
  __shared__ int block_sum;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int v = (i * 7919) % 1000 - 500;
    atomicAdd(&r->add_i, v);
    atomicSub(&r->sub_i, v);
    atomicMin(&r->min_i, v);
    atomicMax(&r->max_i, v);
    atomicAdd(&r->add_u, (unsigned)i);
    atomicAnd(&r->and_u, ~(1u << (i % 32)) | (i % 3 ? 0xFFFFFFFFu : 0u));
    atomicOr(&r->or_u, 1u << (i % 29));
    atomicXor(&r->xor_u, (unsigned)i * 2654435761u);
    atomicInc(&r->inc_u, 99);  // wraps to 0 after 99
    atomicDec(&r->dec_u, 9);   // 0 wraps to 9
    atomicAdd(&r->add_ull, (unsigned long long)i << 20);
    atomicAdd(&r->add_f, (float)(i % 8));
    atomicAdd(&r->add_d, (double)(i % 5) * 0.5);
    cas_max(&r->cas_max, v * 3);
    atomicExch(&r->exch_seen, 1);
    atomicAdd_block(&block_sum, 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(&r->shared_sum, block_sum);
}

static Results reference(int n) {
  Results w = {0, 0, INT_MAX, INT_MIN, 0, 0xFFFFFFFFu, 0, 0, 0, 0, 0, 0.0f, 0.0, INT_MIN, 1, 0};
  for (int i = 0; i < n; ++i) {
    int v = (i * 7919) % 1000 - 500;
    w.add_i += v;
    w.sub_i -= v;
    w.min_i = std::min(w.min_i, v);
    w.max_i = std::max(w.max_i, v);
    w.add_u += i;
    w.and_u &= ~(1u << (i % 32)) | (i % 3 ? 0xFFFFFFFFu : 0u);
    w.or_u |= 1u << (i % 29);
    w.xor_u ^= (unsigned)i * 2654435761u;
    w.inc_u = w.inc_u >= 99 ? 0 : w.inc_u + 1;
    w.dec_u = (w.dec_u == 0 || w.dec_u > 9) ? 9 : w.dec_u - 1;
    w.add_ull += (unsigned long long)i << 20;
    w.add_f += (float)(i % 8);
    w.add_d += (double)(i % 5) * 0.5;
    w.cas_max = std::max(w.cas_max, v * 3);
  }
  w.shared_sum = n;
  return w;
}

#define EXPECT_FIELD(field)                                                      \
  do {                                                                           \
    const char *label = "atomic " #field;                                        \
    expect_equal(label, &got->field, &want.field, 1);                            \
  } while (0)

int main() {
  const int n = 100000;
  Results *got;
  CHECK(cudaMallocManaged(&got, sizeof(Results)));
  *got = {0, 0, INT_MAX, INT_MIN, 0, 0xFFFFFFFFu, 0, 0, 0, 0, 0, 0.0f, 0.0, INT_MIN, 0, 0};
  everything<<<(n + 255) / 256, 256>>>(got, n);
  CHECK(cudaDeviceSynchronize());
  Results want = reference(n);
  EXPECT_FIELD(add_i);
  EXPECT_FIELD(sub_i);
  EXPECT_FIELD(min_i);
  EXPECT_FIELD(max_i);
  EXPECT_FIELD(add_u);
  EXPECT_FIELD(and_u);
  EXPECT_FIELD(or_u);
  EXPECT_FIELD(xor_u);
  EXPECT_FIELD(inc_u);
  EXPECT_FIELD(dec_u);
  EXPECT_FIELD(add_ull);
  EXPECT_FIELD(add_f);
  EXPECT_FIELD(add_d);
  EXPECT_FIELD(cas_max);
  EXPECT_FIELD(exch_seen);
  EXPECT_FIELD(shared_sum);
  CHECK(cudaFree(got));
  return finish();
}
