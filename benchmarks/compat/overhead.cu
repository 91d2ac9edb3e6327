// The fixed cost of CUDA calls through ptxport's driver shim: an empty <<<1,1>>> launch
// (queued; and followed by cudaDeviceSynchronize), a 4-byte cudaMemcpy each way, and
// cudaEventQuery (a call that does almost nothing: the shim's own round trip). Prints one
// "name microseconds" line per measurement (the median of 7 batches of N calls).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void empty() {}

template <typename F> static double median_us(int n, F call) {
    double batches[7];
    for (double &b : batches) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; i++) call();
        auto t1 = std::chrono::steady_clock::now();
        b = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
    }
    std::sort(batches, batches + 7);
    return batches[3];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200;
    int *d, h = 1;
    cudaMalloc(&d, 4);
    empty<<<1, 1>>>();  // compiles the kernel, untimed
    cudaDeviceSynchronize();
    double queued = median_us(n, [] { empty<<<1, 1>>>(); });
    cudaDeviceSynchronize();
    double synced = median_us(n, [] { empty<<<1, 1>>>(); cudaDeviceSynchronize(); });
    double htod = median_us(n, [&] { cudaMemcpy(d, &h, 4, cudaMemcpyHostToDevice); });
    double dtoh = median_us(n, [&] { cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost); });
    cudaEvent_t event;
    cudaEventCreate(&event);
    double query = median_us(n, [&] { cudaEventQuery(event); });
    printf("launch_queued %.2f\nlaunch_and_sync %.2f\nmemcpy_htod_4B %.2f\n"
           "memcpy_dtoh_4B %.2f\nevent_query %.2f\n", queued, synced, htod, dtoh, query);
    printf("errors %s\n", cudaGetErrorName(cudaGetLastError()));
    return 0;
}
