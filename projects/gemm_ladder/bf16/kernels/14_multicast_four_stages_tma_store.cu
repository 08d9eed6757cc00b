// Rung 14: rung 12's multicast and TMA-store epilogue with a four-stage ring.
//
// Rung 13 bought its fourth stage by going back to register -> global stores, and lost what it bought: the
// tensor pipe got busier, the kernel did not get faster, because both math warpgroups stall on scattered
// 4-byte stores at the end of every tile. Here the C staging shrinks instead: each consumer stages half of its
// 64 x 256 slab (two 64 x 64 boxes, 16 KiB), hands it to the TMA engine, waits until the engine has read it
// and stages the other half. 4 x 48 KiB of ring + 2 x 16 KiB of C fit in the 227 KiB a CTA may have.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung14_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/2, /*GROUP_M=*/16, /*TMA_STORE=*/true, /*STAGES=*/4,
                         /*B_SOURCE=*/ONE_ISSUER_B, /*PIPE_MMAS=*/1, /*WHOLE_ROUNDS=*/true, /*C_BOXES=*/2>>(
      A, B, C, M, N, K, stream);
}
