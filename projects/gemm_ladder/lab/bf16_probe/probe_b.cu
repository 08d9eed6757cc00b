// Probe sweep (not a rung): variants of the persistent kernel, timed by ../bf16_probe.py (a lab stage) to decide what
// the next rung should be. Split over two files so ninja compiles them in parallel.
#include "../../bf16/kernels/persistent.cuh"

namespace {
using namespace bf16ladder::persistent;
struct Entry { const char* name; int (*launch)(const void*, const void*, void*, int, int, int, void*, int); int (*resident)(); };
const Entry kEntries[] = {
    {"C2 G8 S4 no-multicast", launch<Features<2, 8, false, 4, false>>, resident_ctas<Features<2, 8, false, 4, false>>},
    {"C2 G8 S4 multicast no-mma-overlap", launch<Features<2, 8, false, 4, true, 0>>, resident_ctas<Features<2, 8, false, 4, true, 0>>},
    // Rungs 08, 09 and 10 are not repeated here (one instantiation per kernel across the extension: probe_a.cu).
    {"C2 G16 S4 no-multicast", launch<Features<2, 16, false, 4, false>>, resident_ctas<Features<2, 16, false, 4, false>>},
};
}  // namespace

// Entry i (counted after probe_a.cu's entries): 0 <= i < count() (bindings.cpp checks).
extern "C" int bf16_probe_b_count() { return (int)(sizeof(kEntries) / sizeof(kEntries[0])); }
extern "C" const char* bf16_probe_b_name(int i) { return kEntries[i].name; }
extern "C" int bf16_probe_b_resident(int i) { return kEntries[i].resident(); }
extern "C" int bf16_probe_b_launch(int i, const void* A, const void* B, void* C, int M, int N, int K, void* stream, int grid) {
  return kEntries[i].launch(A, B, C, M, N, K, stream, grid);
}
