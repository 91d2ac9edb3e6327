// Managed memory touched by host and kernels, and four host threads each driving their own
// stream at once.
#include <cstdio>
#include <thread>
#include <vector>
#include <cuda_runtime.h>

__global__ void increment(int *x, int n, int by) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += by;
}

int main() {
    const int n = 1000;
    int *m;
    printf("managed: %s\n", cudaGetErrorName(cudaMallocManaged(&m, n * sizeof(int))));
    for (int i = 0; i < n; i++) m[i] = i;
    increment<<<(n + 127) / 128, 128>>>(m, n, 5);
    cudaDeviceSynchronize();
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += m[i] != i + 5;
    printf("managed wrong: %d\n", wrong);

    std::vector<std::thread> threads;
    int results[4] = {};
    for (int t = 0; t < 4; t++)
        threads.emplace_back([t, &results] {
            cudaStream_t s;
            cudaStreamCreate(&s);
            int *d, h[256];
            cudaMalloc(&d, sizeof h);
            cudaMemsetAsync(d, 0, sizeof h, s);
            for (int k = 0; k <= t; k++) increment<<<2, 128, 0, s>>>(d, 256, 1);
            cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, s);
            cudaStreamSynchronize(s);
            int sum = 0;
            for (int v : h) sum += v;
            results[t] = sum;
            cudaFree(d);
            cudaStreamDestroy(s);
        });
    for (auto &th : threads) th.join();
    printf("threads: %d %d %d %d\n", results[0], results[1], results[2], results[3]);
    cudaFree(m);
    return 0;
}
