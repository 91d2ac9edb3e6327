// Warp-level intrinsics against a host model of a warp: __shfl_sync, __shfl_up_sync,
// __shfl_down_sync and __shfl_xor_sync (whole warp and width 8), __ballot_sync (also with the
// mask of a divergent branch), __any_sync, __all_sync, __match_any_sync, __reduce_add_sync and
// __reduce_max_sync, and bit intrinsics (__popc, __clz, __ffs, __brev).
#include <algorithm>
#include <vector>

#include "common.h"

const int FIELDS = 14;

__global__ void warp_ops(const int *x, int *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
  int v = x[i];
  int *o = out + i * FIELDS;
  o[0] = __shfl_sync(0xFFFFFFFF, v, (lane * 5) % 32);
  o[1] = __shfl_up_sync(0xFFFFFFFF, v, 3);
  o[2] = __shfl_down_sync(0xFFFFFFFF, v, 7);
  o[3] = __shfl_xor_sync(0xFFFFFFFF, v, 13);
  o[4] = __shfl_down_sync(0xFFFFFFFF, v, 2, 8);
  o[5] = (int)__ballot_sync(0xFFFFFFFF, v & 1);
  o[6] = __any_sync(0xFFFFFFFF, v == 77) * 2 + __all_sync(0xFFFFFFFF, v >= 0);
  unsigned taken = __ballot_sync(0xFFFFFFFF, v % 4 == 1);
  o[7] = 0;
  if (v % 4 == 1) o[7] = (int)__ballot_sync(taken, v > 50000);
  __syncwarp();
  o[8] = (int)__match_any_sync(0xFFFFFFFF, v % 5);
  o[9] = (int)__reduce_add_sync(0xFFFFFFFF, (unsigned)v);
  o[10] = __reduce_max_sync(0xFFFFFFFF, v);
  o[11] = __popc(v) + 100 * __clz(v);
  o[12] = __ffs(v);
  o[13] = (int)__brev((unsigned)v);
}

static unsigned reverse_bits(unsigned v) {
  unsigned r = 0;
  for (int b = 0; b < 32; ++b) r |= ((v >> b) & 1u) << (31 - b);
  return r;
}

static void warp_reference(const int *v, int *want) {
  for (int l = 0; l < 32; ++l) {
    int *o = want + l * FIELDS;
    unsigned ballot = 0, big_taken = 0, match = 0, sum = 0;
    int any77 = 0, all_pos = 1, maximum = v[0];
    for (int k = 0; k < 32; ++k) {
      ballot |= (unsigned)(v[k] & 1) << k;
      big_taken |= (unsigned)(v[k] % 4 == 1 && v[k] > 50000) << k;
      match |= (unsigned)(v[k] % 5 == v[l] % 5) << k;
      sum += (unsigned)v[k];
      any77 |= v[k] == 77;
      all_pos &= v[k] >= 0;
      maximum = std::max(maximum, v[k]);
    }
    o[0] = v[(l * 5) % 32];
    o[1] = l >= 3 ? v[l - 3] : v[l];
    o[2] = l + 7 < 32 ? v[l + 7] : v[l];
    o[3] = v[l ^ 13];
    o[4] = l % 8 + 2 < 8 ? v[l + 2] : v[l];
    o[5] = (int)ballot;
    o[6] = any77 * 2 + all_pos;
    o[7] = v[l] % 4 == 1 ? (int)big_taken : 0;
    o[8] = (int)match;
    o[9] = (int)sum;
    o[10] = maximum;
    o[11] = __builtin_popcount(v[l]) + 100 * (v[l] ? __builtin_clz(v[l]) : 32);
    o[12] = v[l] ? __builtin_ctz(v[l]) + 1 : 0;
    o[13] = (int)reverse_bits((unsigned)v[l]);
  }
}

int main() {
  const int n = 256;
  std::vector<int> x(n), want(n * FIELDS);
  for (int i = 0; i < n; ++i) x[i] = i == 40 ? 77 : (int)((i * 2654435761u >> 7) % 100000);
  int *d_x, *out;
  CHECK(cudaMalloc(&d_x, n * sizeof(int)));
  CHECK(cudaMallocManaged(&out, n * FIELDS * sizeof(int)));
  CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  warp_ops<<<n / 64, 64>>>(d_x, out);
  CHECK(cudaDeviceSynchronize());
  for (int w = 0; w < n / 32; ++w) warp_reference(&x[w * 32], &want[w * 32 * FIELDS]);
  const char *names[FIELDS] = {"__shfl_sync",        "__shfl_up_sync",   "__shfl_down_sync",
                               "__shfl_xor_sync",    "__shfl_down_sync width 8",
                               "__ballot_sync",      "__any_sync and __all_sync",
                               "__ballot_sync in a branch",       "__match_any_sync", "__reduce_add_sync",
                               "__reduce_max_sync",  "__popc and __clz", "__ffs",
                               "__brev"};
  for (int f = 0; f < FIELDS; ++f) {
    std::vector<int> got_f(n), want_f(n);
    for (int i = 0; i < n; ++i) got_f[i] = out[i * FIELDS + f], want_f[i] = want[i * FIELDS + f];
    expect_equal(names[f], got_f.data(), want_f.data(), n);
  }
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(out));
  return finish();
}
