// Rung 12 — split-K for grids that cannot fill the GPU. When the output has fewer 128x128 tiles than the H200
// has block slots (132 SMs x 2), K is cut into `splits` runs and each output tile is computed by `splits`
// blocks of the cp.async kernel (cp_async.cuh, 128x128 tiles, two blocks per SM) that atomically add their
// partial sums into a zeroed C. A 128x4096 output is 32 tiles: without split-K, 100 of 132 SMs sit idle
// whatever the kernel's speed. Grids that do fill the GPU go to rung 10's kernel unchanged.
#include "cp_async.cuh"
#include "launchers.h"

namespace {
using Rung12 = sgemm::PipelineConfig<sgemm::WarpTileConfig<128, 128, 16, 64, 32, 8, 8, 2>, 3>;
constexpr int kMinTilesPerSplit = 8;  // >= 128 of K per block: the pipeline prologue and atomics stay small
constexpr int kMaxSplits = 16;

int multiprocessors() {
  static const int count = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    return n;
  }();
  return count;
}
}  // namespace

int sgemm_12_splits(int M, int N, int K, int sms) {
  const int tiles = sgemm::ceil_div(M, Rung12::BM) * sgemm::ceil_div(N, Rung12::BN);
  const int slots = sms * Rung12::kMinBlocks;  // blocks resident at once
  if (tiles >= slots) return 1;
  const int by_k = sgemm::ceil_div(K, Rung12::BK) / kMinTilesPerSplit;
  // Round down: tiles * splits <= slots keeps all blocks in one wave (rounding up left a nearly empty second).
  const int wanted = slots / tiles;
  return wanted < by_k ? (wanted < kMaxSplits ? wanted : kMaxSplits) : (by_k > 1 ? by_k : 1);
}

SGEMM_LAUNCHER(sgemm_12_split_k) {
  const int splits = sgemm_12_splits(M, N, K, multiprocessors());
  if (splits == 1) {
    sgemm_10_warptiling(M, N, K, A, B, C, stream);  // big grids: the fastest whole-tile kernel
  } else {
    sgemm::launch_cp_async_split_k<Rung12>(M, N, K, A, B, C, stream, splits);
  }
}
