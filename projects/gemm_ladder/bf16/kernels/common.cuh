// Shared device helpers for the BF16 ladder: the PTX each rung needs, spelled once.
//
// Problem every rung solves: C[M,N] (bf16, row-major) = A[M,K] (bf16, row-major) @ B[N,K]^T (bf16, row-major),
// fp32 accumulation. B is stored [N,K] ("K-major") because that is the layout wgmma reads for both operands
// without a transpose, and mma.sync's ".col" B operand is the same thing.
// Launcher contract (every rung): returns 0 or a cudaError_t / CUresult code; never launches a shape it
// cannot do (the Python side refuses those first: K % 8 == 0 and N % 8 == 0, any M >= 1).
#pragma once
#include <cuda.h>  // CUtensorMap and enums only: we do not link libcuda (see get_encode_fn)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace bf16ladder {

using bf16 = __nv_bfloat16;

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------------------------------------------------
// Shared-memory addresses and the 128-byte swizzle
// ---------------------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// A tile row of 64 bf16 is 128 bytes = eight 16-byte chunks. The 128B swizzle (what TMA's
// CU_TENSOR_MAP_SWIZZLE_128B writes and what wgmma's layout type 1 reads) stores chunk c of row r at chunk
// c ^ (r % 8), so the 8 rows an ldmatrix (or a wgmma core matrix) touches hit 8 different bank groups.
// Byte offset of (row, chunk) in a [rows][64] bf16 tile whose base is 1024-byte aligned:
__host__ __device__ __forceinline__ uint32_t swz128(uint32_t row, uint32_t chunk) {
  return row * 128u + ((chunk ^ (row & 7u)) << 4);
}

// ---------------------------------------------------------------------------------------------------------
// mbarrier (shared::cta)
// ---------------------------------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}
// Makes the initialised barriers visible to the async proxy (TMA) and to the other CTAs of a cluster.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// One arrival that also tells the barrier to expect `bytes` more transaction bytes (TMA completes them).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
// Arrive on the barrier at the same smem offset in CTA `cta_rank` of this cluster (may be this CTA).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta_rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_u32(bar)),
      "r"(cta_rank)
      : "memory");
}
// Waits until the phase with parity `parity` has completed. A freshly initialised barrier is in phase 0,
// so waiting on parity 1 returns at once: that is how a producer sees every stage as free on the first lap.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

// ---------------------------------------------------------------------------------------------------------
// TMA (cp.async.bulk.tensor), 2-D tensor maps: dim0 = the contiguous (K or N) index, dim1 = the row.
// ---------------------------------------------------------------------------------------------------------
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
      "[%2];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
// Same box, written into the same smem offset of every CTA in `cta_mask` (and their barriers).
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                                      int c1, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(cta_mask)
      : "memory");
}
// smem -> global; elements of the box outside the tensor are not written, which handles ragged M/N edges.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_u32(src)), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until the stores have finished READING shared memory (so it may be overwritten).
__device__ __forceinline__ void tma_store_wait_read0() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void tma_store_wait0() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// ---------------------------------------------------------------------------------------------------------
// wgmma
// ---------------------------------------------------------------------------------------------------------
// Shared-memory matrix descriptor for a K-major operand tile stored as [rows][64] bf16 with the 128B swizzle
// (exactly what a TMA box {64, rows} with CU_TENSOR_MAP_SWIZZLE_128B writes):
//   bits  0-13  start address >> 4
//   bits 16-29  leading byte offset >> 4: unused for swizzled K-major layouts (K fits in one 128 B row); 1
//   bits 32-45  stride byte offset >> 4: 1024 B from one 8-row core-matrix group to the next
//   bits 49-51  base offset: 0 because every tile base is 1024-byte aligned
//   bits 62-63  layout: 1 = 128B swizzle
// Stepping K by 16 inside the 64-wide tile is +32 bytes on the start address: the hardware applies the XOR
// swizzle to the final address bits, the same way TMA did when it wrote the tile.
__device__ __forceinline__ uint64_t wgmma_desc(const void* tile) {
  uint64_t d = (uint64_t)((smem_u32(tile) & 0x3FFFFu) >> 4);
  d |= (uint64_t)(16u >> 4) << 16;
  d |= (uint64_t)(1024u >> 4) << 32;
  d |= 1ull << 62;
  return d;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
template <uint32_t R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <uint32_t R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}

// wgmma accumulator fragment (m64nN, f32): thread t of the warpgroup owns rows 16*(t/32) + (t%32)/4 and +8;
// register 4*j + {0,1} is (row, 8*j + 2*(t%4) + {0,1}) and 4*j + {2,3} is (row + 8, same columns).
// Writes a 64 x N fragment to row-major C with bounds checks (N % 8 == 0, so a column pair is all-in or out).
template <int N>
__device__ __forceinline__ void store_acc_rowmajor(const float (&d)[N / 2], bf16* C, int M, int Ncols, int row0,
                                                   int col0, int tid_in_wg) {
  const int warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const int r = row0 + warp * 16 + lane / 4;
  const int cbase = col0 + 2 * (lane % 4);
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    const int c = cbase + 8 * j;
    if (c < Ncols) {
      if (r < M)
        *reinterpret_cast<__nv_bfloat162*>(C + (size_t)r * Ncols + c) = __floats2bfloat162_rn(d[4 * j], d[4 * j + 1]);
      if (r + 8 < M)
        *reinterpret_cast<__nv_bfloat162*>(C + (size_t)(r + 8) * Ncols + c) =
            __floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Host: tensor maps without linking libcuda (torch's extension links only the runtime): fetch the driver's
// cuTensorMapEncodeTiled through the runtime's entry-point query.
// ---------------------------------------------------------------------------------------------------------
typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

inline EncodeTiledFn get_encode_fn() {
  static EncodeTiledFn fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
            cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<EncodeTiledFn>(p);
  }
  return fn;
}

// A 2-D bf16 tensor map over a row-major [rows][cols] matrix, box {box_cols, box_rows}. Out-of-bounds
// elements of a box read as zero, which is how ragged M, N and K tails are handled with no extra code.
// Returns 0 or a nonzero error code.
inline int make_tmap_2d(CUtensorMap* map, const void* base, uint64_t rows, uint64_t cols, uint32_t box_rows,
                        uint32_t box_cols, CUtensorMapSwizzle swizzle) {
  EncodeTiledFn enc = get_encode_fn();
  if (!enc) return 999;  // no driver entry point: reported as a launch failure by the bindings
  cuuint64_t dims[2] = {cols, rows};
  cuuint64_t strides[1] = {cols * sizeof(bf16)};  // bytes between rows; must be a multiple of 16
  cuuint32_t box[2] = {box_cols, box_rows};
  cuuint32_t estride[2] = {1, 1};
  CUresult r = enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, estride,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : 1000 + (int)r;
}

inline int num_sms() {
  static int n = 0;
  if (!n) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
  }
  return n;
}

}  // namespace bf16ladder

// Every rung exports one launcher with this C signature (bindings.cpp declares them without CUDA headers).
#define BF16_LAUNCHER(name) \
  extern "C" int name(const void* A, const void* B, void* C, int M, int N, int K, void* stream)

namespace bf16ladder {
// Dynamic shared memory is only guaranteed 16-byte aligned; 128B-swizzled TMA tiles need 1024. Launchers
// request 1 KiB extra and kernels round the base up with this.
__device__ __forceinline__ uint8_t* align1024(uint8_t* p) {
  const uint32_t a = smem_u32(p);
  return p + (((a + 1023u) & ~1023u) - a);
}
// Sets a kernel's dynamic shared-memory limit once; returns a cudaError_t.
template <typename Kernel>
inline int set_smem_limit(Kernel k, int bytes) {
  return (int)cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

// The ring of rungs 04 and 05: thread 0 initialises each stage's `full` barrier for one arrival (the producer's
// arrive.expect_tx; TMA completes the bytes) and its `empty` barrier for `releases` arrivals (lane 0 of every
// consumer warp, once its wgmma reads are done), then the block syncs before anyone waits on them.
template <int STAGES>
__device__ __forceinline__ void init_ring_barriers(uint64_t* full, uint64_t* empty, uint32_t releases) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], releases);
    }
    fence_barrier_init();
  }
  __syncthreads();
}

// The host side of the one-CTA-per-tile TMA rungs (03-05): tensor maps over A (box BM x BK) and B (box BN x BK),
// the kernel's smem limit raised on the first call, and a grid of one CTA per BM x BN tile of C. The kernel is a
// template argument so that each rung's kernel keeps its own "raised once" flag. Returns 0 or an error code.
template <auto kKernel, int BM, int BN, int BK, int THREADS, int SMEM>
inline int launch_tma_tiles(const void* A, const void* B, void* C, int M, int N, int K, void* stream) {
  CUtensorMap tA, tB;
  int e = make_tmap_2d(&tA, A, M, K, BM, BK, CU_TENSOR_MAP_SWIZZLE_128B);
  if (!e) e = make_tmap_2d(&tB, B, N, K, BN, BK, CU_TENSOR_MAP_SWIZZLE_128B);
  if (e) return e;
  static int configured = set_smem_limit(kKernel, SMEM);
  if (configured) return configured;
  dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
  kKernel<<<grid, THREADS, SMEM, static_cast<cudaStream_t>(stream)>>>(tA, tB, static_cast<bf16*>(C), M, N, K);
  return (int)cudaGetLastError();
}
}  // namespace bf16ladder
