// CUDA graphs built node by node, and what a program asks of them: a diamond of kernel nodes
// after a memset node (A -> B, A -> C, B and C -> D), a 1D copy node, a host node and a child
// graph; the node, root and edge counts, each node's type and dependencies, kernel node
// parameters read back and changed (in the graph, and in an instantiated graph only), a
// dependency added, a node destroyed, a graph cloned. Only what CUDA promises is printed.
#include <vector>

#include "common.h"

__global__ void add(int *x, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += value;
}

__global__ void scale(int *x, int factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

static const int N = 2048;
static int g_host_calls = 0;

static void CUDART_CB count_call(void *data) { ++*(int *)data; }

struct KernelArgs {
  int *x;
  int value;
  int n;
  void *args[3];
  KernelArgs(int *x_, int value_) : x(x_), value(value_), n(N) {
    args[0] = &x;
    args[1] = &value;
    args[2] = &n;
  }
};

static cudaKernelNodeParams kernel_params(void *func, KernelArgs &a) {
  cudaKernelNodeParams p = {};
  p.func = func;
  p.gridDim = dim3(N / 256);
  p.blockDim = dim3(256);
  p.kernelParams = a.args;
  return p;
}

static void run(cudaGraphExec_t exec, cudaStream_t s, int *d, std::vector<int> &out) {
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(out.data(), d, N * sizeof(int), cudaMemcpyDeviceToHost));
}

static void check_all(const char *label, const std::vector<int> &got, int want) {
  std::vector<int> w(N, want);
  expect_equal(label, got.data(), w.data(), N);
}

int main() {
  int *d, *e;
  CHECK(cudaMalloc(&d, N * sizeof(int)));
  CHECK(cudaMalloc(&e, N * sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaMemsetParams m = {};
  m.dst = d;
  m.value = 1;
  m.elementSize = 4;
  m.width = N;
  m.height = 1;
  cudaGraphNode_t fill, a, b, c, join, copy, host;
  CHECK(cudaGraphAddMemsetNode(&fill, graph, nullptr, 0, &m));
  KernelArgs add2(d, 2), add3(d, 3), add5(d, 5);
  KernelArgs times4(d, 4);
  cudaKernelNodeParams p = kernel_params((void *)add, add2);
  CHECK(cudaGraphAddKernelNode(&a, graph, &fill, 1, &p));           // 1 + 2 = 3
  p = kernel_params((void *)scale, times4);
  CHECK(cudaGraphAddKernelNode(&b, graph, &a, 1, &p));              // 3 * 4 = 12
  p = kernel_params((void *)add, add3);
  cudaGraphNode_t b_then_c[] = {b};
  CHECK(cudaGraphAddKernelNode(&c, graph, b_then_c, 1, &p));        // 12 + 3 = 15
  p = kernel_params((void *)add, add5);
  cudaGraphNode_t both[] = {b, c};
  CHECK(cudaGraphAddKernelNode(&join, graph, both, 2, &p));         // 15 + 5 = 20
  CHECK(cudaGraphAddMemcpyNode1D(&copy, graph, &join, 1, e, d, N * sizeof(int),
                                 cudaMemcpyDeviceToDevice));
  cudaHostNodeParams h = {count_call, &g_host_calls};
  CHECK(cudaGraphAddHostNode(&host, graph, &copy, 1, &h));

  size_t count = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  printf("nodes: %zu\n", count);
  CHECK(cudaGraphGetRootNodes(graph, nullptr, &count));
  printf("root nodes: %zu\n", count);
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count));
  printf("edges: %zu\n", count);
  CHECK(cudaGraphNodeGetDependencies(join, nullptr, nullptr, &count));
  printf("dependencies of the join: %zu\n", count);
  cudaGraphNode_t deps[4] = {};
  count = 4;
  CHECK(cudaGraphNodeGetDependencies(join, deps, nullptr, &count));
  require(count == 2 && ((deps[0] == b && deps[1] == c) || (deps[0] == c && deps[1] == b)),
          "the join depends on b and c");
  CHECK(cudaGraphNodeGetDependentNodes(a, nullptr, nullptr, &count));
  printf("dependents of a: %zu\n", count);
  cudaGraphNodeType type;
  cudaGraphNode_t all[] = {fill, a, copy, host};
  const char *names[] = {"memset", "kernel", "memcpy", "host"};
  for (int i = 0; i < 4; ++i) {
    CHECK(cudaGraphNodeGetType(all[i], &type));
    printf("type of the %s node: %d\n", names[i], (int)type);
  }
  cudaKernelNodeParams got = {};
  CHECK(cudaGraphKernelNodeGetParams(b, &got));
  printf("b reads back: grid %u, block %u, func is scale: %s\n", got.gridDim.x, got.blockDim.x,
         got.func == (void *)scale ? "yes" : "no");

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<int> out(N);
  run(exec, s, d, out);
  check_all("diamond", out, 20);
  CHECK(cudaMemcpy(out.data(), e, N * sizeof(int), cudaMemcpyDeviceToHost));
  check_all("copy node", out, 20);
  printf("host node calls: %d\n", g_host_calls);

  // parameters changed in the instantiated graph only, then in the graph
  KernelArgs add7(d, 7);
  p = kernel_params((void *)add, add7);
  CHECK(cudaGraphExecKernelNodeSetParams(exec, join, &p));          // 15 + 7 = 22
  run(exec, s, d, out);
  check_all("exec parameters changed", out, 22);
  KernelArgs times2(d, 2);
  p = kernel_params((void *)scale, times2);
  CHECK(cudaGraphKernelNodeSetParams(b, &p));                        // (3*2+3)+5 = 14
  cudaGraphExec_t second;
  CHECK(cudaGraphInstantiate(&second, graph, 0));
  run(second, s, d, out);
  check_all("graph parameters changed", out, 14);
  run(exec, s, d, out);
  check_all("the first instance keeps its own", out, 22);

  // a clone, a child graph node, a removed node
  cudaGraph_t clone, outer;
  CHECK(cudaGraphClone(&clone, graph));
  CHECK(cudaGraphGetNodes(clone, nullptr, &count));
  printf("nodes of the clone: %zu\n", count);
  CHECK(cudaGraphCreate(&outer, 0));
  cudaGraphNode_t child, after;
  CHECK(cudaGraphAddChildGraphNode(&child, outer, nullptr, 0, clone));
  KernelArgs add100(d, 100);
  p = kernel_params((void *)add, add100);
  CHECK(cudaGraphAddKernelNode(&after, outer, &child, 1, &p));
  cudaGraphExec_t outer_exec;
  CHECK(cudaGraphInstantiate(&outer_exec, outer, 0));
  run(outer_exec, s, d, out);
  check_all("child graph then a kernel", out, 114);
  CHECK(cudaGraphDestroyNode(host));
  CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  printf("nodes after destroying the host node: %zu\n", count);
  cudaGraphNode_t from[] = {a}, to[] = {join};
  CHECK(cudaGraphAddDependencies(graph, from, to, nullptr, 1));
  CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count));
  printf("edges after adding a -> join: %zu\n", count);
  printf("host node calls: %d\n", g_host_calls);

  CHECK(cudaGraphExecDestroy(outer_exec));
  CHECK(cudaGraphExecDestroy(second));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(outer));
  CHECK(cudaGraphDestroy(clone));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  return finish();
}
