// A small GPT trained for five steps: token and position embeddings, pre-norm transformer
// blocks (layernorm, causal self-attention with softmax, a GELU MLP), a final layernorm, logits
// through the tied token embedding, cross-entropy, and AdamW; forward and backward. Every
// matmul goes through cuBLAS (cublasSgemm, and cublasSgemmStridedBatched over the attention
// heads), everything else through the kernels below, written for clarity (one thread per
// element, row or channel) and for results that do not depend on scheduling (no atomics).
//
// The weights and tokens come from a seeded xorshift32 generator that
// tests/compat/test_gpt_trainer.py implements identically; that test trains the same model in
// numpy and compares the losses this program prints to stderr (they may differ in the last
// digits between devices, so stdout carries only what does not: that every loss is finite
// and that training lowered it).
//
// Layouts are row-major: activations (B*T, channels), a linear layer's weight (out, in).
// cuBLAS is column-major, so a row-major (rows, cols) matrix is its (cols, rows) transpose.

#include <cublas_v2.h>

#include <vector>

#include "common.h"

namespace {

constexpr int V = 64, T = 16, C = 32, L = 2, NH = 2, B = 2, HS = C / NH, N = B * T;
constexpr int STEPS = 5;
constexpr float LR = 1e-3f, BETA1 = 0.9f, BETA2 = 0.999f, EPS = 1e-8f, DECAY = 0.01f;

#define CUBLAS(call) check_cublas((call), #call, __LINE__)

void check_cublas(cublasStatus_t status, const char *what, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    printf("FAIL gpt_trainer.cu:%d: %s returned %d\n", line, what, (int)status);
    exit(1);
  }
}

// xorshift32; uniform() has 24 bits, so 2u - 1 is exact in float (the test relies on it).
struct Generator {
  unsigned state;
  unsigned next() {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
  }
  float uniform() { return (float)(next() >> 8) * (1.0f / 16777216.0f); }
  float symmetric(float scale) { return (2.0f * uniform() - 1.0f) * scale; }
};

// The parameters, in this order, in one buffer (so that AdamW is one launch).
struct LayerParams {
  float *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb, *ln2w, *ln2b, *fcw, *fcb, *fc2w, *fc2b;
};
struct Params {
  float *wte, *wpe;
  LayerParams layer[L];
  float *lnfw, *lnfb;
};

// Sizes in the order above; the test's numpy model lists the same.
std::vector<int> param_sizes() {
  std::vector<int> sizes = {V * C, T * C};
  for (int l = 0; l < L; ++l) {
    int layer[] = {C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C};
    sizes.insert(sizes.end(), layer, layer + 12);
  }
  sizes.push_back(C);
  sizes.push_back(C);
  return sizes;
}

Params carve(float *base) {
  std::vector<int> sizes = param_sizes();
  std::vector<float *> at;
  for (int size : sizes) {
    at.push_back(base);
    base += size;
  }
  Params p;
  int i = 0;
  p.wte = at[i++];
  p.wpe = at[i++];
  for (int l = 0; l < L; ++l) {
    float **f = &p.layer[l].ln1w;
    for (int k = 0; k < 12; ++k) f[k] = at[i++];
  }
  p.lnfw = at[i++];
  p.lnfb = at[i++];
  return p;
}

// Layernorm weights start at 1; every other parameter is symmetric(0.1) in order.
std::vector<float> initial_params(Generator &gen) {
  std::vector<int> sizes = param_sizes();
  std::vector<float> values;
  int index = 0;
  for (int size : sizes) {
    int in_layer = (index - 2) % 12;
    bool ln_weight = (index >= 2 && index < 2 + 12 * L && (in_layer == 0 || in_layer == 6)) ||
                     index == 2 + 12 * L;
    for (int k = 0; k < size; ++k) values.push_back(ln_weight ? 1.0f : gen.symmetric(0.1f));
    ++index;
  }
  return values;
}

// ---- kernels ----

__global__ void embed(float *out, const int *tokens, const float *wte, const float *wpe) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N * C) return;
  int n = i / C, c = i % C;
  out[i] = wte[tokens[n] * C + c] + wpe[(n % T) * C + c];
}

// One thread per channel walks every row in order, so repeated tokens add in a fixed order.
__global__ void embed_backward(float *dwte, float *dwpe, const float *dout, const int *tokens) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int n = 0; n < N; ++n) dwte[tokens[n] * C + c] += dout[n * C + c];
  for (int t = 0; t < T; ++t) {
    float sum = 0.0f;
    for (int b = 0; b < B; ++b) sum += dout[(b * T + t) * C + c];
    dwpe[t * C + c] += sum;
  }
}

__global__ void layernorm(float *out, float *mean, float *rstd, const float *in, const float *w,
                          const float *bias) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const float *x = in + n * C;
  float m = 0.0f;
  for (int c = 0; c < C; ++c) m += x[c];
  m /= C;
  float var = 0.0f;
  for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
  float s = 1.0f / sqrtf(var / C + 1e-5f);
  for (int c = 0; c < C; ++c) out[n * C + c] = (x[c] - m) * s * w[c] + bias[c];
  mean[n] = m;
  rstd[n] = s;
}

// dinp += the layernorm's input gradient (the residual stream's gradient accumulates here).
__global__ void layernorm_backward(float *dinp, const float *dout, const float *in,
                                   const float *w, const float *mean, const float *rstd) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (int c = 0; c < C; ++c) {
    float norm = (in[n * C + c] - mean[n]) * rstd[n];
    float dnorm = w[c] * dout[n * C + c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  dnorm_mean /= C;
  dnorm_norm_mean /= C;
  for (int c = 0; c < C; ++c) {
    float norm = (in[n * C + c] - mean[n]) * rstd[n];
    float dnorm = w[c] * dout[n * C + c];
    dinp[n * C + c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[n];
  }
}

__global__ void layernorm_param_backward(float *dw, float *db, const float *dout,
                                         const float *in, const float *mean, const float *rstd) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sw = 0.0f, sb = 0.0f;
  for (int n = 0; n < N; ++n) {
    sw += (in[n * C + c] - mean[n]) * rstd[n] * dout[n * C + c];
    sb += dout[n * C + c];
  }
  dw[c] += sw;
  db[c] += sb;
}

__global__ void add_bias(float *out, const float *bias, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) out[i] += bias[i % cols];
}

__global__ void bias_backward(float *dbias, const float *dout, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float sum = 0.0f;
  for (int r = 0; r < rows; ++r) sum += dout[r * cols + c];
  dbias[c] += sum;
}

__global__ void residual(float *out, const float *a, const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

// GELU, tanh approximation.
constexpr float GELU_K = 0.7978845608028654f;  // sqrt(2 / pi)

__global__ void gelu(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
}

__global__ void gelu_backward(float *din, const float *in, const float *dout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float th = tanhf(GELU_K * (x + 0.044715f * x * x * x));
  float dth = (1.0f - th * th) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
  din[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * dth);
}

// qkv (N, 3C) <-> q, k, v each (B*NH, T, HS): each head's rows contiguous for batched GEMMs.
__global__ void split_heads(float *q, float *k, float *v, const float *qkv) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= B * NH * T * HS) return;
  int d = i % HS, t = (i / HS) % T, h = (i / (HS * T)) % NH, b = i / (HS * T * NH);
  const float *row = qkv + (b * T + t) * 3 * C + h * HS + d;
  q[i] = row[0];
  k[i] = row[C];
  v[i] = row[2 * C];
}

__global__ void split_heads_backward(float *dqkv, const float *dq, const float *dk,
                                     const float *dv) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= B * NH * T * HS) return;
  int d = i % HS, t = (i / HS) % T, h = (i / (HS * T)) % NH, b = i / (HS * T * NH);
  float *row = dqkv + (b * T + t) * 3 * C + h * HS + d;
  row[0] = dq[i];
  row[C] = dk[i];
  row[2 * C] = dv[i];
}

// y (B*NH, T, HS) <-> (N, C); `forward` picks the direction.
__global__ void merge_heads(float *merged, float *heads, bool forward) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= B * NH * T * HS) return;
  int d = i % HS, t = (i / HS) % T, h = (i / (HS * T)) % NH, b = i / (HS * T * NH);
  int at = (b * T + t) * C + h * HS + d;
  if (forward)
    merged[at] = heads[i];
  else
    heads[i] = merged[at];
}

// One thread per (head, query row): scaled, causally masked softmax of the scores.
__global__ void causal_softmax(float *att, const float *scores, float scale) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= B * NH * T) return;
  int t = r % T;
  const float *s = scores + r * T;
  float *a = att + r * T;
  float maxv = -INFINITY;
  for (int u = 0; u <= t; ++u) maxv = fmaxf(maxv, s[u] * scale);
  float sum = 0.0f;
  for (int u = 0; u <= t; ++u) {
    a[u] = expf(s[u] * scale - maxv);
    sum += a[u];
  }
  for (int u = 0; u < T; ++u) a[u] = u <= t ? a[u] / sum : 0.0f;
}

__global__ void causal_softmax_backward(float *dscores, const float *att, const float *datt,
                                        float scale) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= B * NH * T) return;
  const float *a = att + r * T, *da = datt + r * T;
  float dot = 0.0f;
  for (int u = 0; u < T; ++u) dot += a[u] * da[u];
  for (int u = 0; u < T; ++u) dscores[r * T + u] = scale * a[u] * (da[u] - dot);
}

// Per row: probabilities, the row's loss, and dlogits = (probs - onehot) / N.
__global__ void cross_entropy(float *losses, float *dlogits, const float *logits,
                              const int *targets) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const float *x = logits + n * V;
  float maxv = -INFINITY;
  for (int v = 0; v < V; ++v) maxv = fmaxf(maxv, x[v]);
  float sum = 0.0f;
  for (int v = 0; v < V; ++v) sum += expf(x[v] - maxv);
  for (int v = 0; v < V; ++v) {
    float p = expf(x[v] - maxv) / sum;
    dlogits[n * V + v] = (p - (v == targets[n] ? 1.0f : 0.0f)) / N;
  }
  losses[n] = logf(sum) - (x[targets[n]] - maxv);
}

__global__ void adamw(float *p, const float *g, float *m, float *v, int n, float corr1,
                      float corr2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  m[i] = BETA1 * m[i] + (1.0f - BETA1) * g[i];
  v[i] = BETA2 * v[i] + (1.0f - BETA2) * g[i] * g[i];
  float mhat = m[i] / corr1, vhat = v[i] / corr2;
  p[i] -= LR * (mhat / (sqrtf(vhat) + EPS) + DECAY * p[i]);
}

int blocks(int n) { return (n + 127) / 128; }

// ---- matmuls (row-major views of cuBLAS's column-major calls) ----

cublasHandle_t handle;
const float ONE = 1.0f, ZERO = 0.0f;

// out (N, oc) = in (N, ic) @ w (oc, ic)^T
void linear(float *out, const float *in, const float *w, int ic, int oc) {
  CUBLAS(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, oc, N, ic, &ONE, w, ic, in, ic, &ZERO,
                     out, oc));
}

// din (N, ic) = dout @ w; dw (oc, ic) += dout^T @ in
void linear_backward(float *din, float *dw, const float *dout, const float *in, const float *w,
                     int ic, int oc) {
  CUBLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, ic, N, oc, &ONE, w, ic, dout, oc, &ZERO,
                     din, ic));
  CUBLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, ic, oc, N, &ONE, in, ic, dout, oc, &ONE,
                     dw, ic));
}

// Per head (B*NH of them): c (T, T or HS) = a @ b^T (transpose_b) or a @ b, row-major.
void batched(float *c, const float *a, const float *b, int m, int n, int k, bool a_t, bool b_t) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  int lda = a_t ? m : k, ldb = b_t ? k : n;
  CUBLAS(cublasSgemmStridedBatched(handle, b_t ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   a_t ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &ONE, b, ldb,
                                   (long long)k * n, a, lda, (long long)m * k, &ZERO, c, n,
                                   (long long)m * n, B * NH));
}

// ---- the model ----

struct LayerActs {
  float *in, *ln1, *mean1, *rstd1, *qkv, *q, *k, *v, *scores, *att, *yh, *y, *x2, *ln2, *mean2,
      *rstd2, *h, *hg;
};

struct Model {
  float *params, *grads, *m, *v;
  int nparams;
  Params p, g;
  int *tokens, *targets;
  LayerActs acts[L];
  float *out, *lnf, *meanf, *rstdf, *logits, *dlogits, *losses;
  float *dres, *dln, *dbig, *dqkv, *dq, *dk, *dv, *dscores, *datt, *dyh, *dy;
};

float *zeros(int n) {
  float *ptr;
  CHECK(cudaMalloc(&ptr, n * sizeof(float)));
  CHECK(cudaMemset(ptr, 0, n * sizeof(float)));
  return ptr;
}

void allocate(Model &md) {
  md.nparams = 0;
  for (int size : param_sizes()) md.nparams += size;
  md.params = zeros(md.nparams);
  md.grads = zeros(md.nparams);
  md.m = zeros(md.nparams);
  md.v = zeros(md.nparams);
  md.p = carve(md.params);
  md.g = carve(md.grads);
  int heads = B * NH * T * HS;
  for (LayerActs &a : md.acts) {
    float **f[] = {&a.in, &a.ln1, &a.y, &a.x2, &a.ln2};
    for (float **x : f) *x = zeros(N * C);
    float **stats[] = {&a.mean1, &a.rstd1, &a.mean2, &a.rstd2};
    for (float **x : stats) *x = zeros(N);
    a.qkv = zeros(N * 3 * C);
    a.q = zeros(heads), a.k = zeros(heads), a.v = zeros(heads), a.yh = zeros(heads);
    a.scores = zeros(B * NH * T * T), a.att = zeros(B * NH * T * T);
    a.h = zeros(N * 4 * C), a.hg = zeros(N * 4 * C);
  }
  md.out = zeros(N * C), md.lnf = zeros(N * C), md.meanf = zeros(N), md.rstdf = zeros(N);
  md.logits = zeros(N * V), md.dlogits = zeros(N * V), md.losses = zeros(N);
  md.dres = zeros(N * C), md.dln = zeros(N * C), md.dbig = zeros(N * 4 * C);
  md.dqkv = zeros(N * 3 * C), md.dq = zeros(heads), md.dk = zeros(heads), md.dv = zeros(heads);
  md.dscores = zeros(B * NH * T * T), md.datt = zeros(B * NH * T * T);
  md.dyh = zeros(heads), md.dy = zeros(N * C);
  CHECK(cudaMalloc(&md.tokens, N * sizeof(int)));
  CHECK(cudaMalloc(&md.targets, N * sizeof(int)));
}

void block_forward(Model &md, int l, const float *x) {
  LayerActs &a = md.acts[l];
  const LayerParams &w = md.p.layer[l];
  const float scale = 1.0f / sqrtf((float)HS);
  CHECK(cudaMemcpy(a.in, x, N * C * sizeof(float), cudaMemcpyDeviceToDevice));
  layernorm<<<blocks(N), 128>>>(a.ln1, a.mean1, a.rstd1, a.in, w.ln1w, w.ln1b);
  linear(a.qkv, a.ln1, w.qkvw, C, 3 * C);
  add_bias<<<blocks(N * 3 * C), 128>>>(a.qkv, w.qkvb, N, 3 * C);
  split_heads<<<blocks(B * NH * T * HS), 128>>>(a.q, a.k, a.v, a.qkv);
  batched(a.scores, a.q, a.k, T, T, HS, false, true);
  causal_softmax<<<blocks(B * NH * T), 128>>>(a.att, a.scores, scale);
  batched(a.yh, a.att, a.v, T, HS, T, false, false);
  merge_heads<<<blocks(B * NH * T * HS), 128>>>(a.y, a.yh, true);
  linear(md.dy, a.y, w.projw, C, C);  // dy: scratch for the projection here
  add_bias<<<blocks(N * C), 128>>>(md.dy, w.projb, N, C);
  residual<<<blocks(N * C), 128>>>(a.x2, a.in, md.dy, N * C);
  layernorm<<<blocks(N), 128>>>(a.ln2, a.mean2, a.rstd2, a.x2, w.ln2w, w.ln2b);
  linear(a.h, a.ln2, w.fcw, C, 4 * C);
  add_bias<<<blocks(N * 4 * C), 128>>>(a.h, w.fcb, N, 4 * C);
  gelu<<<blocks(N * 4 * C), 128>>>(a.hg, a.h, N * 4 * C);
  linear(md.dy, a.hg, w.fc2w, 4 * C, C);
  add_bias<<<blocks(N * C), 128>>>(md.dy, w.fc2b, N, C);
  residual<<<blocks(N * C), 128>>>(md.out, a.x2, md.dy, N * C);
}

// md.dres holds dloss/d(block output) on entry and dloss/d(block input) on exit.
void block_backward(Model &md, int l) {
  LayerActs &a = md.acts[l];
  const LayerParams &w = md.p.layer[l];
  LayerParams &g = md.g.layer[l];
  const float scale = 1.0f / sqrtf((float)HS);
  linear_backward(md.dbig, g.fc2w, md.dres, a.hg, w.fc2w, 4 * C, C);
  bias_backward<<<blocks(C), 128>>>(g.fc2b, md.dres, N, C);
  gelu_backward<<<blocks(N * 4 * C), 128>>>(md.dbig, a.h, md.dbig, N * 4 * C);
  linear_backward(md.dln, g.fcw, md.dbig, a.ln2, w.fcw, C, 4 * C);
  bias_backward<<<blocks(4 * C), 128>>>(g.fcb, md.dbig, N, 4 * C);
  layernorm_param_backward<<<blocks(C), 128>>>(g.ln2w, g.ln2b, md.dln, a.x2, a.mean2, a.rstd2);
  layernorm_backward<<<blocks(N), 128>>>(md.dres, md.dln, a.x2, w.ln2w, a.mean2, a.rstd2);
  linear_backward(md.dy, g.projw, md.dres, a.y, w.projw, C, C);
  bias_backward<<<blocks(C), 128>>>(g.projb, md.dres, N, C);
  merge_heads<<<blocks(B * NH * T * HS), 128>>>(md.dy, md.dyh, false);
  batched(md.datt, md.dyh, a.v, T, T, HS, false, true);   // datt = dy @ v^T
  batched(md.dv, a.att, md.dyh, T, HS, T, true, false);   // dv = att^T @ dy
  causal_softmax_backward<<<blocks(B * NH * T), 128>>>(md.dscores, a.att, md.datt, scale);
  batched(md.dq, md.dscores, a.k, T, HS, T, false, false);  // dq = dscores @ k
  batched(md.dk, md.dscores, a.q, T, HS, T, true, false);   // dk = dscores^T @ q
  split_heads_backward<<<blocks(B * NH * T * HS), 128>>>(md.dqkv, md.dq, md.dk, md.dv);
  linear_backward(md.dln, g.qkvw, md.dqkv, a.ln1, w.qkvw, C, 3 * C);
  bias_backward<<<blocks(3 * C), 128>>>(g.qkvb, md.dqkv, N, 3 * C);
  layernorm_param_backward<<<blocks(C), 128>>>(g.ln1w, g.ln1b, md.dln, a.in, a.mean1, a.rstd1);
  layernorm_backward<<<blocks(N), 128>>>(md.dres, md.dln, a.in, w.ln1w, a.mean1, a.rstd1);
}

float forward(Model &md) {
  embed<<<blocks(N * C), 128>>>(md.out, md.tokens, md.p.wte, md.p.wpe);
  for (int l = 0; l < L; ++l) block_forward(md, l, md.out);
  layernorm<<<blocks(N), 128>>>(md.lnf, md.meanf, md.rstdf, md.out, md.p.lnfw, md.p.lnfb);
  linear(md.logits, md.lnf, md.p.wte, C, V);
  cross_entropy<<<blocks(N), 128>>>(md.losses, md.dlogits, md.logits, md.targets);
  float losses[N];
  CHECK(cudaMemcpy(losses, md.losses, sizeof losses, cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (float x : losses) sum += x;
  return (float)(sum / N);
}

void backward(Model &md) {
  CHECK(cudaMemset(md.grads, 0, md.nparams * sizeof(float)));
  CHECK(cudaMemset(md.dres, 0, N * C * sizeof(float)));
  linear_backward(md.dln, md.g.wte, md.dlogits, md.lnf, md.p.wte, C, V);
  layernorm_param_backward<<<blocks(C), 128>>>(md.g.lnfw, md.g.lnfb, md.dln, md.out, md.meanf,
                                                md.rstdf);
  layernorm_backward<<<blocks(N), 128>>>(md.dres, md.dln, md.out, md.p.lnfw, md.meanf,
                                         md.rstdf);
  for (int l = L - 1; l >= 0; --l) block_backward(md, l);
  embed_backward<<<blocks(C), 128>>>(md.g.wte, md.g.wpe, md.dres, md.tokens);
}

}  // namespace

int main() {
  Generator gen{20241125u};
  Model md;
  allocate(md);
  std::vector<float> init = initial_params(gen);
  CHECK(cudaMemcpy(md.params, init.data(), init.size() * sizeof(float), cudaMemcpyHostToDevice));
  int tokens[N], targets[N];
  for (int n = 0; n < N; ++n) tokens[n] = (int)(gen.next() % V);
  for (int n = 0; n < N; ++n) targets[n] = (int)(gen.next() % V);
  CHECK(cudaMemcpy(md.tokens, tokens, sizeof tokens, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(md.targets, targets, sizeof targets, cudaMemcpyHostToDevice));
  CUBLAS(cublasCreate(&handle));

  float losses[STEPS];
  for (int step = 0; step < STEPS; ++step) {
    losses[step] = forward(md);
    backward(md);
    float corr1 = 1.0f - powf(BETA1, (float)(step + 1));
    float corr2 = 1.0f - powf(BETA2, (float)(step + 1));
    adamw<<<blocks(md.nparams), 128>>>(md.params, md.grads, md.m, md.v, md.nparams, corr1,
                                       corr2);
    CHECK(cudaGetLastError());
    fprintf(stderr, "step %d loss %.9g\n", step, losses[step]);
  }
  CHECK(cudaDeviceSynchronize());
  CUBLAS(cublasDestroy(handle));

  bool finite = true;
  for (float x : losses) finite = finite && std::isfinite(x);
  printf("%d steps of a %d-layer GPT (vocab %d, T %d, C %d, %d heads, B %d)\n", STEPS, L, V, T,
         C, NH, B);
  require(finite, "every loss is finite");
  require(losses[STEPS - 1] < losses[0], "training lowered the loss");
  printf("losses finite and falling: %s\n", finite && losses[STEPS - 1] < losses[0] ? "yes" : "no");
  if (g_failures) {
    printf("FAIL\n");
    return 1;
  }
  printf("PASS\n");
  return 0;
}
