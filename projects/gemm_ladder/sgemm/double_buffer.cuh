// The double-buffered tiled SGEMM kernel of rung 08, templated on its tile sizes so that rung 09 can sweep
// them on the H200. One __syncthreads per K-tile: while the block computes on shared buffer `buf`, each
// thread holds the next tile's global loads in registers and stores them into buffer `buf ^ 1` afterwards.
//
// Tile geometry (all compile-time):
//   block tile BM x BN, K-tile BK; a thread computes TM x TN values made of (TM/4) x (TN/4) chunks of 4x4,
//   chunk (a, b) at rows row0 + a*kRowStride .. +3 and columns col0 + b*kColStride .. +3 of the block tile.
//   The config decides the thread -> (row0, col0) mapping: TileConfig is rung 07's strided thread tile over
//   the whole block; WarpTileConfig (warptile.cuh, rung 10) first gives each warp its own sub-tile.
//   As[buf][k][m] is A transposed, rows padded by 4 floats; Bs[buf][k][n].
#pragma once
#include "common.cuh"

namespace sgemm {

template <int BM_, int BN_, int BK_, int TM_, int TN_, int MinBlocks_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_, kMinBlocks = MinBlocks_;
  static constexpr int kThreads = (BM / TM) * (BN / TN);
  static constexpr int kLdA = BM + 4;                       // padded As row (floats)
  static constexpr int kRowStride = 4 * BM / TM, kColStride = 4 * BN / TN;
  // Thread (tr, tc) of a (BM/TM) x (BN/TN) grid: a warp spans 32/(BN/TN) values of tr.
  __device__ static int row0(int tid) { return tid / (BN / TN) * 4; }
  __device__ static int col0(int tid) { return tid % (BN / TN) * 4; }
  static constexpr int kLoadsA = BM * BK / 4 / kThreads;    // float4s of A each thread stages per tile
  static constexpr int kLoadsB = BK * BN / 4 / kThreads;
  static constexpr int kARowStep = kThreads / (BK / 4);     // rows between a thread's successive A float4s
  static constexpr int kBRowStep = kThreads / (BN / 4);
  static constexpr int kSmemBytes = 2 * (BK * kLdA + BK * BN) * static_cast<int>(sizeof(float));
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "4-wide chunks");
  static_assert(kLoadsA >= 1 && kLoadsA * kThreads * 4 == BM * BK, "A tile splits evenly into float4s");
  static_assert(kLoadsB >= 1 && kLoadsB * kThreads * 4 == BK * BN, "B tile splits evenly into float4s");
  static_assert(kThreads % (BK / 4) == 0 && kThreads % (BN / 4) == 0, "fixed row step between loads");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
};

// The epilogue of rung 08's kernel and rung 11's cp.async kernel: the float4 of accumulators at acc[i][j]
// (j % 4 == 0) belongs at C[m][n .. n+3], m = row0 + (i/4)*kRowStride + i%4, n = col0 + (j/4)*kColStride (row0,
// col0: the thread's first output in C); store(&C[m][n], &acc[i][j]) writes each one that lies inside C
// (N % 4 == 0: a float4 is wholly inside or wholly outside).
template <class Cfg, class Store>
__device__ __forceinline__ void store_outputs(const float (&acc)[Cfg::TM][Cfg::TN], float* C, int M, int N, int row0,
                                              int col0, Store store) {
#pragma unroll
  for (int i = 0; i < Cfg::TM; ++i) {
    const int m = row0 + (i / 4) * Cfg::kRowStride + i % 4;
#pragma unroll
    for (int j = 0; j < Cfg::TN; j += 4) {
      const int n = col0 + (j / 4) * Cfg::kColStride;
      if (m < M && n < N) store(&C[static_cast<size_t>(m) * N + n], &acc[i][j]);
    }
  }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    sgemm_double_buffer_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                         float* __restrict__ C) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN, kLdA = Cfg::kLdA;
  extern __shared__ __align__(16) float smem[];
  float* As = smem;                  // [2][BK][kLdA]
  float* Bs = smem + 2 * BK * kLdA;  // [2][BK][BN]

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x;
  const int row0 = Cfg::row0(tid), col0 = Cfg::col0(tid);
  const int a_row = tid / (BK / 4), a_col = tid % (BK / 4) * 4;  // first A float4 staged; then +kARowStep rows
  const int b_row = tid / (BN / 4), b_col = tid % (BN / 4) * 4;  // first B float4 staged; then +kBRowStep rows
  const bool b_col_in = n0 + b_col < N;
  const float* a_ptr = A + static_cast<size_t>(m0 + a_row) * K + a_col;  // dereferenced only when inside
  const float* b_ptr = B + static_cast<size_t>(b_row) * N + n0 + b_col;

  float4 a_stage[Cfg::kLoadsA], b_stage[Cfg::kLoadsB];
  auto load_tile = [&](int k0) {
#pragma unroll
    for (int i = 0; i < Cfg::kLoadsA; ++i)
      a_stage[i] = load4_or_zero(a_ptr + static_cast<size_t>(i * Cfg::kARowStep) * K + k0,
                                 m0 + a_row + i * Cfg::kARowStep < M && k0 + a_col < K);
#pragma unroll
    for (int i = 0; i < Cfg::kLoadsB; ++i)
      b_stage[i] = load4_or_zero(b_ptr + static_cast<size_t>(k0 + i * Cfg::kBRowStep) * N,
                                 b_col_in && k0 + b_row + i * Cfg::kBRowStep < K);
  };
  auto store_tile = [&](int buf) {
    float* as = As + buf * BK * kLdA;
    float* bs = Bs + buf * BK * BN;
#pragma unroll
    for (int i = 0; i < Cfg::kLoadsA; ++i) {
      const int r = a_row + i * Cfg::kARowStep;
      store4_transposed(as, kLdA, a_col, r, a_stage[i]);
    }
#pragma unroll
    for (int i = 0; i < Cfg::kLoadsB; ++i)
      *reinterpret_cast<float4*>(&bs[(b_row + i * Cfg::kBRowStep) * BN + b_col]) = b_stage[i];
  };

  float acc[TM][TN] = {};
  float a_frag[TM], b_frag[TN];
  load_tile(0);
  store_tile(0);
  __syncthreads();
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool has_next = k0 + BK < K;
    if (has_next) load_tile(k0 + BK);  // in flight while we compute
    const float* as = As + buf * BK * kLdA;
    const float* bs = Bs + buf * BK * BN;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int c = 0; c < TM / 4; ++c)
        *reinterpret_cast<float4*>(&a_frag[c * 4]) =
            *reinterpret_cast<const float4*>(&as[k * kLdA + row0 + c * Cfg::kRowStride]);
#pragma unroll
      for (int c = 0; c < TN / 4; ++c)
        *reinterpret_cast<float4*>(&b_frag[c * 4]) =
            *reinterpret_cast<const float4*>(&bs[k * BN + col0 + c * Cfg::kColStride]);
      outer_product(acc, a_frag, b_frag);
    }
    // Buffer buf^1 was last read in the previous iteration, which ended with a barrier: safe to overwrite.
    if (has_next) store_tile(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
  store_outputs<Cfg>(acc, C, M, N, m0 + row0, n0 + col0, [](float* c, const float* v) { store4(c, v); });
}

template <class Cfg>
void launch_double_buffer(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  launch_tiles(sgemm_double_buffer_kernel<Cfg>, Cfg::BM, Cfg::BN, Cfg::kThreads, Cfg::kSmemBytes, M, N, K, A, B, C,
               stream);
}

}  // namespace sgemm
