// Rung 09 — tile sizes tuned for the H200: rung 08's kernel, re-instantiated with the block tile, K-tile and
// thread tile that won the block-mapping family of the sweep (sweep_block.cu) at 4096^3
// (evidence/sweep_4096.txt). Hopper has 228 KB of shared memory and 64K registers per SM, so bigger tiles
// than an A6000 favours fit; the sweep measures, rather than guesses, where the FFMA pipes stop waiting.
#include "double_buffer.cuh"
#include "launchers.h"

namespace {
// Round-1 choice before any H200 timing (a guess, replaced by the sweep winner): a 128x256 tile with 8x16
// per thread, one 256-thread block per SM, the largest tile that fits 255 registers without spilling.
using Rung09 = sgemm::TileConfig<128, 256, 8, 8, 16, 1>;
}  // namespace

SGEMM_LAUNCHER(sgemm_09_autotuned_sm90) { sgemm::launch_double_buffer<Rung09>(M, N, K, A, B, C, stream); }
