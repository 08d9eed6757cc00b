// Rung 15: rung 14 with a stream-K last round.
//
// Rung 14 covers 8192^3's 1024 cluster units with 64 clusters in 16 whole rounds and leaves 4 of the 132 SMs
// dark (ncu: SMs active 95.4% of the elapsed cycles, cuBLAS 96.3%); 66 clusters cannot do fewer than 16
// rounds of whole units either (1024 / 66 = 15.5). Here the grid is every resident cluster again, and the units
// that would make up the last, partial round (plus one round before them) are split along K: every cluster
// runs a contiguous range of their k-iterations, so all 66 finish after ceil(1024 * 128 / 66) = 1986
// k-iterations instead of 2048. A unit cut between two clusters is stored by the one holding k = 0, after it
// adds the other's partial sums from a workspace in global memory (stream_k.cuh, stream_k_fixup.cuh).
// Everything else is rung 14's: pairs with B multicast from the even CTA, four stages, TMA stores of half slabs.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung15_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/2, /*GROUP_M=*/16, /*TMA_STORE=*/true, /*STAGES=*/4,
                         /*B_SOURCE=*/ONE_ISSUER_B, /*PIPE_MMAS=*/1, /*WHOLE_ROUNDS=*/false, /*C_BOXES=*/2,
                         /*STREAM_K=*/true>>(A, B, C, M, N, K, stream);
}
