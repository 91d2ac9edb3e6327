// Built with --default-stream per-thread: each host thread's default stream is its own
// (different stream ids), work on it is ordered, and results are right.
#include <cstdio>
#include <thread>
#include <cuda_runtime.h>

__global__ void fill(int *x, int value) { x[threadIdx.x] = value; }

int main() {
    unsigned long long ids[2] = {};
    int sums[2] = {};
    auto work = [&](int t) {
        int *d, h[64];
        cudaMalloc(&d, sizeof h);
        fill<<<1, 64>>>(d, t + 1);   // the thread's default stream
        cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, cudaStreamPerThread);
        cudaStreamSynchronize(cudaStreamPerThread);
        cudaStreamGetId(cudaStreamPerThread, &ids[t]);
        for (int v : h) sums[t] += v;
        cudaFree(d);
    };
    std::thread a(work, 0), b(work, 1);
    a.join();
    b.join();
    unsigned long long legacy = 0;
    cudaStreamGetId(cudaStreamLegacy, &legacy);
    printf("sums: %d %d\n", sums[0], sums[1]);
    printf("own streams: %d\n", ids[0] != ids[1] && ids[0] != legacy && ids[1] != legacy);
    return 0;
}
