// Rung 08: 2-CTA clusters with TMA multicast of the shared B tile.
//
// Two CTAs on neighbouring SMs take tiles (2i, n) and (2i+1, n), which need the same 256 x 64 slice of B
// every K step. Each loads one half and multicasts it into both CTAs' shared memory, so L2 -> SM traffic for
// B halves. The price: a stage can only be refilled when the consumers of BOTH CTAs have released it
// (empty barriers count arrivals from the whole cluster), so a slow SM now slows its partner.
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung08_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/2, /*GROUP_M=*/8, /*TMA_STORE=*/false, /*STAGES=*/4>>(A, B, C, M, N, K, stream);
}
