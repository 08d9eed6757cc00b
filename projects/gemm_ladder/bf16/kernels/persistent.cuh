// The persistent warp-specialised kernel behind rungs 06-15; each rung instantiates it with one more feature.
//
//   Features::CLUSTER_M  1, or 2: two CTAs of a cluster take vertically adjacent tiles with the same B tile;
//                        with MULTICAST each loads half of B and TMA-multicasts it into both CTAs' smem.
//   Features::GROUP_M    0: tiles in row-major order; G > 0: grouped raster, bands of G cluster-rows walked
//                        column by column, so the tiles in flight share A and B panels in L2.
//   Features::TMA_STORE  false: registers -> global bf16x2 stores; true: registers -> swizzled smem -> TMA store.
//   Features::STAGES     depth of the TMA ring.
//   Features::PIPE_MMAS  1: keep one wgmma batch in flight and release the previous stage; 0: wait for each
//                        batch and release its stage at once.
//   Features::B_SOURCE   with clusters, who loads the shared B tile: OWN_B (each CTA its own copy), SPLIT_B (each
//                        loads half and multicasts it to both), ONE_ISSUER_B (the even CTA loads all of it and
//                        multicasts it; the odd CTA loads only its A).
//   Features::C_BOXES    with TMA_STORE, how many of a consumer's four 64 x 64 C boxes are staged in smem at once:
//                        4 (the whole 64 x 256 slab, 32 KiB per consumer) or 2 (half of it, twice per tile:
//                        the second half waits until the TMA engine has read the first), which frees 32 KiB
//                        for a fourth ring stage.
//   Features::WHOLE_ROUNDS  false: the grid is every resident CTA; true: the fewest clusters that still finish in
//                        the same number of rounds (8192^3: 1024 units over 66 clusters is 16 rounds, and 64
//                        clusters do it in 16 as well), so no SM idles through a last, partial round.
//   Features::STREAM_K   false: each cluster runs whole units round robin; true: the grid is every resident
//                        cluster, and the units that do not fill a last round are split along K between all of
//                        them (stream_k.cuh: the schedule; stream_k_fixup.cuh: the partial sums' hand-over).
//
// Roles (384 threads, one CTA per SM, grid = as many CTAs as fit at once):
//   warpgroup 0  producer: setmaxnreg.dec to 40; one thread walks the tile sequence and keeps the ring full.
//   warpgroups 1, 2  consumers: setmaxnreg.inc to 232; each owns 64 rows of the 128 x 256 tile (m64n256k16,
//                128 fp32 accumulators per thread), and stores its part of C.
// Why not three consumers (a 192 x 256 tile, less smem traffic per FLOP)? With 512 threads ptxas compiles the
// whole kernel under the launch-bound cap of 65536 / 512 = 128 registers (setmaxnreg changes the allocation
// at run time, not ptxas's budget), and m64n256k16 alone needs 128 accumulators: ptxas refuses (C7602).
// The ring's stage/phase counter runs across tiles, so the producer is already loading the next tile while
// the consumers run the epilogue of this one: that overlap is what persistence buys.
#pragma once
#include "common.cuh"
#include "stream_k.cuh"
#include "stream_k_fixup.cuh"
#include "wgmma_ops.cuh"

namespace bf16ladder::persistent {

constexpr int BN = 256, BK = 64;
constexpr int B_BYTES = BN * BK * 2;
constexpr int C_SUB_BYTES = 64 * 64 * 2;     // one [64 rows][64 cols] swizzled C box

enum BSource { OWN_B = 0, SPLIT_B = 1, ONE_ISSUER_B = 2 };

template <int CLUSTER_M_, int GROUP_M_, bool TMA_STORE_, int STAGES_, int B_SOURCE_ = SPLIT_B, int PIPE_MMAS_ = 1,
          bool WHOLE_ROUNDS_ = false, int C_BOXES_ = 4, bool STREAM_K_ = false>
struct Features {
  static constexpr int CLUSTER_M = CLUSTER_M_, GROUP_M = GROUP_M_, STAGES = STAGES_, CONSUMERS = 2;
  static constexpr int B_SOURCE = CLUSTER_M_ > 1 ? B_SOURCE_ : OWN_B;
  static constexpr bool TMA_STORE = TMA_STORE_, MULTICAST = B_SOURCE != OWN_B, WHOLE_ROUNDS = WHOLE_ROUNDS_;
  static constexpr int PIPE_MMAS = PIPE_MMAS_, C_BOXES = C_BOXES_;
  static constexpr bool STREAM_K = STREAM_K_;
  static_assert(!(STREAM_K && WHOLE_ROUNDS), "stream-K needs every resident cluster, not the fewest");
  static constexpr int C_WG_BYTES = C_BOXES * C_SUB_BYTES;  // a consumer's C staging: all or half of its slab
  static_assert(C_BOXES == 4 || C_BOXES == 2, "a consumer's slab is staged whole or in two halves");
  static constexpr int BM = 64 * CONSUMERS, THREADS = 128 * (1 + CONSUMERS);
  static constexpr int A_BYTES = BM * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
  // Register split after setmaxnreg (the CTA's 64K registers: producer warpgroup + consumers).
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
  static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + (TMA_STORE ? CONSUMERS * C_WG_BYTES : 0) + 2 * STAGES * 8;
  static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536, "register split over 64K");
  static_assert(SMEM <= 227 * 1024, "over the sm_90 per-block shared-memory limit");
};

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// blockIdx.x / CLUSTER_M for the 1-D grids here, read afresh at every call (volatile: never cached in a register).
__device__ __forceinline__ int cluster_index() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return (int)r;
}
// Every thread of every CTA in the cluster. Not the .aligned form: the producer warp arrives here diverged
// (lane 0 from the load loop, lanes 1-31 straight away), so callers __syncwarp() first as well.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Unit u (a cluster's worth of tiles: CLUSTER_M m-tiles x 1 n-tile) -> (unit row, tile column).
template <int GROUP_M>
__device__ __forceinline__ void unit_coords(int u, int units_m, int tiles_n, int& um, int& tn) {
  if constexpr (GROUP_M == 0) {
    um = u / tiles_n;
    tn = u % tiles_n;
  } else {
    const int per_band = GROUP_M * tiles_n;
    const int band = u / per_band;
    const int first = band * GROUP_M;
    const int height = min(GROUP_M, units_m - first);  // the last band may be shorter
    const int r = u - band * per_band;
    um = first + r % height;
    tn = r / height;
  }
}

// Arrive on the barrier at the same smem offset in CTA `cta_rank`: the default (release, CTA scope) form. The
// stage's reads were wgmma's, already complete at wgmma.wait_group; no generic-proxy writes need publishing
// to the cluster, so the cluster-scope release of mbar_arrive_cluster buys nothing here.
__device__ __forceinline__ void mbar_arrive_remote(uint64_t* bar, uint32_t cta_rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_u32(bar)),
      "r"(cta_rank)
      : "memory");
}

// This cluster's pieces of work, in order: whole units round robin (rungs 06-14), or with STREAM_K piece i of
// stream_k.cuh's schedule. Producer and consumers walk the same sequence, which is what keeps the ring's
// stage/phase counter in step between them. Written as a plain loop (first; has_work; next), not a lambda
// called per piece: the lambda moved instructions around in the other rungs' epilogues.
// STREAM_K reads the cluster index from its special register wherever it needs it rather than keeping it in a
// register through the mainloop: kept, it made ptxas spill in rung 15's consumers (168 registers at most).
template <class F>
__device__ __forceinline__ stream_k::Segment first_segment(const stream_k::Schedule& sched, int cluster_id, int num_k) {
  if constexpr (F::STREAM_K) return sched.segment(cluster_index(), 0);
  else return stream_k::Segment{cluster_id, 0, num_k};
}
template <class F>
__device__ __forceinline__ stream_k::Segment next_segment(const stream_k::Schedule& sched, const stream_k::Segment& s,
                                                          int i, int num_clusters) {
  if constexpr (F::STREAM_K) return sched.segment(cluster_index(), i);
  else return stream_k::Segment{s.unit + num_clusters, 0, s.k_end};
}
template <class F>
__device__ __forceinline__ bool has_work(const stream_k::Segment& s, int num_units) {
  if constexpr (F::STREAM_K) return s.unit >= 0;
  else return s.unit < num_units;
}

template <class F>
__global__ void __launch_bounds__(F::THREADS, 1) kernel(const __grid_constant__ CUtensorMap tA,
                                                        const __grid_constant__ CUtensorMap tB,
                                                        const __grid_constant__ CUtensorMap tC,
                                                        bf16* __restrict__ C, int M, int N, int K,
                                                        const stream_k::Schedule sched, const stream_k::Workspace ws) {
  constexpr int CM = F::CLUSTER_M, STAGES = F::STAGES, BM = F::BM;
  constexpr int A_BYTES = F::A_BYTES, STAGE_BYTES = F::STAGE_BYTES;
  // Arrivals that free a stage: every consumer warp of every CTA whose B (or B half) this CTA's producer writes.
  // SPLIT_B: both CTAs write into both. ONE_ISSUER_B: the even CTA writes B into both, the odd one only its A.
  constexpr int WRITERS = F::B_SOURCE == SPLIT_B ? CM : 1;
  constexpr int READERS = F::B_SOURCE == OWN_B ? 1 : CM;  // CTAs whose stage s the even CTA's producer fills
  constexpr int RELEASES_EVEN = F::CONSUMERS * 4 * (F::B_SOURCE == ONE_ISSUER_B ? READERS : WRITERS);
  constexpr int RELEASES_ODD = F::CONSUMERS * 4 * WRITERS;
  extern __shared__ uint8_t raw[];
  uint8_t* stages = align1024(raw);
  uint8_t* sC = stages + STAGES * STAGE_BYTES;  // only with TMA_STORE
  uint64_t* full = reinterpret_cast<uint64_t*>(sC + (F::TMA_STORE ? F::CONSUMERS * F::C_WG_BYTES : 0));
  uint64_t* empty = full + STAGES;

  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const uint32_t rank = CM > 1 ? cluster_rank() : 0;
  const int num_k = ceil_div(K, BK);
  const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, BN);
  const int units_m = ceil_div(tiles_m, CM), num_units = units_m * tiles_n;
  const int cluster_id = blockIdx.x / CM, num_clusters = gridDim.x / CM;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], rank == 0 ? RELEASES_EVEN : RELEASES_ODD);
    }
    fence_barrier_init();
  }
  if constexpr (CM > 1) cluster_sync(); else __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<F::PRODUCER_REGS>();
    if (tid == 0) {
      int it = 0;
      int i = 0;
      for (stream_k::Segment seg = first_segment<F>(sched, cluster_id, num_k); has_work<F>(seg, num_units);
           seg = next_segment<F>(sched, seg, ++i, num_clusters)) {
        int um, tn;
        unit_coords<F::GROUP_M>(seg.unit, units_m, tiles_n, um, tn);
        const int m0 = (um * CM + (int)rank) * BM, n0 = tn * BN;
        for (int kt = seg.k_begin; kt < seg.k_end; ++kt, ++it) {
          const int s = it % STAGES;
          mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
          uint8_t* st = stages + s * STAGE_BYTES;
          mbar_arrive_expect_tx(&full[s], STAGE_BYTES);  // own A + all of B (with multicast: both halves)
          tma_load_2d(st, &tA, &full[s], kt * BK, m0);
          if constexpr (!F::MULTICAST) {
            tma_load_2d(st + A_BYTES, &tB, &full[s], kt * BK, n0);
          } else if constexpr (F::B_SOURCE == ONE_ISSUER_B) {
            if (rank == 0)  // expect_tx above counts B in both CTAs: it lands in each through this one copy
              tma_load_2d_multicast(st + A_BYTES, &tB, &full[s], kt * BK, n0, (uint16_t)((1u << CM) - 1));
          } else {
            constexpr int ROWS = BN / CM;  // this CTA's share of the B tile, sent to every CTA of the cluster
            tma_load_2d_multicast(st + A_BYTES + rank * ROWS * 128, &tB, &full[s], kt * BK, n0 + rank * ROWS,
                                  (uint16_t)((1u << CM) - 1));
          }
        }
      }
    }
  } else {
    setmaxnreg_inc<F::CONSUMER_REGS>();
    const int cw = wg - 1;
    const int lane = tid % 32;
    float d[128];
    int it = 0;
    // Release stage s: this warp's wgmma reads of it are complete (and, with multicast, tell the peers too).
    auto release = [&](int s) {
      if (lane == 0) {
        if constexpr (!F::MULTICAST) {
          mbar_arrive(&empty[s]);
        } else if constexpr (F::B_SOURCE == ONE_ISSUER_B) {
          mbar_arrive(&empty[s]);                     // own producer: its A (and, for the even CTA, B)
          if (rank != 0) mbar_arrive_remote(&empty[s], 0);  // the even CTA's producer: the B it multicast here
        } else {
#pragma unroll
          for (int r = 0; r < CM; ++r) mbar_arrive_cluster(&empty[s], r);
        }
      }
    };
    int i = 0;
    for (stream_k::Segment seg = first_segment<F>(sched, cluster_id, num_k); has_work<F>(seg, num_units);
         seg = next_segment<F>(sched, seg, ++i, num_clusters)) {
      int um, tn;
      unit_coords<F::GROUP_M>(seg.unit, units_m, tiles_n, um, tn);
      const int m0 = (um * CM + (int)rank) * BM, n0 = tn * BN;
      for (int kt = seg.k_begin; kt < seg.k_end; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        __syncwarp();
        uint8_t* sA = stages + s * STAGE_BYTES + cw * (64 * 128);
        uint8_t* sB = stages + s * STAGE_BYTES + A_BYTES;
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < BK / 16; ++k)
          wgmma_m64n256k16(d, wgmma_desc(sA + k * 32), wgmma_desc(sB + k * 32), (kt > seg.k_begin || k > 0) ? 1 : 0);
        wgmma_commit();
        if constexpr (F::PIPE_MMAS == 1) {
          wgmma_wait<1>();  // the previous batch is done: release its stage while this one runs
          if (kt > seg.k_begin) release((it - 1) % STAGES);
        } else {
          wgmma_wait<0>();
          release(s);
        }
      }
      if constexpr (F::PIPE_MMAS == 1) {
        wgmma_wait<0>();
        release((it - 1) % STAGES);
      }
      if constexpr (F::STREAM_K) {
        if (seg.k_begin > 0) {  // the rest of this unit is another cluster's: hand the partial sums over
          const int mine = (cluster_index() * CM + (int)rank) * F::CONSUMERS + cw;
          stream_k::store_partial(d, ws.partials + (size_t)mine * stream_k::SLOT_FLOATS, tid);
          named_barrier_sync(1 + cw, 128);
          if (tid == 0) stream_k::publish(ws.flags + mine);
          continue;
        }
        if (seg.k_end < num_k) {  // this cluster stores the unit: add the later k-iterations' partial sums
          const int last = sched.last_contributor(seg);
          for (int c = cluster_index() + 1; c <= last; ++c) {
            const int theirs = (c * CM + (int)rank) * F::CONSUMERS + cw;  // the same rows of the unit
            if (tid == 0) stream_k::take(ws.flags + theirs);
            named_barrier_sync(1 + cw, 128);
            stream_k::add_partial(d, ws.partials + (size_t)theirs * stream_k::SLOT_FLOATS, tid);
          }
        }
      }

      const int row0 = m0 + 64 * cw;
      if constexpr (!F::TMA_STORE) {
        store_acc_rowmajor<256>(d, C, M, N, row0, n0, tid);
      } else {
        constexpr int BOXES = F::C_BOXES;
        uint8_t* mine = sC + cw * F::C_WG_BYTES;
        const int warp = tid / 32, q = lane % 4;
        const int r = warp * 16 + lane / 4;
#pragma unroll
        for (int h = 0; h < 4 / BOXES; ++h) {  // boxes h*BOXES .. h*BOXES + BOXES-1 of the slab
          if (tid == 0) tma_store_wait_read0();  // the previous store has finished reading `mine`
          named_barrier_sync(1 + cw, 128);
#pragma unroll
          for (int j = 8 * BOXES * h; j < 8 * BOXES * (h + 1); ++j) {  // columns 8j .. 8j+7: box j/8, chunk j%8
            uint8_t* box = mine + ((j / 8) % BOXES) * C_SUB_BYTES;
            *reinterpret_cast<__nv_bfloat162*>(box + swz128(r, j % 8) + 4 * q) =
                __floats2bfloat162_rn(d[4 * j], d[4 * j + 1]);
            *reinterpret_cast<__nv_bfloat162*>(box + swz128(r + 8, j % 8) + 4 * q) =
                __floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]);
          }
          fence_proxy_async();  // make these generic-proxy writes visible to the TMA engine
          named_barrier_sync(1 + cw, 128);
          if (tid == 0) {
#pragma unroll
            for (int b = 0; b < BOXES; ++b)
              tma_store_2d(&tC, mine + b * C_SUB_BYTES, n0 + 64 * (h * BOXES + b), row0);
            tma_store_commit();
          }
        }
      }
    }
    if constexpr (F::TMA_STORE) {
      if (tid == 0) tma_store_wait0();
    }
  }
  // No CTA may exit while a peer can still multicast into its smem or arrive on its barriers.
  if constexpr (CM > 1) {
    __syncwarp();
    cluster_sync();
  }
}

template <class F>
cudaLaunchConfig_t launch_config(int grid, int smem, cudaStream_t stream, cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t cfg = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = F::CLUSTER_M;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(F::THREADS);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = F::CLUSTER_M > 1 ? 1 : 0;  // without clusters: a plain grid
  return cfg;
}

// How many CTAs can be resident at once (the persistent grid): one per SM, or for clusters what the occupancy
// calculator says fits. Negative: a cudaError_t. Computed once per instantiation.
template <class F>
int resident_ctas() {
  static int ctas = 0;
  if (!ctas) {
    int err = set_smem_limit(kernel<F>, F::SMEM);
    if (err) return -err;
    if (F::CLUSTER_M == 1) {
      ctas = num_sms();
    } else {
      cudaLaunchAttribute attr[1];
      cudaLaunchConfig_t cfg = launch_config<F>(num_sms(), F::SMEM, nullptr, attr);
      int clusters = 0;
      err = (int)cudaOccupancyMaxActiveClusters(&clusters, kernel<F>, &cfg);
      if (err) return -err;
      ctas = clusters * F::CLUSTER_M;
    }
  }
  return ctas;
}

// Host side: tensor maps, grid size, (cluster) launch. grid_ctas > 0 overrides the resident-CTA count
// (for the probe sweep); the grid never exceeds the number of tile units, and with STREAM_K never the
// resident clusters either.
template <class F>
int launch(const void* A, const void* B, void* C, int M, int N, int K, void* stream, int grid_ctas = 0) {
  constexpr int CM = F::CLUSTER_M;
  CUtensorMap tA, tB, tC;
  int e = make_tmap_2d(&tA, A, M, K, F::BM, BK, CU_TENSOR_MAP_SWIZZLE_128B);
  if (!e) e = make_tmap_2d(&tB, B, N, K, F::B_SOURCE == SPLIT_B ? BN / CM : BN, BK, CU_TENSOR_MAP_SWIZZLE_128B);
  if (!e) e = F::TMA_STORE ? make_tmap_2d(&tC, C, M, N, 64, 64, CU_TENSOR_MAP_SWIZZLE_128B) : 0;
  if (!F::TMA_STORE) tC = tA;  // unused: any valid map
  if (e) return e;

  int ctas = grid_ctas > 0 ? grid_ctas : resident_ctas<F>();
  if (ctas < 0) return -ctas;
  if (grid_ctas > 0 && resident_ctas<F>() < 0) return -resident_ctas<F>();  // smem limit must be set
  if (ctas < CM) return (int)cudaErrorLaunchOutOfResources;
  const int units = ceil_div(ceil_div(M, F::BM), CM) * ceil_div(N, BN);
  int clusters = min(ctas / CM, units);
  if (F::WHOLE_ROUNDS && grid_ctas == 0) clusters = ceil_div(units, ceil_div(units, clusters));
  stream_k::Schedule sched{};  // both unused without STREAM_K
  stream_k::Workspace ws = {};
  if constexpr (F::STREAM_K) {
    // An owner spins until clusters with higher indices have published their partial sums, so they must all
    // be resident at the same time: a larger override is cut back. Slots for one CTA per SM cover the grid.
    clusters = min(clusters, resident_ctas<F>() / CM);
    if (clusters < 1) return (int)cudaErrorLaunchOutOfResources;
    e = stream_k::device_workspace(&ws, F::CONSUMERS);
    if (e) return e;
    // Computed here, read by the kernel from its parameters: no registers held through the mainloop.
    sched = stream_k::Schedule(units, ceil_div(K, BK), clusters);
  }
  const int grid = clusters * CM;
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg = launch_config<F>(grid, F::SMEM, static_cast<cudaStream_t>(stream), attr);
  return (int)cudaLaunchKernelEx(&cfg, kernel<F>, tA, tB, tC, static_cast<bf16*>(C), M, N, K, sched, ws);
}

}  // namespace bf16ladder::persistent
