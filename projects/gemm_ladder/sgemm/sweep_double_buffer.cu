// Sweep configs of the register-staged double-buffered kernel (rungs 08-10), block-wide and warp-tiled
// thread mappings. Kept small: each instantiation adds seconds to the cold build. (Left out after the
// first compile: block 128x128x32 and 64x128x16 spill at the 128-register cap of their occupancy.)
#include "double_buffer.cuh"
#include "sweep.cuh"
#include "warptile.cuh"

namespace {
using sgemm::TileConfig;
using sgemm::WarpTileConfig;
template <class Cfg>
constexpr sgemm::SweepEntry entry(const char* name) {
  return {name, &sgemm::launch_double_buffer<Cfg>};
}
const sgemm::SweepEntry kEntries[] = {
    entry<TileConfig<128, 128, 8, 8, 8, 2>>("block 128x128x8 t8x8 256/2"),
    entry<TileConfig<128, 128, 16, 8, 8, 2>>("block 128x128x16 t8x8 256/2"),
    entry<TileConfig<128, 256, 8, 8, 16, 1>>("block 128x256x8 t8x16 256/1"),
    entry<TileConfig<128, 256, 16, 8, 16, 1>>("block 128x256x16 t8x16 256/1"),
    entry<TileConfig<256, 128, 16, 16, 8, 1>>("block 256x128x16 t16x8 256/1"),
    entry<WarpTileConfig<128, 128, 8, 64, 32, 8, 8, 2>>("warp 128x128x8 w64x32 t8x8 256/2"),
    entry<WarpTileConfig<128, 128, 16, 64, 32, 8, 8, 2>>("warp 128x128x16 w64x32 t8x8 256/2"),
    entry<WarpTileConfig<128, 128, 16, 32, 64, 8, 8, 2>>("warp 128x128x16 w32x64 t8x8 256/2"),
    entry<WarpTileConfig<128, 256, 16, 64, 64, 8, 16, 1>>("warp 128x256x16 w64x64 t8x16 256/1"),
    entry<WarpTileConfig<256, 128, 16, 64, 64, 16, 8, 1>>("warp 256x128x16 w64x64 t16x8 256/1"),
};
}  // namespace

const sgemm::SweepEntry* sgemm_sweep_double_buffer(int* count) {
  *count = static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]));
  return kEntries;
}
