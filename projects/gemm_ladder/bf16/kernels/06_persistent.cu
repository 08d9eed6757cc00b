// Rung 06: persistent kernel with a static tile scheduler.
//
// Rung 05 launches one CTA per tile: each CTA fills its pipeline from empty, and its epilogue (128 x 256
// stores) runs while the tensor cores of that SM sit idle. Here one CTA per SM loops over tiles
// (u = blockIdx.x, + gridDim.x, ...) and the producer's ring runs on across tile boundaries, so the next
// tile's loads overlap this tile's epilogue, and there is no tail of partly-filled launch waves.
// Tiles are walked in plain row-major order.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung06_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/1, /*GROUP_M=*/0, /*TMA_STORE=*/false, /*STAGES=*/4>>(A, B, C, M, N, K, stream);
}
