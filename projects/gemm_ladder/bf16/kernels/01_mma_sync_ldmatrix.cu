// Rung 01: mma.sync m16n8k16 + ldmatrix from 128B-swizzled shared memory, plain synchronous tile loads.
//
// The Ampere-style tensor-core GEMM: every thread copies 16-byte chunks global -> registers -> smem, the block
// syncs, and 8 warps run mma.sync on ldmatrix'd fragments. No overlap of loads with math: each K step pays
// the full global-memory latency, and on Hopper mma.sync itself reaches only part of the wgmma rate.
#include "mma_sync_tile.cuh"

namespace bf16ladder::mma_sync {

// Copies rows [row0, row0 + 128) x cols [k0, k0 + 64) of a row-major [rows][K] matrix into a swizzled smem
// tile, zero-filling rows >= rows and columns >= K (K % 8 == 0, so a 16-byte chunk is all-in or all-out).
__device__ __forceinline__ void load_tile_sync(uint8_t* s, const bf16* g, int rows, int K, int row0, int k0) {
#pragma unroll
  for (int i = 0; i < (BM * BK / 8) / THREADS; ++i) {
    const int id = threadIdx.x + i * THREADS;
    const int r = id / 8, c = id % 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (row0 + r < rows && k0 + 8 * c < K) v = *reinterpret_cast<const uint4*>(g + (size_t)(row0 + r) * K + k0 + 8 * c);
    *reinterpret_cast<uint4*>(s + swz128(r, c)) = v;
  }
}

__global__ void __launch_bounds__(THREADS) kernel01(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                                    bf16* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(1024) uint8_t smem[2 * TILE_BYTES];
  uint8_t* sA = smem;
  uint8_t* sB = smem + TILE_BYTES;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = warp / 4, warp_n = warp % 4;

  float acc[4][4][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tile_sync(sA, A, M, K, m0, k0);
    load_tile_sync(sB, B, N, K, n0, k0);
    __syncthreads();
    warp_mma_tile(acc, smem_u32(sA), smem_u32(sB), warp_m, warp_n, lane);
    __syncthreads();  // everyone is done reading before the next tile overwrites smem
  }
  store_tile(acc, C, M, N, m0, n0, warp_m, warp_n, lane);
}

}  // namespace bf16ladder::mma_sync

BF16_LAUNCHER(bf16_rung01_launch) {
  using namespace bf16ladder;
  using namespace bf16ladder::mma_sync;
  dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
  kernel01<<<grid, THREADS, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const bf16*>(A), static_cast<const bf16*>(B), static_cast<bf16*>(C), M, N, K);
  return (int)cudaGetLastError();
}
