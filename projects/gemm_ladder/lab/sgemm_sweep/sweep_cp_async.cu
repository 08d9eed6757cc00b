// Sweep configs of the cp.async multistage kernel (rung 11): stages, K-tile and block tile.
#include "../../sgemm/cp_async.cuh"
#include "sweep.cuh"

namespace {
using sgemm::PipelineConfig;
using sgemm::WarpTileConfig;
template <class Cfg>
constexpr sgemm::SweepEntry entry(const char* name) {
  return {name, &sgemm::launch_cp_async<Cfg>};
}
const sgemm::SweepEntry kEntries[] = {
    entry<PipelineConfig<WarpTileConfig<128, 128, 16, 64, 32, 8, 8, 2>, 3>>("cp.async 128x128x16 w64x32 t8x8 s3 256/2"),
    entry<PipelineConfig<WarpTileConfig<128, 128, 16, 64, 32, 8, 8, 2>, 4>>("cp.async 128x128x16 w64x32 t8x8 s4 256/2"),
    entry<PipelineConfig<WarpTileConfig<128, 128, 32, 64, 32, 8, 8, 2>, 3>>("cp.async 128x128x32 w64x32 t8x8 s3 256/2"),
    entry<PipelineConfig<WarpTileConfig<128, 256, 16, 64, 64, 8, 16, 1>, 3>>("cp.async 128x256x16 w64x64 t8x16 s3 256/1"),
    entry<PipelineConfig<WarpTileConfig<128, 128, 8, 64, 64, 8, 16, 2>, 3>>("cp.async 128x128x8 w64x64 t8x16 s3 128/2"),
    entry<PipelineConfig<WarpTileConfig<128, 128, 16, 64, 64, 8, 16, 2>, 3>>("cp.async 128x128x16 w64x64 t8x16 s3 128/2"),
};
}  // namespace

const sgemm::SweepEntry* sgemm_sweep_cp_async(int* count) {
  *count = static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]));
  return kEntries;
}
