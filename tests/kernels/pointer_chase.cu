// pointer_chase.cu: kernels that follow device addresses stored in device memory. The
// addresses come from the host, inside a struct argument (each member the address of an
// allocation of its own, reached by no other parameter); the kernels store them into device
// memory, and after a barrier other threads load them back and dereference them. A backend
// passes only if any device address is valid wherever a kernel finds it (CUDA's rule; on
// OpenCL, shared virtual memory).
//
// struct Node { float value; /*@0*/ int key; /*@4*/ Node* next; /*@8*/ }  (sizeof 16)
// struct NodePool { Node* node[16]; }  (sizeof 128): 16 nodes, one allocation each
// list_walk(NodePool pool, const int* order, float* sums, int* counts)
//   launch: grid = (1,), block = (32,), dynamic shared = 0
//   thread t < 16 links the list: pool.node[order[t]]->next = pool.node[order[t + 1]], the
//   last one nullptr; then (after __syncthreads) thread t < 16 walks from pool.node[t] to the
//   end: sums[t] = the values added in walk order, counts[t] = the nodes visited (hops),
//   counts[16 + t] = sum over the walk of key * (its 1-based position in the walk).
//   Exact: the values are multiples of 1/8 below 8 in magnitude.
// struct RowSet { float* row[6]; }  (sizeof 48): 6 rows of `width` floats, one allocation each
// batched_row_fma(RowSet set, float** table, const float* factors, int width)
//   launch: grid = (1,), block = (64,), dynamic shared = 0
//   thread r < 6 stores table[r] = set.row[r]; then (after __syncthreads) for every element
//   e < 6 * width, strided over the block: r = e / width, i = e % width, and through the row
//   pointer loaded from table: row[i] = fmaf(row[i], factors[r], (float)i). Exact (one fma).

struct Node {
    float value;
    int key;
    Node* next;
};

struct NodePool {
    Node* node[16];
};

struct RowSet {
    float* row[6];
};

static_assert(sizeof(Node) == 16, "Node layout");
static_assert(sizeof(NodePool) == 128, "NodePool layout");
static_assert(sizeof(RowSet) == 48, "RowSet layout");

extern "C" __global__ void list_walk(NodePool pool, const int* order, float* sums, int* counts)
{
    const int nodes = 16;
    int t = threadIdx.x;
    if (t < nodes)
        pool.node[order[t]]->next = t + 1 < nodes ? pool.node[order[t + 1]] : nullptr;
    __syncthreads();
    if (t >= nodes)
        return;
    float sum = 0.0f;
    int hops = 0, check = 0;
    for (const Node* p = pool.node[t]; p != nullptr; p = p->next) {
        sum += p->value;
        hops += 1;
        check += p->key * hops;
    }
    sums[t] = sum;
    counts[t] = hops;
    counts[nodes + t] = check;
}

extern "C" __global__ void batched_row_fma(RowSet set, float** table, const float* factors,
                                           int width)
{
    const int rows = 6;
    if (threadIdx.x < rows)
        table[threadIdx.x] = set.row[threadIdx.x];
    __syncthreads();
    for (int e = threadIdx.x; e < rows * width; e += blockDim.x) {
        int r = e / width, i = e % width;
        float* row = table[r];
        row[i] = fmaf(row[i], factors[r], (float)i);
    }
}
