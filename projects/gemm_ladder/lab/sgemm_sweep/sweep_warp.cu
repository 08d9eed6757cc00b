// Sweep configs of the register-staged double-buffered kernel with warp tiling (rung 10): warp-tile shape,
// K-tile, and 8x8 vs 8x16 per lane (the 128-thread 8x16 configs have the shape of cuBLAS's own FFMA kernels:
// four 64x64 warp tiles, 128 accumulators per thread, two blocks per SM).
#include "../../sgemm/double_buffer.cuh"
#include "sweep.cuh"
#include "../../sgemm/warptile.cuh"

namespace {
using sgemm::WarpTileConfig;
template <class Cfg>
constexpr sgemm::SweepEntry entry(const char* name) {
  return {name, &sgemm::launch_double_buffer<Cfg>};
}
const sgemm::SweepEntry kEntries[] = {
    entry<WarpTileConfig<128, 128, 8, 64, 32, 8, 8, 2>>("warp 128x128x8 w64x32 t8x8 256/2"),
    entry<WarpTileConfig<128, 128, 16, 64, 32, 8, 8, 2>>("warp 128x128x16 w64x32 t8x8 256/2"),
    entry<WarpTileConfig<128, 128, 16, 32, 64, 8, 8, 2>>("warp 128x128x16 w32x64 t8x8 256/2"),
    entry<WarpTileConfig<128, 256, 16, 64, 64, 8, 16, 1>>("warp 128x256x16 w64x64 t8x16 256/1"),
    entry<WarpTileConfig<256, 128, 16, 64, 64, 16, 8, 1>>("warp 256x128x16 w64x64 t16x8 256/1"),
    entry<WarpTileConfig<128, 128, 8, 64, 64, 8, 16, 2>>("warp 128x128x8 w64x64 t8x16 128/2"),
    entry<WarpTileConfig<128, 128, 16, 64, 64, 8, 16, 2>>("warp 128x128x16 w64x64 t8x16 128/2"),
};
}  // namespace

const sgemm::SweepEntry* sgemm_sweep_warp(int* count) {
  *count = static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]));
  return kEntries;
}
