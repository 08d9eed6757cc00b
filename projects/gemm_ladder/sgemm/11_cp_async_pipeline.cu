// Rung 11 — cp.async multistage pipeline: rung 10's warp-tiled inner loop fed by asynchronous global ->
// shared copies, kStages K-tiles deep (cp_async.cuh). No register staging, so a deeper K-tile fits in the
// 128-register budget of 2 blocks per SM, and two tiles are in flight instead of one.
#include "cp_async.cuh"
#include "launchers.h"

namespace {
using Rung11 = sgemm::PipelineConfig<sgemm::WarpTileConfig<128, 128, 16, 64, 32, 8, 8, 2>, 3>;
}  // namespace

SGEMM_LAUNCHER(sgemm_11_cp_async_pipeline) { sgemm::launch_cp_async<Rung11>(M, N, K, A, B, C, stream); }
