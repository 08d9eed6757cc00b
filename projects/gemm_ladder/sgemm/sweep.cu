// The tile sizes rung 09 and rung 10 were chosen from (not a rung): every config here is timed at 4096^3 by
// tools in gpu.sh (sweep.py) on the H200, and the fastest of each family becomes the rung. Kept small: each
// instantiation adds seconds to the cold build.
#include <string>
#include <vector>

#include "double_buffer.cuh"
#include "launchers.h"
#include "warptile.cuh"

namespace {
using Launcher = void (*)(int, int, int, const float*, const float*, float*, cudaStream_t);
struct Entry {
  const char* name;
  Launcher launch;
};
template <class Cfg>
constexpr Entry entry(const char* name) {
  return {name, &sgemm::launch_double_buffer<Cfg>};
}
using sgemm::TileConfig;
using sgemm::WarpTileConfig;
// name: family BMxBNxBK TMxTN [warp WMxWN] threads/minBlocks
const Entry kSweep[] = {
    entry<TileConfig<128, 128, 8, 8, 8, 2>>("block 128x128x8 t8x8 256/2"),
    entry<TileConfig<128, 128, 16, 8, 8, 2>>("block 128x128x16 t8x8 256/2"),
    entry<TileConfig<128, 128, 32, 8, 8, 2>>("block 128x128x32 t8x8 256/2"),
    entry<TileConfig<128, 256, 8, 8, 16, 1>>("block 128x256x8 t8x16 256/1"),
    entry<TileConfig<128, 256, 16, 8, 16, 1>>("block 128x256x16 t8x16 256/1"),
    entry<TileConfig<256, 128, 16, 16, 8, 1>>("block 256x128x16 t16x8 256/1"),
    entry<TileConfig<64, 128, 16, 8, 8, 4>>("block 64x128x16 t8x8 128/4"),
    entry<WarpTileConfig<128, 128, 8, 64, 32, 8, 8, 2>>("warp 128x128x8 w64x32 t8x8 256/2"),
    entry<WarpTileConfig<128, 128, 16, 64, 32, 8, 8, 2>>("warp 128x128x16 w64x32 t8x8 256/2"),
    entry<WarpTileConfig<128, 128, 16, 32, 64, 8, 8, 2>>("warp 128x128x16 w32x64 t8x8 256/2"),
    entry<WarpTileConfig<128, 256, 16, 64, 64, 8, 16, 1>>("warp 128x256x16 w64x64 t8x16 256/1"),
    entry<WarpTileConfig<256, 128, 16, 64, 64, 16, 8, 1>>("warp 256x128x16 w64x64 t16x8 256/1"),
};
}  // namespace

int sgemm_sweep_size() { return static_cast<int>(sizeof(kSweep) / sizeof(kSweep[0])); }
const char* sgemm_sweep_name(int i) { return kSweep[i].name; }
void sgemm_sweep_launch(int i, int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t s) {
  kSweep[i].launch(M, N, K, A, B, C, s);
}
