// Rung 08 — double buffering: rung 07's tile (128x128x8, 8x8 per thread, 256 threads) with two shared-memory
// buffers. The global loads of tile t+1 are issued before the FFMAs of tile t and land in registers, so their
// latency hides behind 8 k-steps of math, and one barrier per tile replaces two. The kernel lives in
// double_buffer.cuh because rung 09 re-tunes the same kernel's tile sizes.
#include "double_buffer.cuh"
#include "launchers.h"

namespace {
// 128 registers per thread at most (2 blocks of 256 threads per SM): 64 accumulators + 16 fragments + staging.
using Rung08 = sgemm::TileConfig<128, 128, 8, 8, 8, 2>;
}  // namespace

SGEMM_LAUNCHER(sgemm_08_double_buffer) { sgemm::launch_double_buffer<Rung08>(M, N, K, A, B, C, stream); }
