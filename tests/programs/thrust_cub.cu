// A program written with CUDA's own libraries (Thrust and CUB from the nvidia-cuda-cccl
// headers), as applications are: device_vector, sort, transform_reduce, inclusive_scan and
// sort_by_key through Thrust, then cub::DeviceRadixSort and cub::DeviceReduce with their
// temporary-storage protocol. Their many template kernels (and their queries of function
// attributes and occupancy) run as any other.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "common.h"

struct Square {
  __host__ __device__ long long operator()(int x) const { return (long long)x * x; }
};

static std::vector<int> values(int n, unsigned seed) {
  std::vector<int> v(n);
  unsigned s = seed;
  for (int &x : v) s = s * 1664525u + 1013904223u, x = (int)(s >> 8) % 100000 - 50000;
  return v;
}

static void with_thrust() {
  const int n = 200000;
  std::vector<int> host = values(n, 1);
  thrust::device_vector<int> d(host.begin(), host.end());
  thrust::sort(d.begin(), d.end());
  std::vector<int> sorted(n);
  std::vector<long long> want(host.begin(), host.end());
  thrust::copy(d.begin(), d.end(), sorted.begin());
  std::sort(want.begin(), want.end());
  std::vector<long long> sorted_wide(sorted.begin(), sorted.end());
  expect_equal("thrust::sort", sorted_wide.data(), want.data(), n);

  long long squares = thrust::transform_reduce(d.begin(), d.end(), Square(), 0LL,
                                               thrust::plus<long long>());
  long long want_squares = 0;
  for (int x : host) want_squares += (long long)x * x;
  expect_equal("thrust::transform_reduce", &squares, &want_squares, 1);

  thrust::device_vector<long long> wide(d.begin(), d.end()), scanned(n);
  thrust::inclusive_scan(wide.begin(), wide.end(), scanned.begin());
  std::vector<long long> got_scan(n), want_scan(n);
  thrust::copy(scanned.begin(), scanned.end(), got_scan.begin());
  // want holds 64-bit values: the running sum leaves int's range.
  std::partial_sum(want.begin(), want.end(), want_scan.begin());
  expect_equal("thrust::inclusive_scan", got_scan.data(), want_scan.data(), n);

  std::vector<int> keys = values(n, 2), index(n);
  std::iota(index.begin(), index.end(), 0);
  thrust::device_vector<int> d_keys(keys.begin(), keys.end()), d_index(index.begin(), index.end());
  thrust::stable_sort_by_key(d_keys.begin(), d_keys.end(), d_index.begin());
  std::stable_sort(index.begin(), index.end(), [&](int a, int b) { return keys[a] < keys[b]; });
  std::vector<int> got_index(n);
  thrust::copy(d_index.begin(), d_index.end(), got_index.begin());
  expect_equal("thrust::stable_sort_by_key", got_index.data(), index.data(), n);
}

static void with_cub() {
  const int n = 300001;
  std::vector<int> host = values(n, 3);
  std::vector<unsigned> keys(n);
  for (int i = 0; i < n; ++i) keys[i] = (unsigned)host[i] ^ 0x80000000u;
  unsigned *d_in, *d_out;
  int *d_values, *d_sum;
  CHECK(cudaMalloc(&d_in, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_out, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_values, n * sizeof(int)));
  CHECK(cudaMalloc(&d_sum, sizeof(int)));
  CHECK(cudaMemcpy(d_in, keys.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_values, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  size_t bytes = 0, reduce_bytes = 0;
  CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, d_in, d_out, n));
  CHECK(cub::DeviceReduce::Max(nullptr, reduce_bytes, d_values, d_sum, n));
  void *temp;
  CHECK(cudaMalloc(&temp, std::max(bytes, reduce_bytes)));
  CHECK(cub::DeviceRadixSort::SortKeys(temp, bytes, d_in, d_out, n));
  std::vector<unsigned> got(n), want = keys;
  CHECK(cudaMemcpy(got.data(), d_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::sort(want.begin(), want.end());
  expect_equal("cub::DeviceRadixSort::SortKeys", got.data(), want.data(), n);

  CHECK(cub::DeviceReduce::Max(temp, reduce_bytes, d_values, d_sum, n));
  int got_max = 0, want_max = *std::max_element(host.begin(), host.end());
  CHECK(cudaMemcpy(&got_max, d_sum, sizeof(int), cudaMemcpyDeviceToHost));
  expect_equal("cub::DeviceReduce::Max", &got_max, &want_max, 1);
  for (void *p : {(void *)d_in, (void *)d_out, (void *)d_values, (void *)d_sum, temp})
    CHECK(cudaFree(p));
}

int main() {
  with_thrust();
  with_cub();
  return finish();
}
