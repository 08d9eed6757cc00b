// Rung 15's fix-up: how a consumer warpgroup that computed part of a unit's K range hands its partial sums to
// the one that finishes the unit (stream_k.cuh says which is which), through a workspace in global memory.
//
// One slot per (CTA of the grid, consumer warpgroup): a 64 x 256 fp32 partial tile (64 KiB) and a flag. A CTA
// contributes at most once per launch (only its first stream-K piece can be a contribution), so its slot is
// written once and read once. The flag goes 0 -> 1 when the contributor has published its slot and back to 0
// when the owner has taken it, so the next launch (or a CUDA-graph replay) finds every flag at 0 with no host
// work in between.
#pragma once
#include "common.cuh"

namespace bf16ladder::stream_k {

constexpr int SLOT_CHUNKS = 32;                     // a consumer thread's 128 accumulators as 32 float4s
constexpr int SLOT_FLOATS = 128 * 4 * SLOT_CHUNKS;  // 128 threads: a 64 x 256 fp32 tile

struct Workspace {
  float* partials;  // slot s at partials + s * SLOT_FLOATS; chunk j of thread t at float4 index j * 128 + t
  int* flags;       // slot s's flag
};

// Consecutive threads write consecutive 16-byte chunks: each warp store is one contiguous 512-byte run. The
// owner's threads hold the same fragment layout (the same wgmma shape and thread), so chunk j of thread t is
// the same 4 outputs on both sides; the order of the 4 floats inside never matters. Stored to L2 only: the
// reader is another SM.
__device__ __forceinline__ void store_partial(const float (&d)[128], float* slot, int tid) {
  float4* p = reinterpret_cast<float4*>(slot) + tid;
#pragma unroll
  for (int j = 0; j < SLOT_CHUNKS; ++j)
    __stcg(p + j * 128, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
}

// Read through L2 (ld.global.cg): the slot was written by another SM, so an L1 line of it could be stale.
__device__ __forceinline__ void add_partial(float (&d)[128], const float* slot, int tid) {
  const float4* p = reinterpret_cast<const float4*>(slot) + tid;
#pragma unroll
  for (int j = 0; j < SLOT_CHUNKS; ++j) {
    const float4 v = __ldcg(p + j * 128);
    d[4 * j] += v.x;
    d[4 * j + 1] += v.y;
    d[4 * j + 2] += v.z;
    d[4 * j + 3] += v.w;
  }
}

// Called by one thread after a named barrier over the warpgroup that wrote the slot: the barrier orders the
// other threads' stores before this thread's, and the gpu-scope release fence orders them before the flag for
// any thread that reads the flag with acquire (the pattern of CUTLASS's split-K barrier).
__device__ __forceinline__ void publish(int* flag) {
  asm volatile("fence.acq_rel.gpu;\nst.relaxed.gpu.global.b32 [%0], %1;\n" ::"l"(flag), "r"(1) : "memory");
}

// Called by one thread of the owner, followed by a named barrier over its warpgroup before anyone reads the
// slot. Spins until the contributor has published, then clears the flag for the next launch.
__device__ __forceinline__ void take(int* flag) {
  int ready = 0;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(ready) : "l"(flag) : "memory");
  } while (ready == 0);
  asm volatile("st.relaxed.gpu.global.b32 [%0], %1;\n" ::"l"(flag), "r"(0) : "memory");
}

// Host: the workspace of the current device, allocated on its first stream-K launch and kept for the life of
// the process (like the workspace of a cuBLAS handle), with slots for one CTA per SM. Its flags are zeroed
// once, synchronously, so the first call must not be made during CUDA-graph capture (warm up first, as torch
// asks). Limitation: two stream-K launches running at the same time on one device (two streams) would share
// the slots and flags and corrupt each other; the ladder launches one GEMM at a time. Returns a cudaError_t.
inline int device_workspace(Workspace* out, int consumers) {
  constexpr int MAX_DEVICES = 64;
  static Workspace per_device[MAX_DEVICES] = {};
  int dev = 0, sms = 0;
  int err = (int)cudaGetDevice(&dev);
  if (err) return err;
  if (dev >= MAX_DEVICES) return (int)cudaErrorInvalidDevice;
  Workspace& ws = per_device[dev];
  if (!ws.flags) {
    err = (int)cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err) return err;
    const size_t slots = (size_t)sms * consumers;
    void* p = nullptr;
    err = (int)cudaMalloc(&p, slots * (SLOT_FLOATS * sizeof(float) + sizeof(int)));
    if (err) return err;
    int* flags = reinterpret_cast<int*>(static_cast<float*>(p) + slots * SLOT_FLOATS);
    err = (int)cudaMemset(flags, 0, slots * sizeof(int));
    if (!err) err = (int)cudaDeviceSynchronize();  // zeroed before any stream's first launch reads them
    if (err) {
      cudaFree(p);
      return err;
    }
    ws.partials = static_cast<float*>(p);
    ws.flags = flags;
  }
  *out = ws;
  return 0;
}

}  // namespace bf16ladder::stream_k
