// Shared by every SGEMM rung: C[M,N] = A[M,K] @ B[K,N], all row-major fp32, contiguous.
// Each rung file holds one kernel and its launcher; the launcher only launches (the torch binding checks
// shapes and cudaGetLastError), so these files compile with plain `nvcc -c`, without torch.
#pragma once
#include <cuda_runtime.h>
#include <cstddef>

namespace sgemm {

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// A 16-byte load that returns zeros outside the matrix: with N and K multiples of 4 a float4 is either
// wholly inside or wholly outside, so one predicate per vector handles ragged tiles exactly.
__device__ __forceinline__ float4 load4_or_zero(const float* p, bool inside) {
  return inside ? *reinterpret_cast<const float4*>(p) : make_float4(0.f, 0.f, 0.f, 0.f);
}

// C[m][n] = row m of A . column n of B, straight from global memory: the whole arithmetic of rungs 01 and 02,
// which differ only in which thread computes which (m, n).
__device__ __forceinline__ void dot_one_element(int M, int N, int K, const float* __restrict__ A,
                                                const float* __restrict__ B, float* __restrict__ C, int m, int n) {
  if (m >= M || n >= N) return;
  const float* a = A + static_cast<size_t>(m) * K;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += a[k] * B[static_cast<size_t>(k) * N + n];
  C[static_cast<size_t>(m) * N + n] = acc;
}

// The register outer product of rungs 05+: TM values of A times TN values of B, added into a TM x TN tile.
template <int TM, int TN>
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float (&a)[TM], const float (&b)[TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
}

// Four consecutive floats as one 16-byte access (LDS.128 / STS.128 / STG.128); both addresses 16-byte aligned.
__device__ __forceinline__ void copy4(float* dst, const float* src) {
  *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
}

// Stores a float4 read along a row of A into column `row` of a transposed tile As[k][m] (row stride ld):
// four scalar stores, since one vector store cannot transpose.
__device__ __forceinline__ void store4_transposed(float* as, int ld, int k, int row, float4 v) {
  as[(k + 0) * ld + row] = v.x;
  as[(k + 1) * ld + row] = v.y;
  as[(k + 2) * ld + row] = v.z;
  as[(k + 3) * ld + row] = v.w;
}

// Four accumulators as one 16-byte store (STG.128) of C; dst 16-byte aligned.
__device__ __forceinline__ void store4(float* dst, const float* v) {
  *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
}

// Kernels with more than 48 KB of shared memory must raise their dynamic limit before launch. Called on every
// launch, not once behind a static flag: nvcc 13 gives each translation unit its own copy of a templated
// kernel, while a function-local static in an inline template is shared by all of them, so "once" raised the
// limit for one copy and the other failed with "invalid argument" (rung 12 beside rung 11, round 1).
template <typename Kernel>
inline void allow_smem(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

// One block of `threads` per rows x cols tile of C (grid x over N, y over M), `smem_bytes` of dynamic shared
// memory: the launch of every rung but 01 (whose grid is transposed) and 12 (split-K adds a grid z).
template <typename Kernel>
inline void launch_tiles(Kernel kernel, int rows, int cols, int threads, int smem_bytes, int M, int N, int K,
                         const float* A, const float* B, float* C, cudaStream_t stream) {
  allow_smem(kernel, smem_bytes);
  const dim3 grid(ceil_div(N, cols), ceil_div(M, rows));
  kernel<<<grid, threads, smem_bytes, stream>>>(M, N, K, A, B, C);
}

}  // namespace sgemm
