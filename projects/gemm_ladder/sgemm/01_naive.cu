// Rung 01 — naive: one thread per element of C, each reading a row of A and a column of B from global memory.
// threadIdx.x walks the ROWS of C, so the 32 threads of a warp read 32 different rows of A (32 cache lines per
// load instruction) and write C with a stride of N: the uncoalesced baseline every later rung improves on.
#include "common.cuh"
#include "launchers.h"

namespace {
constexpr int kBlock = 32;  // 32x32 threads per block

__global__ void sgemm_naive_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                                   float* __restrict__ C) {
  const int m = blockIdx.x * kBlock + threadIdx.x;  // consecutive threads -> consecutive rows (uncoalesced)
  const int n = blockIdx.y * kBlock + threadIdx.y;
  sgemm::dot_one_element(M, N, K, A, B, C, m, n);
}
}  // namespace

SGEMM_LAUNCHER(sgemm_01_naive) {
  const dim3 block(kBlock, kBlock);
  const dim3 grid(sgemm::ceil_div(M, kBlock), sgemm::ceil_div(N, kBlock));
  sgemm_naive_kernel<<<grid, block, 0, stream>>>(M, N, K, A, B, C);
}
