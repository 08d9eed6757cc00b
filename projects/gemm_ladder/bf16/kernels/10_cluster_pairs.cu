// Rung 10: 2-CTA clusters WITHOUT multicast, TMA-store epilogue, bands of 16 cluster rows.
//
// The probe sweep of session 2 (probe.txt, 8192^3) found that the clusters were never the problem in rungs
// 08-09: the occupancy API reports 132 resident CTAs for them, and the same kernel with multicast switched off
// ran at rung 07's speed or above, while every multicast variant ran at about two thirds of it. Here each CTA
// loads its own A and B slices; the cluster only guarantees that the two vertically adjacent tiles sharing a
// B slice run at the same moment on one GPC, so the second CTA's B loads find the lines the first one just
// pulled into L2. No cross-CTA barrier: each CTA releases its own ring stages, as in rung 07.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung10_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/2, /*GROUP_M=*/16, /*TMA_STORE=*/true, /*STAGES=*/3, /*B_SOURCE=*/OWN_B>>(
      A, B, C, M, N, K, stream);
}
