// Rung 05: warp specialisation: a producer warpgroup that only issues TMA, two consumer warpgroups that only
// issue wgmma, with setmaxnreg moving registers from the first to the others.
//
// In rung 04 the thread that refills the ring also computes, so a late warpgroup stalls the issue of loads.
// Here warpgroup 0 owns the loads: one thread waits on empty[s] and refills stage s, while warpgroups 1 and 2
// wait on full[s] and run 4 x m64n256k16 each. The producer needs almost no registers (setmaxnreg.dec to 40);
// consumers take them (setmaxnreg.inc to 232) for the 128 fp32 accumulators plus addressing.
// Consumers also keep one wgmma batch in flight: they wait for batch k-1 (wait_group 1), release its stage,
// and only then block, so the tensor cores always have the next 4 wgmmas queued.
#include "common.cuh"
#include "wgmma_ops.cuh"

namespace bf16ladder::r05 {

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4;
constexpr int CONSUMERS = 2, THREADS = 128 * (1 + CONSUMERS);
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;

// __launch_bounds__(..., 1) gives the kernel a register cap at entry (65536 / 384 = 170), which setmaxnreg needs.
__global__ void __launch_bounds__(THREADS, 1) kernel(const __grid_constant__ CUtensorMap tA,
                                                     const __grid_constant__ CUtensorMap tB, bf16* __restrict__ C,
                                                     int M, int N, int K) {
  extern __shared__ uint8_t raw[];
  uint8_t* stages = align1024(raw);
  uint64_t* full = reinterpret_cast<uint64_t*>(stages + STAGES * STAGE_BYTES);
  uint64_t* empty = full + STAGES;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int num_k = ceil_div(K, BK);

  init_ring_barriers<STAGES>(full, empty, CONSUMERS * 4);  // lane 0 of each consumer warp

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      for (int kt = 0; kt < num_k; ++kt) {
        const int s = kt % STAGES;
        // Stage s was last used by tile kt - STAGES, released in completion number kt/STAGES - 1 of empty[s];
        // on the first lap the parity-1 wait returns at once.
        mbar_wait(&empty[s], ((kt / STAGES) & 1) ^ 1);
        uint8_t* st = stages + s * STAGE_BYTES;
        mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
        tma_load_2d(st, &tA, &full[s], kt * BK, m0);
        tma_load_2d(st + A_BYTES, &tB, &full[s], kt * BK, n0);
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int cw = wg - 1;  // consumer index: rows [64 * cw, 64 * cw + 64) of the tile
    // No zero-fill of d: the tile's first wgmma runs with scale_d = 0 (D = A*B). Writing d with ordinary
    // instructions would also make ptxas serialise the wgmma pipeline (it cannot prove the writes finished).
    float d[128];
    for (int kt = 0; kt < num_k; ++kt) {
      const int s = kt % STAGES;
      mbar_wait(&full[s], (kt / STAGES) & 1);
      __syncwarp();
      uint8_t* sA = stages + s * STAGE_BYTES + cw * (64 * 128);
      uint8_t* sB = stages + s * STAGE_BYTES + A_BYTES;
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < BK / 16; ++k) wgmma_m64n256k16(d, wgmma_desc(sA + k * 32), wgmma_desc(sB + k * 32), (kt > 0 || k > 0) ? 1 : 0);
      wgmma_commit();
      wgmma_wait<1>();  // batch kt-1 has finished reading its stage
      if (kt > 0 && tid % 32 == 0) mbar_arrive(&empty[(kt - 1) % STAGES]);
    }
    wgmma_wait<0>();
    // (the last stage is never released: nothing waits for it)
    store_acc_rowmajor<256>(d, C, M, N, m0 + 64 * cw, n0, tid);
  }
}

}  // namespace bf16ladder::r05

BF16_LAUNCHER(bf16_rung05_launch) {
  using namespace bf16ladder;
  using namespace bf16ladder::r05;
  return launch_tma_tiles<kernel, BM, BN, BK, THREADS, SMEM>(A, B, C, M, N, K, stream);
}
