// Rung 02 — global-memory coalescing: the same arithmetic as rung 01, but threadIdx walks the COLUMNS of C.
// A warp now reads one element of A (a broadcast), 32 consecutive floats of B (one 128-byte line) and writes
// 32 consecutive floats of C: each load instruction touches 1 line instead of 32.
#include "common.cuh"
#include "launchers.h"

namespace {
constexpr int kTile = 32;  // a block computes a 32x32 tile of C with 1024 threads

__global__ void __launch_bounds__(kTile * kTile)
    sgemm_coalesce_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                          float* __restrict__ C) {
  const int m = blockIdx.y * kTile + threadIdx.x / kTile;
  const int n = blockIdx.x * kTile + threadIdx.x % kTile;  // consecutive threads -> consecutive columns
  sgemm::dot_one_element(M, N, K, A, B, C, m, n);
}
}  // namespace

SGEMM_LAUNCHER(sgemm_02_gmem_coalesce) {
  sgemm::launch_tiles(sgemm_coalesce_kernel, kTile, kTile, kTile * kTile, 0, M, N, K, A, B, C, stream);
}
