// device_globals.cu: variables in the global state space with initializers: scalars, arrays,
// a struct, an array of pointers initialised with addresses of other globals (PTX
// generic(...) initializers), and a mutable counter the kernels update.
//
// globals_read(int* out, int n)
//   launch: grid = ((n + 63) / 64,), block = (64,), dynamic shared = 0
//   out[i] = gTable[i % 8] + *gTablePtrs[i % 3] + gPair.a * gPair.b + (int)gScale,
//   with gTable = {2, 3, 5, 7, 11, 13, 17, 19}, gTablePtrs = {&gTable[1], &gTable[4], &gExtra},
//   gExtra = 100, gPair = {6, 7}, gScale = 2.5 (so *gTablePtrs[k] = 3, 11, 100 and the tail
//   adds 42 + 2)
// globals_accumulate(const int* x, int n)
//   launch: grid = ((n + 63) / 64,), block = (64,), dynamic shared = 0
//   gCounter += sum of x (atomicAdd; gCounter starts at 7 when the module loads, and keeps its
//   value between launches); gTable[i % 8] is not touched
// globals_snapshot(int* out)
//   launch: grid = (1,), block = (1,), dynamic shared = 0
//   out[0] = gCounter; out[1] = *gCounterPtr (the same variable through a pointer initialised
//   with its address); out[2] = gTable[7]

__device__ int gTable[8] = {2, 3, 5, 7, 11, 13, 17, 19};
__device__ int gExtra = 100;
__device__ int* gTablePtrs[3] = {&gTable[1], &gTable[4], &gExtra};
__device__ float gScale = 2.5f;
__device__ int gCounter = 7;
__device__ int* gCounterPtr = &gCounter;

struct Pair {
    int a, b;
};
__device__ Pair gPair = {6, 7};

extern "C" __global__ void globals_read(int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = gTable[i % 8] + *gTablePtrs[i % 3] + gPair.a * gPair.b + (int)gScale;
}

extern "C" __global__ void globals_accumulate(const int* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&gCounter, x[i]);
}

extern "C" __global__ void globals_snapshot(int* out)
{
    out[0] = gCounter;
    out[1] = *gCounterPtr;
    out[2] = gTable[7];
}
