// Rung 03 — shared-memory tiling: a block stages a 32x32 tile of A and of B in shared memory, then every
// thread reads 32 values of each from there. Each element loaded from global memory is reused 32 times, so
// global traffic drops 32x; the inner loop is now bound by shared-memory loads (2 LDS per FFMA).
#include "common.cuh"
#include "launchers.h"

namespace {
constexpr int kTile = 32;

__global__ void __launch_bounds__(kTile * kTile)
    sgemm_smem_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C) {
  __shared__ float As[kTile][kTile];  // As[m][k]
  __shared__ float Bs[kTile][kTile];  // Bs[k][n]
  const int ty = threadIdx.x / kTile, tx = threadIdx.x % kTile;
  const int m = blockIdx.y * kTile + ty;
  const int n = blockIdx.x * kTile + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    // Zero-fill outside the matrix so ragged edges add nothing.
    As[ty][tx] = (m < M && k0 + tx < K) ? A[static_cast<size_t>(m) * K + k0 + tx] : 0.f;
    Bs[ty][tx] = (k0 + ty < K && n < N) ? B[static_cast<size_t>(k0 + ty) * N + n] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];  // As: broadcast, Bs: 32 banks
    __syncthreads();  // before the next tile overwrites what slower warps still read
  }
  if (m < M && n < N) C[static_cast<size_t>(m) * N + n] = acc;
}
}  // namespace

SGEMM_LAUNCHER(sgemm_03_smem_tiling) {
  sgemm::launch_tiles(sgemm_smem_kernel, kTile, kTile, kTile * kTile, 0, M, N, K, A, B, C, stream);
}
