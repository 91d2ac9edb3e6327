// A capture that forks to a second stream and joins back through events, launched twice.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void add(int *x, int by) { x[threadIdx.x] += by; }

int main() {
    int *a, *b, ha[32], hb[32];
    cudaMalloc(&a, sizeof ha);
    cudaMalloc(&b, sizeof hb);
    cudaMemset(a, 0, sizeof ha);
    cudaMemset(b, 0, sizeof hb);
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    cudaEvent_t fork, join;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
    add<<<1, 32, 0, s1>>>(a, 1);
    cudaEventRecord(fork, s1);
    cudaStreamWaitEvent(s2, fork, 0);      // s2 joins the capture
    add<<<1, 32, 0, s2>>>(b, 10);
    cudaEventRecord(join, s2);
    cudaStreamWaitEvent(s1, join, 0);      // and is joined back
    add<<<1, 32, 0, s1>>>(a, 100);
    cudaGraph_t graph;
    cudaError_t e = cudaStreamEndCapture(s1, &graph);
    printf("capture: %s\n", cudaGetErrorName(e));
    cudaGraphExec_t exec;
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphLaunch(exec, s1);
    cudaGraphLaunch(exec, s1);
    e = cudaStreamSynchronize(s1);
    cudaMemcpy(ha, a, sizeof ha, cudaMemcpyDeviceToHost);
    cudaMemcpy(hb, b, sizeof hb, cudaMemcpyDeviceToHost);
    printf("launches: %s a %d b %d\n", cudaGetErrorName(e), ha[0], hb[31]);
    return 0;
}
