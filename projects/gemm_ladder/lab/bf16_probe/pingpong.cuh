// Ping-pong variant of the persistent kernel (probe only, not a rung): the two consumer warpgroups work on
// DIFFERENT 128 x 128 output tiles and take turns on the tensor cores, so one runs its mainloop while the other
// runs its epilogue (the schedule of CUTLASS's KernelTmaWarpSpecializedPingpong). In ../../bf16/kernels/
// persistent.cuh both consumers share one 128 x 256 tile, so both stop issuing wgmma during every epilogue.
//
// Tile and smem: a consumer owns a whole 128 x 128 tile, two m64n128k16 per 16-wide K step (rows 0-63 and
// 64-127 of the A stage against the same B stage), 2 x 64 fp32 accumulators per thread. A ring stage is A
// 128 x 64 + B 128 x 64 = 32 KiB. With the TMA-store epilogue each consumer has its own 32 KiB C staging
// (four 64 x 64 swizzled boxes, the layout of persistent.cuh's), so 5 stages fit: 1 KiB alignment slack +
// 5 x 32 KiB + 2 x 32 KiB + barriers = 230,496 B of the 232,448 a CTA may have.
//
// Roles (384 threads, one CTA per SM, grid = min(SMs, tiles)):
//   warpgroup 0  producer (setmaxnreg.dec 40): one thread walks the CTA's tiles u = blockIdx.x + t * gridDim.x,
//                t = 0, 1, 2, ..., in grouped-raster order (bands of 16 tile rows, rung 07's), and fills ONE ring
//                with their K slices in that order: slice kt of the CTA's t-th tile is ring iteration
//                it = t * num_k + kt, stage it % STAGES, use it / STAGES of that stage.
//   warpgroups 1, 2  consumers c = 0, 1 (setmaxnreg.inc 232): consumer c takes the CTA's tiles t = c, c + 2, ...
//                Its j-th tile is t = 2j + c, so it reads exactly the ring iterations the producer wrote for t.
//
// Barrier protocol (all mbarriers, initialised by thread 0 before one __syncthreads):
//   full[s]   count 1. The producer's arrive.expect_tx(32 KiB) plus the TMA bytes complete one phase per use.
//             The consumer of iteration it waits parity (it / STAGES) & 1.
//   empty[s]  count 4: lane 0 of each warp of the ONE consumer that read the stage, after wgmma.wait_group
//             says its reads are done. The producer waits parity ((it / STAGES) & 1) ^ 1 before refilling (a
//             fresh barrier is in phase 0, so the first lap's wait on parity 1 returns at once).
//   order[c]  count 128 (every thread of the other consumer): "consumer c may start its mainloop". After the
//             last K slice's wgmmas of a tile are issued (before waiting for them), every thread of consumer c
//             arrives on order[c ^ 1]. Consumer 0's j-th mainloop waits order[0] parity (j & 1) ^ 1 (j = 0
//             returns at once: the first turn is consumer 0's); consumer 1's j-th waits order[1] parity j & 1
//             (phase j = consumer 0's j-th mainloop). So mainloops run 0, 1, 0, 1, ... tile by tile. Consumer 0
//             has ceil(T / 2) of the CTA's T tiles and consumer 1 floor(T / 2): every phase waited on is one a
//             mainloop that exists completes, and the arrivals nobody waits for are harmless.
// Why the order barrier is also needed for correctness, not only for the schedule: a parity wait cannot tell
// phase n from phase n - 2. When a consumer waits on full[s] for use n, use n - 1 (iteration it - STAGES) must
// already have landed, or a barrier still at phase n - 1 would pass the wait on the wrong data. Use n - 1 was
// waited on by this consumer earlier or by the other consumer's previous mainloop, which the order barrier puts
// before this one; with 128 arrivals every thread of that consumer has passed its waits, not only one. In the
// other direction a stage cannot run two phases ahead of its reader: use n + 1 is loaded only after use n is
// released. The same two arguments hold for empty[s] (the producer is its only waiter) and for order[c] (a
// consumer's next arrival needs the other consumer's turn, which needs this wait to have passed).
// Epilogue: consumer c's own named barrier (id 1 + c, 128 threads) orders "the previous TMA store has read my
// staging" (thread 0 waits on its bulk group), the swizzled smem writes, fence.proxy.async, and the TMA
// stores issued by thread 0. Out-of-range rows/columns of ragged tiles are clipped by the TMA store (or masked
// by the register store); loads beyond M, N, K read as zeros.
#pragma once
#include "../../bf16/kernels/persistent.cuh"

namespace bf16ladder::pingpong {

constexpr int BM = 128, BN = 128, BK = 64, GROUP_M = 16;
constexpr int A_BYTES = BM * BK * 2, STAGE_BYTES = A_BYTES + BN * BK * 2;
constexpr int C_BOX_BYTES = 64 * 64 * 2, C_TILE_BYTES = BM * BN * 2;  // a [64][64] swizzled box; a whole tile
constexpr int CONSUMER_WARPS = 4;

template <int STAGES_, bool TMA_STORE_>
struct Config {
  static constexpr int STAGES = STAGES_;
  static constexpr bool TMA_STORE = TMA_STORE_;
  static constexpr int THREADS = 384, PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + (TMA_STORE ? 2 * C_TILE_BYTES : 0) + (2 * STAGES + 2) * 8;
  static_assert(128 * PRODUCER_REGS + 256 * CONSUMER_REGS <= 65536, "register split over 64K");
  static_assert(SMEM <= 227 * 1024, "over the sm_90 per-block shared-memory limit");
};

// One 64-row half of the tile's accumulators (fragment layout: store_acc_rowmajor) into its two 64 x 64 boxes.
__device__ __forceinline__ void stage_half(const float (&d)[64], uint8_t* boxes, int tid) {
  const int lane = tid % 32, q = lane % 4, r = (tid / 32) * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < 16; ++j) {  // columns 8j .. 8j+7: box j / 8, chunk j % 8
    uint8_t* box = boxes + (j / 8) * C_BOX_BYTES;
    *reinterpret_cast<__nv_bfloat162*>(box + swz128(r, j % 8) + 4 * q) = __floats2bfloat162_rn(d[4 * j], d[4 * j + 1]);
    *reinterpret_cast<__nv_bfloat162*>(box + swz128(r + 8, j % 8) + 4 * q) =
        __floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]);
  }
}

template <class F>
__global__ void __launch_bounds__(F::THREADS, 1) kernel(const __grid_constant__ CUtensorMap tA,
                                                        const __grid_constant__ CUtensorMap tB,
                                                        const __grid_constant__ CUtensorMap tC,
                                                        bf16* __restrict__ C, int M, int N, int K) {
  constexpr int STAGES = F::STAGES;
  extern __shared__ uint8_t raw[];
  uint8_t* stages = align1024(raw);
  uint8_t* sC = stages + STAGES * STAGE_BYTES;  // only with TMA_STORE: consumer c's tile at c * C_TILE_BYTES
  uint64_t* full = reinterpret_cast<uint64_t*>(sC + (F::TMA_STORE ? 2 * C_TILE_BYTES : 0));
  uint64_t* empty = full + STAGES;
  uint64_t* order = empty + STAGES;

  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int num_k = ceil_div(K, BK);
  const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, BN), num_tiles = tiles_m * tiles_n;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], CONSUMER_WARPS);
    }
    mbar_init(&order[0], 128);
    mbar_init(&order[1], 128);
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<F::PRODUCER_REGS>();
    if (tid == 0) {
      int it = 0;
      for (int u = blockIdx.x; u < num_tiles; u += gridDim.x) {
        int tm, tn;
        persistent::unit_coords<GROUP_M>(u, tiles_m, tiles_n, tm, tn);
        for (int kt = 0; kt < num_k; ++kt, ++it) {
          const int s = it % STAGES;
          mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
          uint8_t* st = stages + s * STAGE_BYTES;
          mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // out-of-bounds box bytes are zero-filled and counted
          tma_load_2d(st, &tA, &full[s], kt * BK, tm * BM);
          tma_load_2d(st + A_BYTES, &tB, &full[s], kt * BK, tn * BN);
        }
      }
    }
    return;
  }

  setmaxnreg_inc<F::CONSUMER_REGS>();
  const int c = wg - 1, lane = tid % 32;
  float d0[64], d1[64];  // rows 0-63 and 64-127 of the tile
  auto release = [&](int s) {
    if (lane == 0) mbar_arrive(&empty[s]);
  };
  for (int t = c, j = 0; blockIdx.x + t * gridDim.x < (unsigned)num_tiles; t += 2, ++j) {
    int tm, tn;
    persistent::unit_coords<GROUP_M>(blockIdx.x + t * gridDim.x, tiles_m, tiles_n, tm, tn);
    const int m0 = tm * BM, n0 = tn * BN;

    mbar_wait(&order[c], c == 0 ? (j & 1) ^ 1 : j & 1);  // my turn on the tensor cores
    int it = t * num_k;
    for (int kt = 0; kt < num_k; ++kt, ++it) {
      const int s = it % STAGES;
      mbar_wait(&full[s], (it / STAGES) & 1);
      __syncwarp();
      uint8_t* sA = stages + s * STAGE_BYTES;
      uint8_t* sB = sA + A_BYTES;
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < BK / 16; ++k) {
        const int acc = (kt > 0 || k > 0) ? 1 : 0;
        const uint64_t db = wgmma_desc(sB + k * 32);
        wgmma_m64n128k16(d0, wgmma_desc(sA + k * 32), db, acc);
        wgmma_m64n128k16(d1, wgmma_desc(sA + 64 * 128 + k * 32), db, acc);
      }
      wgmma_commit();
      wgmma_wait<1>();  // the previous slice's wgmmas are done: release its stage while this one runs
      if (kt > 0) release((it - 1) % STAGES);
    }
    mbar_arrive(&order[c ^ 1]);  // every thread: all my full[] waits of this tile are behind me
    wgmma_wait<0>();
    release((it - 1) % STAGES);

    if constexpr (!F::TMA_STORE) {
      store_acc_rowmajor<128>(d0, C, M, N, m0, n0, tid);
      store_acc_rowmajor<128>(d1, C, M, N, m0 + 64, n0, tid);
    } else {
      uint8_t* mine = sC + c * C_TILE_BYTES;  // boxes (row half h, column half b) at (2h + b) * C_BOX_BYTES
      if (tid == 0) tma_store_wait_read0();   // my previous tile's store has finished reading `mine`
      persistent::named_barrier_sync(1 + c, 128);
      stage_half(d0, mine, tid);
      stage_half(d1, mine + 2 * C_BOX_BYTES, tid);
      fence_proxy_async();  // make these generic-proxy writes visible to the TMA engine
      persistent::named_barrier_sync(1 + c, 128);
      if (tid == 0) {
#pragma unroll
        for (int b = 0; b < 4; ++b) tma_store_2d(&tC, mine + b * C_BOX_BYTES, n0 + 64 * (b % 2), m0 + 64 * (b / 2));
        tma_store_commit();
      }
    }
  }
  if constexpr (F::TMA_STORE) {
    if (tid == 0) tma_store_wait0();
  }
}

// Resident CTAs: one per SM (the smem limit is raised once per instantiation). Negative: a cudaError_t.
template <class F>
int resident_ctas() {
  static const int err = set_smem_limit(kernel<F>, F::SMEM);
  return err ? -err : num_sms();
}

// Host side: tensor maps, a grid of min(resident CTAs or grid_ctas, tiles), a plain launch.
template <class F>
int launch(const void* A, const void* B, void* C, int M, int N, int K, void* stream, int grid_ctas = 0) {
  CUtensorMap tA, tB, tC;
  int e = make_tmap_2d(&tA, A, M, K, BM, BK, CU_TENSOR_MAP_SWIZZLE_128B);
  if (!e) e = make_tmap_2d(&tB, B, N, K, BN, BK, CU_TENSOR_MAP_SWIZZLE_128B);
  if (!e) e = F::TMA_STORE ? make_tmap_2d(&tC, C, M, N, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B) : 0;
  if (!F::TMA_STORE) tC = tA;  // unused: any valid map
  if (e) return e;
  const int resident = resident_ctas<F>();
  if (resident < 0) return -resident;
  const int grid = min(grid_ctas > 0 ? grid_ctas : resident, ceil_div(M, BM) * ceil_div(N, BN));
  kernel<F><<<grid, F::THREADS, F::SMEM, static_cast<cudaStream_t>(stream)>>>(tA, tB, tC, static_cast<bf16*>(C),
                                                                             M, N, K);
  return (int)cudaGetLastError();
}

}  // namespace bf16ladder::pingpong
