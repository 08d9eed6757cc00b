// Rung 03: TMA loads + wgmma, one warpgroup, no pipelining.
//
// Hopper's two new engines. One thread asks the TMA unit to copy a whole 128 x 64 tile of A and of B into
// 128B-swizzled smem (one instruction each; completion is counted in bytes on an mbarrier), then the
// warpgroup's 128 threads issue wgmma m64n128k16, which reads both operands straight from smem: no ldmatrix,
// no register staging. But load and math still alternate: the tensor cores idle during every TMA round
// trip, and one warpgroup per 128 x 128 tile keeps at most one wgmma chain in flight per SM sub-partition.
#include "common.cuh"
#include "wgmma_ops.cuh"

namespace bf16ladder::r03 {

constexpr int BM = 128, BN = 128, BK = 64, THREADS = 128;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
constexpr int SMEM = 1024 + A_BYTES + B_BYTES + 8;

__global__ void __launch_bounds__(THREADS) kernel(const __grid_constant__ CUtensorMap tA,
                                                  const __grid_constant__ CUtensorMap tB, bf16* __restrict__ C,
                                                  int M, int N, int K) {
  extern __shared__ uint8_t raw[];
  uint8_t* sA = align1024(raw);
  uint8_t* sB = sA + A_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(sB + B_BYTES);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x;
  if (tid == 0) {
    mbar_init(full, 1);
    fence_barrier_init();
  }
  __syncthreads();

  float d[2][64];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int i = 0; i < 64; ++i) d[m][i] = 0.f;

  const int num_k = ceil_div(K, BK);
  for (int kt = 0; kt < num_k; ++kt) {
    if (tid == 0) {
      mbar_arrive_expect_tx(full, A_BYTES + B_BYTES);
      tma_load_2d(sA, &tA, full, kt * BK, m0);
      tma_load_2d(sB, &tB, full, kt * BK, n0);
    }
    mbar_wait(full, kt & 1);
    __syncwarp();  // wgmma is .aligned: the warp must be converged after the polling loop
    wgmma_fence();
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int k = 0; k < BK / 16; ++k)
        wgmma_m64n128k16(d[m], wgmma_desc(sA + m * (64 * 128) + k * 32), wgmma_desc(sB + k * 32), 1);
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // all warps done reading smem before thread 0 refills it
  }
#pragma unroll
  for (int m = 0; m < 2; ++m) store_acc_rowmajor<128>(d[m], C, M, N, m0 + 64 * m, n0, tid);
}

}  // namespace bf16ladder::r03

BF16_LAUNCHER(bf16_rung03_launch) {
  using namespace bf16ladder;
  using namespace bf16ladder::r03;
  return launch_tma_tiles<kernel, BM, BN, BK, THREADS, SMEM>(A, B, C, M, N, K, stream);
}
