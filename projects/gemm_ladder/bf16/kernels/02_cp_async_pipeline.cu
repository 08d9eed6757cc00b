// Rung 02: rung 01's warp math fed by a 4-stage cp.async pipeline.
//
// cp.async copies global -> smem without passing through registers and without blocking the thread, so
// the loads for K tiles k+1..k+3 are in flight while the warps run mma.sync on tile k. What remains is the
// mma.sync issue rate itself (one warp instruction per 16x8x16) and ldmatrix traffic through registers.
#include "mma_sync_tile.cuh"

namespace bf16ladder::mma_sync {

constexpr int STAGES = 4;
constexpr int STAGE_BYTES = 2 * TILE_BYTES;  // A tile + B tile

// 16-byte async copy; src_bytes = 0 writes zeros (rows past M/N, columns past K).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void load_tile_async(uint32_t s, const bf16* g, int rows, int K, int row0, int k0) {
#pragma unroll
  for (int i = 0; i < (BM * BK / 8) / THREADS; ++i) {
    const int id = threadIdx.x + i * THREADS;
    const int r = id / 8, c = id % 8;
    const bool in = row0 + r < rows && k0 + 8 * c < K;
    // Out-of-range chunks still issue (with 0 source bytes) from a safe address, so every thread commits
    // the same number of copies per group.
    const bf16* src = in ? g + (size_t)(row0 + r) * K + k0 + 8 * c : g;
    cp_async_16(s + swz128(r, c), src, in ? 16 : 0);
  }
}

__global__ void __launch_bounds__(THREADS) kernel02(const bf16* __restrict__ A, const bf16* __restrict__ B,
                                                    bf16* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t s0 = smem_u32(smem);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = warp / 4, warp_n = warp % 4;
  const int num_k = ceil_div(K, BK);

  // Prologue: stages 0..STAGES-2 in flight. A group is committed even when empty so that
  // "wait until at most STAGES-2 groups are pending" always means "tile k has landed".
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_k) {
      load_tile_async(s0 + s * STAGE_BYTES, A, M, K, m0, s * BK);
      load_tile_async(s0 + s * STAGE_BYTES + TILE_BYTES, B, N, K, n0, s * BK);
    }
    cp_async_commit();
  }

  float acc[4][4][4] = {};
  for (int kt = 0; kt < num_k; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt visible to all warps; everyone finished reading the stage refilled below
    const int pre = kt + STAGES - 1;
    if (pre < num_k) {
      const uint32_t st = s0 + (pre % STAGES) * STAGE_BYTES;
      load_tile_async(st, A, M, K, m0, pre * BK);
      load_tile_async(st + TILE_BYTES, B, N, K, n0, pre * BK);
    }
    cp_async_commit();
    const uint32_t cur = s0 + (kt % STAGES) * STAGE_BYTES;
    warp_mma_tile(acc, cur, cur + TILE_BYTES, warp_m, warp_n, lane);
  }
  cp_async_wait<0>();
  store_tile(acc, C, M, N, m0, n0, warp_m, warp_n, lane);
}

}  // namespace bf16ladder::mma_sync

BF16_LAUNCHER(bf16_rung02_launch) {
  using namespace bf16ladder;
  using namespace bf16ladder::mma_sync;
  constexpr int smem = STAGES * STAGE_BYTES;
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(kernel02, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return (int)e;
    configured = true;
  }
  dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
  kernel02<<<grid, THREADS, smem, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const bf16*>(A), static_cast<const bf16*>(B), static_cast<bf16*>(C), M, N, K);
  return (int)cudaGetLastError();
}
