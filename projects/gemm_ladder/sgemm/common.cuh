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

// Kernels with more than 48 KB of shared memory must raise their dynamic limit before launch. Called on every
// launch, not once behind a static flag: nvcc 13 gives each translation unit its own copy of a templated
// kernel, while a function-local static in an inline template is shared by all of them, so "once" raised the
// limit for one copy and the other failed with "invalid argument" (rung 12 beside rung 11, round 1).
template <typename Kernel>
inline void allow_smem(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

}  // namespace sgemm
