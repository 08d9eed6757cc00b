// Probe sweep (not a rung): the ping-pong schedule (pingpong.cuh), two consumers on their own 128 x 128 tiles
// taking turns on the tensor cores, beside the shared-tile variants of probe_a.cu and probe_b.cu.
#include "pingpong.cuh"

namespace {
using namespace bf16ladder::pingpong;
struct Entry { const char* name; int (*launch)(const void*, const void*, void*, int, int, int, void*, int); int (*resident)(); };
const Entry kEntries[] = {
    {"PP G16 S5 TMA-store", launch<Config<5, true>>, resident_ctas<Config<5, true>>},
    {"PP G16 S6 reg-store", launch<Config<6, false>>, resident_ctas<Config<6, false>>},
};
}  // namespace

// Entry i (counted after probe_a.cu's and probe_b.cu's entries): 0 <= i < count() (bindings.cpp checks).
extern "C" int bf16_probe_c_count() { return (int)(sizeof(kEntries) / sizeof(kEntries[0])); }
extern "C" const char* bf16_probe_c_name(int i) { return kEntries[i].name; }
extern "C" int bf16_probe_c_resident(int i) { return kEntries[i].resident(); }
extern "C" int bf16_probe_c_launch(int i, const void* A, const void* B, void* C, int M, int N, int K, void* stream, int grid) {
  return kEntries[i].launch(A, B, C, M, N, K, stream, grid);
}
