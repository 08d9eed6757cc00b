// Rung 11's kernel: a multistage cp.async pipeline (sm_80+ LDGSTS; still the simplest async copy on sm_90).
// Global -> shared copies bypass registers, so the block keeps kStages-1 K-tiles in flight with no staging
// registers (rung 08 holds one tile in registers), and one barrier per K-tile suffices:
//
//   prologue: issue tiles 0 .. S-2, one commit group each
//   tile t:   wait until group t has landed (cp.async.wait_group S-2), barrier,
//             issue tile t+S-1 into the stage tile t-1 used (everyone finished reading it: barrier), commit,
//             compute on stage t % S.
//
// A is still stored transposed (As[k][m], rows padded by 4 floats) for LDS.128 fragments, so A is copied
// 4 bytes at a time (a 16-byte copy cannot transpose); B is copied 16 bytes at a time. Out-of-range
// elements are zero-filled by the copy itself (src-size 0), which handles ragged tiles with no branches.
// The thread -> output mapping and the inner loop are rung 10's (Cfg is a WarpTileConfig).
//
// Split-K (rung 12): blockIdx.z takes the z-th of gridDim.z equal runs of K-tiles, and with kAtomic the
// epilogue adds its partial tile into C (zeroed by the launcher) with atomicAdd instead of storing it.
#pragma once
#include "warptile.cuh"

namespace sgemm {

__device__ __forceinline__ void cp_async_4(float* smem, const float* gmem, bool inside) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "r"(inside ? 4 : 0));
}
__device__ __forceinline__ void cp_async_16(float* smem, const float* gmem, bool inside) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending)); }

template <class Tile, int Stages_>
struct PipelineConfig : Tile {
  static constexpr int kStages = Stages_;
  static constexpr int kStageFloats = Tile::BK * Tile::kLdA + Tile::BK * Tile::BN;
  static constexpr int kSmemBytes = kStages * kStageFloats * static_cast<int>(sizeof(float));
  static constexpr int kCopiesA = Tile::BM * Tile::BK / Tile::kThreads;  // 4-byte copies of A per thread
  static constexpr int kARowStep4 = Tile::kThreads / Tile::BK;          // rows between them
  static_assert(kStages >= 2, "a pipeline needs two stages");
  static_assert(kCopiesA * Tile::kThreads == Tile::BM * Tile::BK && Tile::kThreads % Tile::BK == 0, "even A split");
};

template <class Cfg, bool kAtomic>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    sgemm_cp_async_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                          float* __restrict__ C) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, TM = Cfg::TM, TN = Cfg::TN, kLdA = Cfg::kLdA;
  constexpr int S = Cfg::kStages;
  extern __shared__ __align__(16) float smem[];  // stage s: As at s*kStageFloats, Bs right after it

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x;
  const int row0 = Cfg::row0(tid), col0 = Cfg::col0(tid);
  const int a_row = tid / BK, a_col = tid % BK;                  // first A element copied; then +kARowStep4 rows
  const int b_row = tid / (BN / 4), b_col = tid % (BN / 4) * 4;  // first B float4; then +kBRowStep rows
  const bool b_col_in = n0 + b_col < N;

  auto issue_tile = [&](int k0, int stage) {
    float* as = smem + stage * Cfg::kStageFloats;
    float* bs = as + BK * kLdA;
#pragma unroll
    for (int i = 0; i < Cfg::kCopiesA; ++i) {
      const int r = a_row + i * Cfg::kARowStep4;
      const bool inside = m0 + r < M && k0 + a_col < K;
      cp_async_4(&as[a_col * kLdA + r], inside ? A + static_cast<size_t>(m0 + r) * K + k0 + a_col : A, inside);
    }
#pragma unroll
    for (int i = 0; i < Cfg::kLoadsB; ++i) {
      const int r = b_row + i * Cfg::kBRowStep;
      const bool inside = b_col_in && k0 + r < K;
      cp_async_16(&bs[r * BN + b_col], inside ? B + static_cast<size_t>(k0 + r) * N + n0 + b_col : B, inside);
    }
  };

  // This block's K-tiles: [kt_begin, kt_begin + k_tiles) (all of them unless split-K).
  const int tiles_per_split = ceil_div(ceil_div(K, BK), gridDim.z);
  const int kt_begin = blockIdx.z * tiles_per_split;
  const int k_tiles = max(0, min(ceil_div(K, BK) - kt_begin, tiles_per_split));
  const int k_first = kt_begin * BK;
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < k_tiles) issue_tile(k_first + s * BK, s);
    cp_async_commit();  // empty groups keep the group count = tile index
  }

  float acc[TM][TN] = {};
  float a_frag[TM], b_frag[TN];
  for (int t = 0; t < k_tiles; ++t) {
    cp_async_wait<S - 2>();  // this thread's copies of tile t have landed ...
    __syncthreads();         // ... and everyone's; everyone also finished computing tile t-1
    if (t + S - 1 < k_tiles) issue_tile(k_first + (t + S - 1) * BK, (t + S - 1) % S);
    cp_async_commit();
    const float* as = smem + (t % S) * Cfg::kStageFloats;
    const float* bs = as + BK * kLdA;
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
  }
  cp_async_wait<0>();  // no copy may outlive the block (only empty groups remain, but be explicit)
  store_outputs<Cfg>(acc, C, M, N, m0 + row0, n0 + col0, [](float* c, const float* v) {
    if constexpr (kAtomic) {
#pragma unroll
      for (int q = 0; q < 4; ++q) atomicAdd(c + q, v[q]);
    } else {
      store4(c, v);
    }
  });
}

// One block per output tile, plain stores (rung 11).
template <class Cfg>
void launch_cp_async(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  launch_tiles(sgemm_cp_async_kernel<Cfg, false>, Cfg::BM, Cfg::BN, Cfg::kThreads, Cfg::kSmemBytes, M, N, K, A, B, C,
               stream);
}

// `splits` blocks per output tile, each adding its share of K into C, which is zeroed first (rung 12).
template <class Cfg>
void launch_cp_async_split_k(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream,
                             int splits) {
  allow_smem(sgemm_cp_async_kernel<Cfg, true>, Cfg::kSmemBytes);
  const dim3 grid(ceil_div(N, Cfg::BN), ceil_div(M, Cfg::BM), splits);
  cudaMemsetAsync(C, 0, sizeof(float) * static_cast<size_t>(M) * N, stream);
  sgemm_cp_async_kernel<Cfg, true><<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(M, N, K, A, B, C);
}

}  // namespace sgemm
