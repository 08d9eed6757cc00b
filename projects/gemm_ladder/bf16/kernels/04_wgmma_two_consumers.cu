// Rung 04: a 128 x 256 tile shared by two math warpgroups, fed by a 4-stage TMA ring with full/empty mbarriers.
//
// Bigger tiles halve the smem bytes loaded per FLOP (a 128 x 256 tile reads 384 rows of operands for 32768
// outputs, against 256 rows for 16384 with 128 x 128), and each warpgroup now issues m64n256k16, the largest
// wgmma. The ring keeps STAGES-1 tiles in flight: TMA for tile k+4 is issued as soon as every warp has
// released stage k's buffers (arrive on empty[s]). Not yet specialised: thread 0 is both a math thread and
// the producer, so its warpgroup stalls while it waits for the slower warpgroup to release a stage.
#include "common.cuh"
#include "wgmma_ops.cuh"

namespace bf16ladder::r04 {

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 256;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int CONSUMER_WARPS = THREADS / 32;
constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;

__device__ __forceinline__ void issue_stage(uint8_t* stage, uint64_t* full, const CUtensorMap* tA,
                                            const CUtensorMap* tB, int kt, int m0, int n0) {
  mbar_arrive_expect_tx(full, STAGE_BYTES);
  tma_load_2d(stage, tA, full, kt * BK, m0);
  tma_load_2d(stage + A_BYTES, tB, full, kt * BK, n0);
}

__global__ void __launch_bounds__(THREADS) kernel(const __grid_constant__ CUtensorMap tA,
                                                  const __grid_constant__ CUtensorMap tB, bf16* __restrict__ C,
                                                  int M, int N, int K) {
  extern __shared__ uint8_t raw[];
  uint8_t* stages = align1024(raw);
  uint64_t* full = reinterpret_cast<uint64_t*>(stages + STAGES * STAGE_BYTES);
  uint64_t* empty = full + STAGES;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int num_k = ceil_div(K, BK);

  init_ring_barriers<STAGES>(full, empty, CONSUMER_WARPS);  // every warp computes, so every warp releases
  if (threadIdx.x == 0)
    for (int s = 0; s < STAGES && s < num_k; ++s) issue_stage(stages + s * STAGE_BYTES, &full[s], &tA, &tB, s, m0, n0);

  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.f;

  for (int kt = 0; kt < num_k; ++kt) {
    const int s = kt % STAGES;
    const uint32_t phase = (kt / STAGES) & 1;
    uint8_t* sA = stages + s * STAGE_BYTES + wg * (64 * 128);  // this warpgroup's 64 rows of A
    uint8_t* sB = stages + s * STAGE_BYTES + A_BYTES;
    mbar_wait(&full[s], phase);
    __syncwarp();  // wgmma is .aligned: the warp must be converged after the polling loop
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < BK / 16; ++k) wgmma_m64n256k16(d, wgmma_desc(sA + k * 32), wgmma_desc(sB + k * 32), 1);
    wgmma_commit();
    wgmma_wait<0>();
    if (threadIdx.x % 32 == 0) mbar_arrive(&empty[s]);
    if (threadIdx.x == 0 && kt + STAGES < num_k) {
      mbar_wait(&empty[s], phase);  // both warpgroups are done with stage s (completion number kt / STAGES)
      issue_stage(stages + s * STAGE_BYTES, &full[s], &tA, &tB, kt + STAGES, m0, n0);
    }
  }
  store_acc_rowmajor<256>(d, C, M, N, m0 + 64 * wg, n0, tid);
}

}  // namespace bf16ladder::r04

BF16_LAUNCHER(bf16_rung04_launch) {
  using namespace bf16ladder;
  using namespace bf16ladder::r04;
  return launch_tma_tiles<kernel, BM, BN, BK, THREADS, SMEM>(A, B, C, M, N, K, stream);
}
