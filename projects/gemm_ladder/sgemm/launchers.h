// The launcher of every rung: C = A @ B for row-major fp32 A[M,K], B[K,N], C[M,N].
// Shape constraints live in registry.py (and are re-checked in bindings.cpp); launchers assume them.
#pragma once
#include <cuda_runtime.h>

#define SGEMM_LAUNCHER(name) \
  void name(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream)

SGEMM_LAUNCHER(sgemm_01_naive);
SGEMM_LAUNCHER(sgemm_02_gmem_coalesce);
SGEMM_LAUNCHER(sgemm_03_smem_tiling);
SGEMM_LAUNCHER(sgemm_04_blocktile_1d);
SGEMM_LAUNCHER(sgemm_05_blocktile_2d);
SGEMM_LAUNCHER(sgemm_06_vectorize);
SGEMM_LAUNCHER(sgemm_07_bank_conflicts);
SGEMM_LAUNCHER(sgemm_08_double_buffer);
SGEMM_LAUNCHER(sgemm_09_autotuned_sm90);
SGEMM_LAUNCHER(sgemm_10_warptiling);
SGEMM_LAUNCHER(sgemm_11_cp_async_pipeline);
SGEMM_LAUNCHER(sgemm_12_split_k);

// How many K-splits rung 12 uses for an M x N x K problem on a GPU with `sms` multiprocessors.
int sgemm_12_splits(int M, int N, int K, int sms);
