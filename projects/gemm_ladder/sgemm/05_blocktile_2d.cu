// Rung 05 — 2D block tiling: each thread computes an 8x8 tile of C from 8 values of A and 8 of B held in
// registers: 64 FFMA per 16 shared-memory loads (rung 04: 8 per 9). A 128x128 block tile halves global
// traffic per FLOP again. Loads are still scalar and As is stored [m][k], so reading a column of it is
// 8 separate LDS.32.
#include "common.cuh"
#include "launchers.h"

namespace {
constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
constexpr int kLoadsA = kBM * kBK / kThreads;        // 4 A elements staged per thread per tile
constexpr int kLoadsB = kBK * kBN / kThreads;        // 4 B elements
static_assert(kLoadsA * kThreads == kBM * kBK && kLoadsB * kThreads == kBK * kBN, "tiles split evenly");

__global__ void __launch_bounds__(kThreads)
    sgemm_blocktile_2d_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C) {
  __shared__ float As[kBM * kBK];  // As[m][k]
  __shared__ float Bs[kBK * kBN];  // Bs[k][n]
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const int tid = threadIdx.x;
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);  // rows tr*8.., columns tc*8..

  float acc[kTM][kTN] = {};
  float a_frag[kTM], b_frag[kTN];
  for (int k0 = 0; k0 < K; k0 += kBK) {
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      const int idx = tid + i * kThreads, r = idx / kBK, c = idx % kBK;
      As[idx] = (m0 + r < M && k0 + c < K) ? A[static_cast<size_t>(m0 + r) * K + k0 + c] : 0.f;
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      const int idx = tid + i * kThreads, r = idx / kBN, c = idx % kBN;
      Bs[idx] = (k0 + r < K && n0 + c < N) ? B[static_cast<size_t>(k0 + r) * N + n0 + c] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
#pragma unroll
      for (int i = 0; i < kTM; ++i) a_frag[i] = As[(tr * kTM + i) * kBK + k];
#pragma unroll
      for (int j = 0; j < kTN; ++j) b_frag[j] = Bs[k * kBN + tc * kTN + j];
      sgemm::outer_product(acc, a_frag, b_frag);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int m = m0 + tr * kTM + i;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int n = n0 + tc * kTN + j;
      if (m < M && n < N) C[static_cast<size_t>(m) * N + n] = acc[i][j];
    }
  }
}
}  // namespace

SGEMM_LAUNCHER(sgemm_05_blocktile_2d) {
  sgemm::launch_tiles(sgemm_blocktile_2d_kernel, kBM, kBN, kThreads, 0, M, N, K, A, B, C, stream);
}
