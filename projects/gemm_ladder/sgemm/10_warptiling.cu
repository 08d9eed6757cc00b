// Rung 10 — warp tiling: rung 09's tile (128x256x16, 8x16 per thread, one block of 256 per SM) with the
// thread -> output mapping of warptile.cuh: each warp owns a 64x64 sub-tile, its lanes an 8x4 grid of strided
// 8x16 thread tiles, so every LDS.128 of the inner loop is one shared-memory wavefront (A: 8 consecutive
// float4 broadcast over 4 lanes each, B: 4). Chosen as the fastest warp-tiled config of the sweep
// (sweep_warp.cu, evidence/2026-12-02-sgemm-sweep-4096.txt).
#include "launchers.h"
#include "warptile.cuh"

namespace {
using Rung10 = sgemm::WarpTileConfig<128, 256, 16, 64, 64, 8, 16, 1>;
}  // namespace

SGEMM_LAUNCHER(sgemm_10_warptiling) { sgemm::launch_double_buffer<Rung10>(M, N, K, A, B, C, stream); }
