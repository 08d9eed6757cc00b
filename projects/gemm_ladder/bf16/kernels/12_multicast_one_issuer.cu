// Rung 12: TMA multicast of B again, from one issuer.
//
// Rung 08 split the shared 256 x 64 B slice: each CTA of the pair loaded one half and multicast it into both,
// so every stage of every CTA waited for both producers, and each consumer warp signalled both CTAs through a
// cluster-scope release. It ran at two thirds of the unclustered kernel (ncu: tensor pipe half busy). Here
// the even CTA loads the whole slice and multicasts it; the odd CTA loads only its A. The odd CTA's stages
// are freed by its own consumers (for its own A load) and, with a plain remote arrive, tell the even CTA's
// producer when its B copy may be overwritten; the even CTA's producer waits for both CTAs' consumers. L2 ->
// SM traffic for B halves, as in rung 08. Grid and epilogue as in rung 11.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung12_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/2, /*GROUP_M=*/16, /*TMA_STORE=*/true, /*STAGES=*/3,
                         /*B_SOURCE=*/ONE_ISSUER_B, /*PIPE_MMAS=*/1, /*WHOLE_ROUNDS=*/true>>(A, B, C, M, N, K, stream);
}
