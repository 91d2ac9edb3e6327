// bitonic_sort.cu: sorts each block's tile of keys ascending with a bitonic sorting network in
// shared memory (dynamic size, one key per thread), with the values carried along.
//
// bitonic_sort_block(unsigned* keys, int* values, int n)
//   launch: grid = ((n + b - 1) / b,), block = (b,) with b a power of two <= 1024,
//           dynamic shared = b * (sizeof(unsigned) + sizeof(int))
//   sorts keys[k*b : k*b + b] ascending in place for each tile k, moving values[] with them.
//   Positions past n are padded with key 0xffffffff and dropped. Equal keys: the network is
//   not stable, so give distinct keys for a unique values[] result.

extern "C" __global__ void bitonic_sort_block(unsigned* keys, int* values, int n)
{
    extern __shared__ unsigned smem[];
    unsigned* skey = smem;
    int* sval = (int*)(smem + blockDim.x);
    unsigned t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    skey[t] = i < n ? keys[i] : 0xffffffffu;
    sval[t] = i < n ? values[i] : 0;
    __syncthreads();
    for (unsigned size = 2; size <= blockDim.x; size <<= 1) {
        for (unsigned stride = size >> 1; stride > 0; stride >>= 1) {
            unsigned partner = t ^ stride;
            if (partner > t) {
                bool ascending = (t & size) == 0;
                unsigned a = skey[t], b = skey[partner];
                if ((a > b) == ascending) {
                    skey[t] = b;
                    skey[partner] = a;
                    int v = sval[t];
                    sval[t] = sval[partner];
                    sval[partner] = v;
                }
            }
            __syncthreads();
        }
    }
    if (i < n) {
        keys[i] = skey[t];
        values[i] = sval[t];
    }
}
