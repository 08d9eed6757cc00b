// Rung 09 — tile sizes tuned for the H200: rung 08's kernel (block-wide strided thread mapping, register-staged
// double buffering), re-instantiated with the block tile, K-tile and thread tile that won the block-mapping
// family of the sweep (sweep_block.cu) at 4096^3 (evidence/2026-12-02-sgemm-sweep-4096.txt): 128x256 per block, BK 16, 8x16
// per thread, one 256-thread block per SM. 128 accumulators and 235 registers per thread: per k-step a thread
// does 128 FFMA for 6 LDS.128 (rung 08: 64 for 4), and per block tile 1.33x fewer global bytes per FLOP.
#include "double_buffer.cuh"
#include "launchers.h"

namespace {
using Rung09 = sgemm::TileConfig<128, 256, 16, 8, 16, 1>;
}  // namespace

SGEMM_LAUNCHER(sgemm_09_autotuned_sm90) { sgemm::launch_double_buffer<Rung09>(M, N, K, A, B, C, stream); }
