// Rung 06 — vectorised memory access: 16-byte global loads (LDG.128) and stores, and A stored TRANSPOSED in
// shared memory (As[k][m]) so that a thread's 8 values of A for one k are contiguous: the 16 scalar LDS of
// rung 05 become 4 LDS.128 per 64 FFMA. Needs 16-byte aligned rows: N and K multiples of 4 (any M).
// Left for rung 07: the transposing store into As hits 2 lanes per bank, and the 8-wide contiguous thread
// tile makes a warp's B reads 32 bytes apart (2-way bank conflicts on every LDS.128 of B).
#include "common.cuh"
#include "launchers.h"

namespace {
constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
static_assert(kBM * kBK / 4 == kThreads && kBK * kBN / 4 == kThreads, "one float4 of A and of B per thread");

__global__ void __launch_bounds__(kThreads)
    sgemm_vectorize_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C) {
  __shared__ __align__(16) float As[kBK * kBM];  // As[k][m]: transposed
  __shared__ __align__(16) float Bs[kBK * kBN];  // Bs[k][n]
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const int tid = threadIdx.x;
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);   // rows tr*8 .. +7, columns tc*8 .. +7
  const int a_row = tid / (kBK / 4), a_col = tid % (kBK / 4) * 4;  // the float4 of A this thread stages
  const int b_row = tid / (kBN / 4), b_col = tid % (kBN / 4) * 4;  // the float4 of B
  const bool a_row_in = m0 + a_row < M, b_col_in = n0 + b_col < N;
  const float* a_ptr = A + static_cast<size_t>(a_row_in ? m0 + a_row : 0) * K + a_col;
  const float* b_ptr = B + static_cast<size_t>(b_row) * N + (b_col_in ? n0 + b_col : 0);

  float acc[kTM][kTN] = {};
  float a_frag[kTM], b_frag[kTN];
  for (int k0 = 0; k0 < K; k0 += kBK) {
    const float4 a = sgemm::load4_or_zero(a_ptr + k0, a_row_in && k0 + a_col < K);
    sgemm::store4_transposed(As, kBM, a_col, a_row, a);
    *reinterpret_cast<float4*>(&Bs[b_row * kBN + b_col]) =
        sgemm::load4_or_zero(b_ptr + static_cast<size_t>(k0) * N, b_col_in && k0 + b_row < K);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
#pragma unroll
      for (int i = 0; i < kTM; i += 4) sgemm::copy4(&a_frag[i], &As[k * kBM + tr * kTM + i]);
#pragma unroll
      for (int j = 0; j < kTN; j += 4) sgemm::copy4(&b_frag[j], &Bs[k * kBN + tc * kTN + j]);
      sgemm::outer_product(acc, a_frag, b_frag);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int m = m0 + tr * kTM + i;
#pragma unroll
    for (int j = 0; j < kTN; j += 4) {
      const int n = n0 + tc * kTN + j;  // N % 4 == 0: the float4 is wholly inside or wholly outside
      if (m < M && n < N) sgemm::store4(&C[static_cast<size_t>(m) * N + n], &acc[i][j]);
    }
  }
}
}  // namespace

SGEMM_LAUNCHER(sgemm_06_vectorize) {
  sgemm::launch_tiles(sgemm_vectorize_kernel, kBM, kBN, kThreads, 0, M, N, K, A, B, C, stream);
}
