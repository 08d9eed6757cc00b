// Rung 04 — 1D block tiling: each thread computes a column of kTM = 8 results. The B value it reads from
// shared memory is reused 8 times from a register, so the inner loop does 8 FFMA per (1 + 8 broadcast) LDS
// instead of 1 FFMA per 2 LDS; a 64x64 block tile also halves global traffic per FLOP against rung 03.
#include "common.cuh"
#include "launchers.h"

namespace {
constexpr int kBM = 64, kBN = 64, kBK = 8, kTM = 8;
constexpr int kThreads = kBM * kBN / kTM;  // 512
static_assert(kThreads == kBM * kBK && kThreads == kBK * kBN, "one A and one B element per thread per tile");

__global__ void __launch_bounds__(kThreads)
    sgemm_blocktile_1d_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C) {
  __shared__ float As[kBM * kBK];  // As[m][k]
  __shared__ float Bs[kBK * kBN];  // Bs[k][n]
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const int tid = threadIdx.x;
  const int tx = tid % kBN, ty = tid / kBN;         // this thread: column tx, rows ty*kTM .. +kTM-1
  const int a_row = tid / kBK, a_col = tid % kBK;   // the A element it stages
  const int b_row = tid / kBN, b_col = tid % kBN;   // the B element it stages

  float acc[kTM] = {};
  for (int k0 = 0; k0 < K; k0 += kBK) {
    As[a_row * kBK + a_col] =
        (m0 + a_row < M && k0 + a_col < K) ? A[static_cast<size_t>(m0 + a_row) * K + k0 + a_col] : 0.f;
    Bs[b_row * kBN + b_col] =
        (k0 + b_row < K && n0 + b_col < N) ? B[static_cast<size_t>(k0 + b_row) * N + n0 + b_col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      const float b = Bs[k * kBN + tx];
#pragma unroll
      for (int i = 0; i < kTM; ++i) acc[i] += As[(ty * kTM + i) * kBK + k] * b;
    }
    __syncthreads();
  }
  const int n = n0 + tx;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int m = m0 + ty * kTM + i;
    if (m < M && n < N) C[static_cast<size_t>(m) * N + n] = acc[i];
  }
}
}  // namespace

SGEMM_LAUNCHER(sgemm_04_blocktile_1d) {
  sgemm::launch_tiles(sgemm_blocktile_1d_kernel, kBM, kBN, kThreads, 0, M, N, K, A, B, C, stream);
}
