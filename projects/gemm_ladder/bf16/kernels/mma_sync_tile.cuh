// The warp-level tensor-core math shared by rungs 01 and 02 (they differ only in how tiles reach smem).
// Block tile 128 x 128 x 64, 8 warps as 2 (M) x 4 (N), each warp 64 x 32 = 4 x 4 mma.sync m16n8k16 tiles.
// Smem tiles are [128 rows][64 bf16] with the 128B XOR swizzle (swz128), so each ldmatrix phase of 8 rows
// x 16 bytes hits 8 distinct bank groups.
#pragma once
#include "common.cuh"

namespace bf16ladder::mma_sync {

constexpr int BM = 128, BN = 128, BK = 64, THREADS = 256;
constexpr int TILE_BYTES = BM * BK * 2;  // one operand tile: 16 KiB (BM == BN)

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// acc[mi][ni][4]: warp's 4 x 4 grid of m16n8 fragments.
// sA, sB: smem byte addresses of the [128][64] swizzled A and B tiles.
__device__ __forceinline__ void warp_mma_tile(float (&acc)[4][4][4], uint32_t sA, uint32_t sB, int warp_m,
                                              int warp_n, int lane) {
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    uint32_t a[4][4], b[2][4];
    // A (m16 x k16), x4 matrices in fragment order: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
    // (rows 8-15, k 8-15). Lane L supplies row (L % 8) + 8 * ((L / 8) % 2) and k chunk 2*kk + L / 16.
#pragma unroll
    for (int mi = 0; mi < 4; ++mi) {
      const int row = warp_m * 64 + mi * 16 + (lane % 8) + 8 * ((lane / 8) % 2);
      ldmatrix_x4(a[mi], sA + swz128(row, 2 * kk + lane / 16));
    }
    // B stored [n][k]: one x4 covers two n8 tiles: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
#pragma unroll
    for (int nj = 0; nj < 2; ++nj) {
      const int row = warp_n * 32 + nj * 16 + (lane % 8) + 8 * (lane / 16);
      ldmatrix_x4(b[nj], sB + swz128(row, 2 * kk + (lane / 8) % 2));
    }
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) mma_16816(acc[mi][ni], a[mi], b[ni / 2][2 * (ni % 2)], b[ni / 2][2 * (ni % 2) + 1]);
  }
}

// mma C fragment: d0,d1 at (row L/4, cols 2*(L%4)+{0,1}); d2,d3 at row + 8.
__device__ __forceinline__ void store_tile(const float (&acc)[4][4][4], bf16* C, int M, int N, int m0, int n0,
                                           int warp_m, int warp_n, int lane) {
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const int r = m0 + warp_m * 64 + mi * 16 + lane / 4;
      const int c = n0 + warp_n * 32 + ni * 8 + 2 * (lane % 4);
      if (c < N) {
        if (r < M)
          *reinterpret_cast<__nv_bfloat162*>(C + (size_t)r * N + c) =
              __floats2bfloat162_rn(acc[mi][ni][0], acc[mi][ni][1]);
        if (r + 8 < M)
          *reinterpret_cast<__nv_bfloat162*>(C + (size_t)(r + 8) * N + c) =
              __floats2bfloat162_rn(acc[mi][ni][2], acc[mi][ni][3]);
      }
    }
}

}  // namespace bf16ladder::mma_sync
