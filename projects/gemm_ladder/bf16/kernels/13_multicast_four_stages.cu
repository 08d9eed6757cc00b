// Rung 13: rung 12 with a fourth ring stage in place of the C staging buffer.
//
// The TMA-store epilogue of rungs 09-12 holds 64 KiB of shared memory for C, which leaves room for three
// 48 KiB ring stages. Rung 07 (four stages, register -> global stores) ran ahead of rung 10 (three stages,
// TMA stores) at 8192^3: with multicast, a stage waits on both CTAs of the pair, so a deeper ring has more
// slack to absorb the pair drifting apart. Here the consumers store C straight from registers again and
// the ring is four deep; multicast, grid and tile order are rung 12's.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung13_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/2, /*GROUP_M=*/16, /*TMA_STORE=*/false, /*STAGES=*/4,
                         /*B_SOURCE=*/ONE_ISSUER_B, /*PIPE_MMAS=*/1, /*WHOLE_ROUNDS=*/true>>(A, B, C, M, N, K, stream);
}
