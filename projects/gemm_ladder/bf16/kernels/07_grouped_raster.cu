// Rung 07: grouped tile order for L2 reuse.
//
// With 132 tiles in flight in row-major order at N = 8192 (32 tile columns), the SMs work on ~4 row panels of
// A and all 32 column panels of B at once: each K step pulls 4 x 16 KiB of A and 32 x 32 KiB of B into L2.
// Walking bands of 16 tile rows column by column instead, the tiles in flight share ~16 A panels and ~8 B
// panels (512 KiB per K step instead of 1088), so more operand reads hit L2 rather than HBM.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung07_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/1, /*GROUP_M=*/16, /*TMA_STORE=*/false, /*STAGES=*/4>>(A, B, C, M, N, K, stream);
}
