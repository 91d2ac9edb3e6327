// local_arrays.cu: per-thread arrays indexed with run-time values, which PTX must keep in the
// local state space (.local) rather than registers: a per-thread insertion sort, a private
// histogram, and a small stack used by an iterative (non-recursive) tree walk.
//
// local_sort_median(const float* x, float* median, int n, int k)
//   launch: grid = ((n + 127) / 128,), block = (128,), dynamic shared = 0
//   thread i (i < n) copies the window x[i .. i+k-1] (indices clamped to n-1) into a local
//   array of 16 floats, insertion-sorts it, and writes median[i] = sorted[k / 2]; 1 <= k <= 16
// local_histogram(const unsigned char* data, int* out, int n, int chunk)
//   launch: grid = ((n / chunk + 63) / 64,), block = (64,), dynamic shared = 0
//   thread t owns data[t*chunk .. t*chunk + chunk) (clipped to n) and writes the index of its
//   most frequent value among the low nibbles (data & 15) to out[t], the smallest on ties, for
//   t < ceil(n / chunk)
// local_stack_sum(const int* tree_left, const int* tree_right, const int* value, const int* roots,
//                 int* out, int n)
//   launch: grid = ((n + 63) / 64,), block = (64,), dynamic shared = 0
//   a binary tree in arrays (child index -1 = none, depth <= 31); out[i] = sum of value[] over
//   the subtree rooted at roots[i], by a depth-first walk with a 32-entry local stack

extern "C" __global__ void local_sort_median(const float* x, float* median, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float w[16];
    for (int j = 0; j < k; ++j)
        w[j] = x[min(i + j, n - 1)];
    for (int j = 1; j < k; ++j) {
        float v = w[j];
        int p = j - 1;
        while (p >= 0 && w[p] > v) {
            w[p + 1] = w[p];
            --p;
        }
        w[p + 1] = v;
    }
    median[i] = w[k / 2];
}

extern "C" __global__ void local_histogram(const unsigned char* data, int* out, int n, int chunk)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int begin = t * chunk;
    if (begin >= n)
        return;
    int counts[16];
    for (int v = 0; v < 16; ++v)
        counts[v] = 0;
    int end = min(begin + chunk, n);
    for (int j = begin; j < end; ++j)
        counts[data[j] & 15]++;
    int best = 0;
    for (int v = 1; v < 16; ++v)
        if (counts[v] > counts[best])
            best = v;
    out[t] = best;
}

extern "C" __global__ void local_stack_sum(const int* tree_left, const int* tree_right,
                                           const int* value, const int* roots, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int stack[32];
    int top = 0;
    int sum = 0;
    stack[top++] = roots[i];
    while (top > 0) {
        int node = stack[--top];
        sum += value[node];
        if (tree_left[node] >= 0)
            stack[top++] = tree_left[node];
        if (tree_right[node] >= 0)
            stack[top++] = tree_right[node];
    }
    out[i] = sum;
}
