// Rung 11 — cp.async multistage pipeline: rung 10's tile and warp-tiled inner loop fed by asynchronous
// global -> shared copies, three K-tiles deep (cp_async.cuh), no register staging. The fastest cp.async config
// of the sweep (sweep_cp_async.cu) — and still slower than rung 10 on the H200 (evidence/2026-12-02-sgemm-sweep-4096.txt):
// the transposed A can only be copied 4 bytes at a time, so a K-tile costs 8 LDGSTS.32 per thread where
// rung 10 issues 2 LDG.128 + 8 STS.32 from registers it has to spare at one block per SM.
#include "cp_async.cuh"
#include "launchers.h"

namespace {
using Rung11 = sgemm::PipelineConfig<sgemm::WarpTileConfig<128, 256, 16, 64, 64, 8, 16, 1>, 3>;
}  // namespace

SGEMM_LAUNCHER(sgemm_11_cp_async_pipeline) { sgemm::launch_cp_async<Rung11>(M, N, K, A, B, C, stream); }
