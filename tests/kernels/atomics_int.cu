// atomics_int.cu: every integer atomic CUDA offers, on int, unsigned and 64-bit operands.
// Each accumulator is hit by every thread with a commutative operation (or, for atomicInc and
// atomicDec, by the same function every time), so final values do not depend on the order;
// atomicExch and atomicCAS target one slot per thread, so their old values are deterministic.
// The values atomics return are not stored, except for Exch and CAS.
//
// atomics_i32(const int* x, int* acc, int* slots, int* old_slots, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   for each i < n: acc[0] += x[i]; acc[1] -= x[i]; acc[2] = min(acc[2], x[i]);
//   acc[3] = max(acc[3], x[i]); acc[4] &= x[i]; acc[5] |= x[i]; acc[6] ^= x[i]
//   (32-bit wrap-around for the sums); old_slots[i] = slots[i]; slots[i] = x[i] (atomicExch)
// atomics_u32(const unsigned* x, unsigned* acc, unsigned limit, int n)
//   launch: as atomics_i32
//   for each i < n: acc[0] += x[i]; acc[1] = min(acc[1], x[i]); acc[2] = max(acc[2], x[i]);
//   acc[3] &= x[i]; acc[4] |= x[i]; acc[5] ^= x[i];
//   acc[6] = (acc[6] >= limit) ? 0 : acc[6] + 1 (atomicInc; n applications);
//   acc[7] = (acc[7] == 0 || acc[7] > limit) ? limit : acc[7] - 1 (atomicDec; n applications)
// atomics_u64(const unsigned long long* x, unsigned long long* acc, unsigned long long* slots,
//             unsigned long long* old_slots, int n)
//   launch: as atomics_i32
//   for each i < n: acc[0] += x[i] (mod 2**64); acc[1] = min; acc[2] = max; acc[3] &= x[i];
//   acc[4] |= x[i]; acc[5] ^= x[i]; old_slots[i] = atomicCAS(&slots[i], i, x[i]) (slots[i]
//   becomes x[i] where it held i, and keeps its value elsewhere)
// atomics_i64_minmax(const long long* x, long long* acc, int n)
//   launch: as atomics_i32
//   acc[0] = min(acc[0], x[i]); acc[1] = max(acc[1], x[i]) over i < n, signed 64-bit
// atomics_scoped(const int* x, int* block_sums, int* total, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   block_sums[blockIdx.x] = sum of the block's x (atomicAdd_block on shared memory), then
//   *total += block_sums[blockIdx.x] (atomicAdd_system on global memory; host zeroes *total)

extern "C" __global__ void atomics_i32(const int* x, int* acc, int* slots, int* old_slots, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = x[i];
    atomicAdd(&acc[0], v);
    atomicSub(&acc[1], v);
    atomicMin(&acc[2], v);
    atomicMax(&acc[3], v);
    atomicAnd(&acc[4], v);
    atomicOr(&acc[5], v);
    atomicXor(&acc[6], v);
    old_slots[i] = atomicExch(&slots[i], v);
}

extern "C" __global__ void atomics_u32(const unsigned* x, unsigned* acc, unsigned limit, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned v = x[i];
    atomicAdd(&acc[0], v);
    atomicMin(&acc[1], v);
    atomicMax(&acc[2], v);
    atomicAnd(&acc[3], v);
    atomicOr(&acc[4], v);
    atomicXor(&acc[5], v);
    atomicInc(&acc[6], limit);
    atomicDec(&acc[7], limit);
}

extern "C" __global__ void atomics_u64(const unsigned long long* x, unsigned long long* acc,
                                       unsigned long long* slots, unsigned long long* old_slots,
                                       int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned long long v = x[i];
    atomicAdd(&acc[0], v);
    atomicMin(&acc[1], v);
    atomicMax(&acc[2], v);
    atomicAnd(&acc[3], v);
    atomicOr(&acc[4], v);
    atomicXor(&acc[5], v);
    old_slots[i] = atomicCAS(&slots[i], (unsigned long long)i, v);
}

extern "C" __global__ void atomics_i64_minmax(const long long* x, long long* acc, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    atomicMin(&acc[0], x[i]);
    atomicMax(&acc[1], x[i]);
}

extern "C" __global__ void atomics_scoped(const int* x, int* block_sums, int* total, int n)
{
    __shared__ int block_sum;
    if (threadIdx.x == 0)
        block_sum = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd_block(&block_sum, x[i]);
    __syncthreads();
    if (threadIdx.x == 0) {
        block_sums[blockIdx.x] = block_sum;
        atomicAdd_system(total, block_sum);
    }
}
