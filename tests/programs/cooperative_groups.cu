// Cooperative groups (headers from the nvidia-cuda-cccl wheel): thread_block sync and ranks,
// tiled_partition into static tiles of 32, 16 and 4 with cg::reduce, tile shuffles and votes,
// a dynamic tiled_partition, and coalesced_threads() inside a divergent branch.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <algorithm>
#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

// out[tile index] = sum of its lanes' values, per tile size; also the block's total.
template <int TILE>
__global__ void tile_sums(const int *x, int *tile_out, int *block_out) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ int block_total;
  if (block.thread_rank() == 0) block_total = 0;
  block.sync();
  cg::thread_block_tile<TILE> tile = cg::tiled_partition<TILE>(block);
  int v = x[blockIdx.x * blockDim.x + block.thread_rank()];
  int sum = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) {
    tile_out[blockIdx.x * tile.meta_group_size() + tile.meta_group_rank()] = sum;
    atomicAdd(&block_total, sum);
  }
  block.sync();
  if (block.thread_rank() == 0) block_out[blockIdx.x] = block_total;
}

// Per 32-lane tile: max by cg::reduce, a rotation by shfl, and votes.
__global__ void tile_ops(const int *x, int *maxes, int *rotated, unsigned *ballots, int *votes) {
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  int m = cg::reduce(tile, v, cg::greater<int>());
  rotated[i] = tile.shfl(v, (tile.thread_rank() + 1) % 32);
  unsigned ballot = tile.ballot(v % 3 == 0);
  int any_big = tile.any(v > 90), all_positive = tile.all(v >= 0);
  if (tile.thread_rank() == 0) {
    int t = i / 32;
    maxes[t] = m;
    ballots[t] = ballot;
    votes[t] = any_big * 2 + all_positive;
  }
}

// The threads of each warp with an odd value form a coalesced group: each writes its rank in
// it and the group's size; a dynamic partition of the block into tiles of 8 sums ranks.
__global__ void coalesced(const int *x, int *rank, int *size, int *dyn_sums) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  rank[i] = -1;
  size[i] = 0;
  if (x[i] % 2) {
    cg::coalesced_group active = cg::coalesced_threads();
    rank[i] = active.thread_rank();
    size[i] = active.size();
  }
  cg::thread_group tile8 = cg::tiled_partition(cg::this_thread_block(), 8);
  int r = tile8.thread_rank();
  tile8.sync();
  if (r == 0) dyn_sums[i / 8] = tile8.size();
}

static std::vector<int> values(int n) {
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = (i * 37 + 11) % 101;
  return x;
}

template <int TILE> static void check_tile_sums(const int *d_x, const std::vector<int> &x) {
  const int block = 128, blocks = (int)x.size() / block, tiles = (int)x.size() / TILE;
  int *tile_out, *block_out;
  CHECK(cudaMallocManaged(&tile_out, tiles * sizeof(int)));
  CHECK(cudaMallocManaged(&block_out, blocks * sizeof(int)));
  tile_sums<TILE><<<blocks, block>>>(d_x, tile_out, block_out);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> want_tiles(tiles, 0), want_blocks(blocks, 0);
  for (size_t i = 0; i < x.size(); ++i) want_tiles[i / TILE] += x[i], want_blocks[i / block] += x[i];
  char label[64];
  snprintf(label, sizeof label, "cg::reduce over tiles of %d", TILE);
  expect_equal(label, tile_out, want_tiles.data(), tiles);
  snprintf(label, sizeof label, "block totals (tiles of %d)", TILE);
  expect_equal(label, block_out, want_blocks.data(), blocks);
  CHECK(cudaFree(tile_out));
  CHECK(cudaFree(block_out));
}

static void check_tile_ops(const int *d_x, const std::vector<int> &x) {
  const int n = (int)x.size(), warps = n / 32;
  int *maxes, *rotated, *votes;
  unsigned *ballots;
  CHECK(cudaMallocManaged(&maxes, warps * sizeof(int)));
  CHECK(cudaMallocManaged(&rotated, n * sizeof(int)));
  CHECK(cudaMallocManaged(&ballots, warps * sizeof(unsigned)));
  CHECK(cudaMallocManaged(&votes, warps * sizeof(int)));
  tile_ops<<<n / 64, 64>>>(d_x, maxes, rotated, ballots, votes);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> want_max(warps, 0), want_rot(n), want_votes(warps);
  std::vector<unsigned> want_ballots(warps, 0);
  for (int w = 0; w < warps; ++w) {
    bool any_big = false, all_positive = true;
    for (int l = 0; l < 32; ++l) {
      int v = x[w * 32 + l];
      want_max[w] = std::max(want_max[w], v);
      want_rot[w * 32 + l] = x[w * 32 + (l + 1) % 32];
      if (v % 3 == 0) want_ballots[w] |= 1u << l;
      any_big |= v > 90;
      all_positive &= v >= 0;
    }
    want_votes[w] = any_big * 2 + all_positive;
  }
  expect_equal("tile max by cg::reduce", maxes, want_max.data(), warps);
  expect_equal("tile.shfl rotation", rotated, want_rot.data(), n);
  expect_equal("tile.ballot", ballots, want_ballots.data(), warps);
  expect_equal("tile.any and tile.all", votes, want_votes.data(), warps);
  for (void *p : {(void *)maxes, (void *)rotated, (void *)ballots, (void *)votes})
    CHECK(cudaFree(p));
}

static void check_coalesced(const int *d_x, const std::vector<int> &x) {
  const int n = (int)x.size();
  int *rank, *size, *dyn;
  CHECK(cudaMallocManaged(&rank, n * sizeof(int)));
  CHECK(cudaMallocManaged(&size, n * sizeof(int)));
  CHECK(cudaMallocManaged(&dyn, n / 8 * sizeof(int)));
  coalesced<<<n / 128, 128>>>(d_x, rank, size, dyn);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> want_rank(n, -1), want_size(n, 0), want_dyn(n / 8, 8);
  for (int w = 0; w < n / 32; ++w) {
    int count = 0;
    for (int l = 0; l < 32; ++l) count += x[w * 32 + l] % 2;
    for (int l = 0, r = 0; l < 32; ++l)
      if (x[w * 32 + l] % 2) want_rank[w * 32 + l] = r++, want_size[w * 32 + l] = count;
  }
  expect_equal("coalesced_threads ranks", rank, want_rank.data(), n);
  expect_equal("coalesced_threads sizes", size, want_size.data(), n);
  expect_equal("dynamic tiled_partition(8) sizes", dyn, want_dyn.data(), n / 8);
  CHECK(cudaFree(rank));
  CHECK(cudaFree(size));
  CHECK(cudaFree(dyn));
}

int main() {
  const int n = 4096;
  std::vector<int> x = values(n);
  int *d_x;
  CHECK(cudaMalloc(&d_x, n * sizeof(int)));
  CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  check_tile_sums<32>(d_x, x);
  check_tile_sums<16>(d_x, x);
  check_tile_sums<4>(d_x, x);
  check_tile_ops(d_x, x);
  check_coalesced(d_x, x);
  CHECK(cudaFree(d_x));
  return finish();
}
