// The second translation unit of two_units_main.cu.
#include <cuda_runtime.h>
__global__ void add_b(int *x, int n) { int i = threadIdx.x; if (i < n) x[i] += 100; }
void run_b(int *d, int n) { add_b<<<1, n>>>(d, n); }
