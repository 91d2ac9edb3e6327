// CUDA graphs, which a portable runtime may not have: a stream's work (a memset, two kernels,
// a host-to-device copy) captured into a graph, instantiated, launched three times, then a
// graph built node by node. A runtime without graphs must refuse with cudaErrorNotSupported
// and keep working: the program then checks a plain launch and prints the refusal (the
// expected output graph_capture.unsupported.txt); any other error fails, and so does a runtime
// that captures graphs but refuses to build one node by node.
#include <vector>

#include "common.h"

__global__ void add(int *x, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += value;
}

__global__ void twice(int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2;
}

const int N = 4096;

// Captures, instantiates and launches; the first failing call's error is returned.
static cudaError_t captured_graph(int *d, int *offsets_host, cudaStream_t s, size_t *nodes) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  if (refused(e, "cudaStreamBeginCapture") || e) return e;
  cudaMemsetAsync(d, 0, N * sizeof(int), s);
  add<<<N / 256, 256, 0, s>>>(d, 5, N);
  twice<<<N / 256, 256, 0, s>>>(d, N);
  cudaMemcpyAsync(d, offsets_host, 16 * sizeof(int), cudaMemcpyHostToDevice, s);
  e = cudaStreamEndCapture(s, &graph);
  if (refused(e, "cudaStreamEndCapture") || e) return e;
  e = cudaGraphGetNodes(graph, nullptr, nodes);
  if (refused(e, "cudaGraphGetNodes") || e) return e;
  e = cudaGraphInstantiate(&exec, graph, 0);
  if (refused(e, "cudaGraphInstantiate") || e) return e;
  for (int k = 0; k < 3; ++k) {
    e = cudaGraphLaunch(exec, s);
    if (refused(e, "cudaGraphLaunch") || e) return e;
  }
  e = cudaStreamSynchronize(s);
  if (e) return e;
  cudaGraphExecDestroy(exec);
  return cudaGraphDestroy(graph);
}

// One kernel node (add 7) after an empty root, launched twice.
static cudaError_t built_graph(int *d, cudaStream_t s) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaGraphNode_t root, kernel;
  cudaError_t e = cudaGraphCreate(&graph, 0);
  if (refused(e, "cudaGraphCreate") || e) return e;
  e = cudaGraphAddEmptyNode(&root, graph, nullptr, 0);
  if (refused(e, "cudaGraphAddEmptyNode") || e) return e;
  int value = 7, n = N;
  void *args[] = {&d, &value, &n};
  cudaKernelNodeParams p = {};
  p.func = (void *)add;
  p.gridDim = dim3(N / 256);
  p.blockDim = dim3(256);
  p.kernelParams = args;
  e = cudaGraphAddKernelNode(&kernel, graph, &root, 1, &p);
  if (refused(e, "cudaGraphAddKernelNode") || e) return e;
  e = cudaGraphInstantiate(&exec, graph, 0);
  if (refused(e, "cudaGraphInstantiate") || e) return e;
  for (int k = 0; k < 2; ++k) {
    e = cudaGraphLaunch(exec, s);
    if (refused(e, "cudaGraphLaunch") || e) return e;
  }
  e = cudaStreamSynchronize(s);
  if (e) return e;
  cudaGraphExecDestroy(exec);
  return cudaGraphDestroy(graph);
}

// After a refusal: no capture is left open, and plain launches work.
static void after_refusal(int *d, cudaStream_t s) {
  cudaStreamCaptureStatus status;
  CHECK(cudaStreamIsCapturing(s, &status));
  if (status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial;
    cudaStreamEndCapture(s, &partial);
  }
  cudaGetLastError();
  printf("cuda graphs: cudaErrorNotSupported\n");
  CHECK(cudaMemset(d, 0, N * sizeof(int)));
  add<<<N / 256, 256, 0, s>>>(d, 5, N);
  CHECK(cudaStreamSynchronize(s));
  std::vector<int> got(N), want(N, 5);
  CHECK(cudaMemcpy(got.data(), d, N * sizeof(int), cudaMemcpyDeviceToHost));
  expect_equal("plain launch after the refusal", got.data(), want.data(), N);
}

int main() {
  int *d, *offsets;
  CHECK(cudaMalloc(&d, N * sizeof(int)));
  CHECK(cudaMallocHost(&offsets, 16 * sizeof(int)));
  for (int i = 0; i < 16; ++i) offsets[i] = 1000 + i;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  size_t nodes = 0;
  cudaError_t e = captured_graph(d, offsets, s, &nodes);
  if (e == cudaErrorNotSupported) {
    after_refusal(d, s);
    return finish();
  }
  CHECK(e);
  printf("captured nodes: %zu\n", nodes);
  std::vector<int> got(N), want(N);
  CHECK(cudaMemcpy(got.data(), d, N * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < N; ++i) want[i] = i < 16 ? 1000 + i : 10;
  expect_equal("captured graph launched 3 times", got.data(), want.data(), N);
  e = built_graph(d, s);
  if (e == cudaErrorNotSupported) {
    after_refusal(d, s);
    return finish();
  }
  CHECK(e);
  CHECK(cudaMemcpy(got.data(), d, N * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < N; ++i) want[i] += 14;
  expect_equal("built graph launched twice", got.data(), want.data(), N);
  return finish();
}
