// Asynchronous copies and sets on non-default streams with pinned host memory: a chunked
// pipeline over four streams (copy in, kernel, copy out per chunk), then the 2D and 3D async
// forms and cudaMemsetAsync / cudaMemset2DAsync / cudaMemset3DAsync on one stream.
#include <vector>

#include "common.h"

__global__ void square_plus(int *x, int add, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * x[i] + add;
}

static void chunked_pipeline() {
  const int n = 1 << 18, chunks = 16, per = n / chunks, nstreams = 4;
  int *in, *out, *d;
  CHECK(cudaMallocHost(&in, n * sizeof(int)));
  CHECK(cudaMallocHost(&out, n * sizeof(int)));
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  for (int i = 0; i < n; ++i) in[i] = (i % 1000) - 500;
  cudaStream_t s[nstreams];
  for (auto &stream : s) CHECK(cudaStreamCreate(&stream));
  for (int c = 0; c < chunks; ++c) {
    cudaStream_t st = s[c % nstreams];
    size_t off = (size_t)c * per;
    CHECK(cudaMemcpyAsync(d + off, in + off, per * sizeof(int), cudaMemcpyHostToDevice, st));
    square_plus<<<per / 256, 256, 0, st>>>(d + off, c, per);
    CHECK(cudaMemcpyAsync(out + off, d + off, per * sizeof(int), cudaMemcpyDeviceToHost, st));
  }
  for (auto &stream : s) CHECK(cudaStreamSynchronize(stream));
  std::vector<int> want(n);
  for (int i = 0; i < n; ++i) want[i] = in[i] * in[i] + i / per;
  expect_equal("4-stream chunked pipeline", out, want.data(), n);
  for (auto &stream : s) CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFreeHost(in));
  CHECK(cudaFreeHost(out));
  CHECK(cudaFree(d));
}

static void pitched_async_forms() {
  const int w = 64, h = 32, depth = 4;
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  unsigned char *host, *back;
  CHECK(cudaHostAlloc(&host, w * h * depth, cudaHostAllocDefault));
  CHECK(cudaHostAlloc(&back, w * h * depth, cudaHostAllocDefault));
  for (int i = 0; i < w * h * depth; ++i) host[i] = (unsigned char)(i * 13);
  std::vector<unsigned char> want(host, host + w * h * depth);

  size_t pitch;
  unsigned char *d2;
  CHECK(cudaMallocPitch(&d2, &pitch, w, h));
  CHECK(cudaMemcpy2DAsync(d2, pitch, host, w, w, h, cudaMemcpyHostToDevice, st));
  CHECK(cudaMemset2DAsync(d2 + 5 * pitch + 10, pitch, 0xEE, 20, 3, st));
  CHECK(cudaMemcpy2DAsync(back, w, d2, pitch, w, h, cudaMemcpyDeviceToHost, st));
  CHECK(cudaStreamSynchronize(st));
  for (int y = 5; y < 8; ++y)
    for (int x = 10; x < 30; ++x) want[y * w + x] = 0xEE;
  expect_equal("cudaMemcpy2DAsync + cudaMemset2DAsync", back, want.data(), w * h);

  cudaPitchedPtr d3;
  cudaExtent extent = make_cudaExtent(w, h, depth);
  CHECK(cudaMalloc3D(&d3, extent));
  CHECK(cudaMemset3DAsync(d3, 0x42, extent, st));
  cudaMemcpy3DParms p = {};
  p.srcPtr = make_cudaPitchedPtr(host, w, w, h);
  p.dstPtr = d3;
  p.extent = make_cudaExtent(w / 2, h, depth);
  p.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3DAsync(&p, st));
  cudaMemcpy3DParms q = {};
  q.srcPtr = d3;
  q.dstPtr = make_cudaPitchedPtr(back, w, w, h);
  q.extent = extent;
  q.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3DAsync(&q, st));
  CHECK(cudaStreamSynchronize(st));
  for (int i = 0; i < w * h * depth; ++i) want[i] = (i % w) < w / 2 ? host[i] : 0x42;
  expect_equal("cudaMemset3DAsync + cudaMemcpy3DAsync", back, want.data(), want.size());

  int *words;
  CHECK(cudaMalloc(&words, 1024 * sizeof(int)));
  CHECK(cudaMemsetAsync(words, 0xFF, 1024 * sizeof(int), st));
  int got[1024], ones[1024];
  CHECK(cudaMemcpyAsync(got, words, sizeof got, cudaMemcpyDeviceToHost, st));
  CHECK(cudaStreamSynchronize(st));
  for (int &v : ones) v = -1;
  expect_equal("cudaMemsetAsync, async copy to pageable memory", got, ones, 1024);

  CHECK(cudaFree(words));
  CHECK(cudaFree(d2));
  CHECK(cudaFree(d3.ptr));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFreeHost(back));
  CHECK(cudaStreamDestroy(st));
}

int main() {
  chunked_pipeline();
  pitched_async_forms();
  return finish();
}
