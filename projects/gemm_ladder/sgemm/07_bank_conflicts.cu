// Rung 07 — shared-memory bank conflicts removed, two ways:
//  * As rows are padded by 4 floats (kBM + 4): the transposing store of a warp (16 rows x 2 k-offsets 4 apart)
//    then lands the two k-offsets 16 banks apart instead of in the same bank.
//  * A thread's 8x8 tile is split into 2x2 chunks of 4x4 that sit 64 rows / 64 columns apart (a "strided"
//    thread tile), so the 16 threads of a warp that read different B chunks read 16 CONSECUTIVE float4
//    (256 bytes, the minimum 2 wavefronts) rather than 16 float4 at a 32-byte stride (4 wavefronts).
// Same tile sizes, same loads and same FLOPs as rung 06: the difference is shared-memory wavefronts only.
#include "common.cuh"
#include "launchers.h"

namespace {
constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kPadA = 4;                             // floats; keeps float4 alignment (132 * 4 B = 33 * 16 B)
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
constexpr int kRowStride = kBM / (kTM / 4);          // 64: distance between a thread's two 4-row chunks
constexpr int kColStride = kBN / (kTN / 4);          // 64
static_assert(kBM * kBK / 4 == kThreads && kBK * kBN / 4 == kThreads, "one float4 of A and of B per thread");

__global__ void __launch_bounds__(kThreads)
    sgemm_bank_conflicts_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                                float* __restrict__ C) {
  __shared__ __align__(16) float As[kBK * (kBM + kPadA)];  // As[k][m], padded rows
  __shared__ __align__(16) float Bs[kBK * kBN];            // Bs[k][n]
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const int tid = threadIdx.x;
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  const int a_row = tid / (kBK / 4), a_col = tid % (kBK / 4) * 4;
  const int b_row = tid / (kBN / 4), b_col = tid % (kBN / 4) * 4;
  const bool a_row_in = m0 + a_row < M, b_col_in = n0 + b_col < N;
  const float* a_ptr = A + static_cast<size_t>(a_row_in ? m0 + a_row : 0) * K + a_col;
  const float* b_ptr = B + static_cast<size_t>(b_row) * N + (b_col_in ? n0 + b_col : 0);

  float acc[kTM][kTN] = {};
  float a_frag[kTM], b_frag[kTN];
  for (int k0 = 0; k0 < K; k0 += kBK) {
    const float4 a = sgemm::load4_or_zero(a_ptr + k0, a_row_in && k0 + a_col < K);
    sgemm::store4_transposed(As, kBM + kPadA, a_col, a_row, a);
    *reinterpret_cast<float4*>(&Bs[b_row * kBN + b_col]) =
        sgemm::load4_or_zero(b_ptr + static_cast<size_t>(k0) * N, b_col_in && k0 + b_row < K);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
#pragma unroll
      for (int c = 0; c < kTM / 4; ++c) sgemm::copy4(&a_frag[c * 4], &As[k * (kBM + kPadA) + c * kRowStride + tr * 4]);
#pragma unroll
      for (int c = 0; c < kTN / 4; ++c) sgemm::copy4(&b_frag[c * 4], &Bs[k * kBN + c * kColStride + tc * 4]);
      sgemm::outer_product(acc, a_frag, b_frag);
    }
    __syncthreads();
  }
  // acc[i][j] holds row (i/4)*kRowStride + tr*4 + i%4, column (j/4)*kColStride + tc*4 + j%4.
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int m = m0 + (i / 4) * kRowStride + tr * 4 + i % 4;
#pragma unroll
    for (int j = 0; j < kTN; j += 4) {
      const int n = n0 + (j / 4) * kColStride + tc * 4;
      if (m < M && n < N) sgemm::store4(&C[static_cast<size_t>(m) * N + n], &acc[i][j]);
    }
  }
}
}  // namespace

SGEMM_LAUNCHER(sgemm_07_bank_conflicts) {
  sgemm::launch_tiles(sgemm_bank_conflicts_kernel, kBM, kBN, kThreads, 0, M, N, K, A, B, C, stream);
}
