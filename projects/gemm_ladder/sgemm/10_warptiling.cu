// Rung 10 — warp tiling: rung 09's double-buffered kernel with the thread -> output mapping of warptile.cuh.
// Each warp owns a 64x32 sub-tile of the block and its lanes a strided 8x8 inside it, so every LDS.128 of
// the inner loop is one shared-memory wavefront (broadcasts within the warp) and a warp's A and B rows are
// few and contiguous.
#include "launchers.h"
#include "warptile.cuh"

namespace {
using Rung10 = sgemm::WarpTileConfig<128, 128, 16, 64, 32, 8, 8, 2>;
}  // namespace

SGEMM_LAUNCHER(sgemm_10_warptiling) { sgemm::launch_double_buffer<Rung10>(M, N, K, A, B, C, stream); }
