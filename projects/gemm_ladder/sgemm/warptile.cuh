// Rung 10's thread -> output mapping: warp tiling. The block tile BM x BN is cut into warp tiles WM x WN; the
// 32 lanes of a warp form a (WM/TM) x (WN/TN) grid inside their warp tile, each lane owning (TM/4) x (TN/4)
// chunks of 4x4 spaced 4*(WM/TM) rows and 4*(WN/TN) columns apart. For 64x32 warp tiles of 8x8 per lane
// (lanes 8 x 4), one LDS.128 of A reads 8 consecutive float4 (128 bytes) and one of B reads 4 (64 bytes):
// each is a single shared-memory wavefront, against 1 and 2 for rung 07's block-wide mapping, and a warp's
// 2048 outputs form one 64x32 rectangle (fewer distinct shared-memory rows per warp).
#pragma once
#include "double_buffer.cuh"

namespace sgemm {

template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, int MinBlocks_>
struct WarpTileConfig : TileConfig<BM_, BN_, BK_, TM_, TN_, MinBlocks_> {
  static constexpr int WM = WM_, WN = WN_;
  static constexpr int kLanesM = WM / TM_, kLanesN = WN / TN_;  // lane grid inside a warp tile
  static constexpr int kWarpsN = BN_ / WN;
  static constexpr int kRowStride = 4 * kLanesM, kColStride = 4 * kLanesN;
  static_assert(kLanesM * kLanesN == 32, "a warp tile is covered by exactly 32 lanes");
  static_assert(BM_ % WM == 0 && BN_ % WN == 0, "block tile splits into warp tiles");
  static_assert((BM_ / WM) * kWarpsN * 32 == TileConfig<BM_, BN_, BK_, TM_, TN_, MinBlocks_>::kThreads,
                "one warp per warp tile");
  __device__ static int row0(int tid) {
    const int warp = tid / 32, lane = tid % 32;
    return warp / kWarpsN * WM + lane / kLanesN * 4;
  }
  __device__ static int col0(int tid) {
    const int warp = tid / 32, lane = tid % 32;
    return warp % kWarpsN * WN + lane % kLanesN * 4;
  }
};

}  // namespace sgemm
