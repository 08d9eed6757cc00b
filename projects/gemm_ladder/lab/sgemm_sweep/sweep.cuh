// The tile sizes rungs 09-11 were chosen from (not rungs). Each family's configs live in their own .cu file
// (sweep_block.cu, sweep_warp.cu, sweep_cp_async.cu) so the cold build compiles them in parallel;
// ../sgemm_sweep.py times all of them at 4096^3 on the H200, and the fastest of each family becomes the rung
// (evidence/*-sgemm-sweep-*.txt).
#pragma once
#include <cuda_runtime.h>

namespace sgemm {
using SweepLauncher = void (*)(int, int, int, const float*, const float*, float*, cudaStream_t);
struct SweepEntry {
  const char* name;  // family BMxBNxBK [warp WMxWN] tTMxTN [stages] threads/min-blocks-per-SM
  SweepLauncher launch;
};
}  // namespace sgemm

// Each family file defines one of these: its entries and their count.
const sgemm::SweepEntry* sgemm_sweep_block(int* count);
const sgemm::SweepEntry* sgemm_sweep_warp(int* count);
const sgemm::SweepEntry* sgemm_sweep_cp_async(int* count);
