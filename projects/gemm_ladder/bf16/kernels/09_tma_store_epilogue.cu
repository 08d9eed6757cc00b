// Rung 09: epilogue through shared memory and TMA stores.
//
// The register -> global epilogue writes each 128 x 256 tile as 4-byte stores scattered over 16 rows per
// warp instruction. Here each consumer writes its 64 x 256 slab to smem in the 128B-swizzled layout
// (conflict-free: the 8 rows of a warp store land in 8 different 16-byte bank groups) and one thread hands
// four 64 x 64 boxes to the TMA engine, which writes whole lines and clips ragged edges itself. The consumer
// moves on to the next tile's wgmmas while the store drains. The 64 KiB of C staging costs a ring stage
// (3 instead of 4).
#include "persistent.cuh"

BF16_LAUNCHER(bf16_rung09_launch) {
  using namespace bf16ladder::persistent;
  return launch<Features</*CLUSTER_M=*/2, /*GROUP_M=*/8, /*TMA_STORE=*/true, /*STAGES=*/3>>(A, B, C, M, N, K, stream);
}
