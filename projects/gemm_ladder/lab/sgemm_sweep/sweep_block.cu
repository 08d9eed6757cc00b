// Sweep configs of the register-staged double-buffered kernel with rung 07's block-wide thread mapping
// (rungs 08, 09). Kept small: each instantiation adds seconds to the cold build. (Left out after the first
// compile: 128x128x32 and 64x128x16 spill at the 128-register cap of two/four blocks per SM.)
#include "../../sgemm/double_buffer.cuh"
#include "sweep.cuh"

namespace {
using sgemm::TileConfig;
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
};
}  // namespace

const sgemm::SweepEntry* sgemm_sweep_block(int* count) {
  *count = static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]));
  return kEntries;
}
