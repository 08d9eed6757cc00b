// Rung 11: a grid of whole rounds.
//
// Rung 10 launches every resident CTA: 132 at 8192^3, i.e. 66 clusters for 1024 cluster units, so 32 clusters
// run 16 units and 34 run 15, and the kernel's time is 16 units anyway. 64 clusters also finish in 16 rounds,
// every one of them busy to the end, with 4 SMs left dark: the same critical path with less of the board's
// power spent on SMs that idle through the last round, and four fewer streams competing for L2 and HBM. The
// grid is the fewest clusters that keep the round count (at 4096^3: 256 units, 4 rounds, 64 clusters too);
// everything else is rung 10.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung11_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/2, /*GROUP_M=*/16, /*TMA_STORE=*/true, /*STAGES=*/3, /*B_SOURCE=*/OWN_B,
                         /*PIPE_MMAS=*/1, /*WHOLE_ROUNDS=*/true>>(A, B, C, M, N, K, stream);
}
