// Probe sweep (not a rung): variants of the persistent kernel, timed by ../bf16_probe.py (a lab stage) to decide what
// the next rung should be. Split over two files so ninja compiles them in parallel.
#include "../../bf16/kernels/persistent.cuh"

namespace {
using namespace bf16ladder::persistent;
struct Entry { const char* name; int (*launch)(const void*, const void*, void*, int, int, int, void*, int); int (*resident)(); };
const Entry kEntries[] = {
    // No entry repeats a rung's instantiation: in session 2 the copy of rung 07 here failed its launch
    // ("invalid argument") while rung 07 itself passed; one instantiation per kernel across the extension.
    {"G16 S3 TMA-store", launch<Features<1, 16, true, 3>>, resident_ctas<Features<1, 16, true, 3>>},
    {"G8 S4", launch<Features<1, 8, false, 4>>, resident_ctas<Features<1, 8, false, 4>>},
    {"G32 S4", launch<Features<1, 32, false, 4>>, resident_ctas<Features<1, 32, false, 4>>},
    {"G16 S4 no-mma-overlap", launch<Features<1, 16, false, 4, true, 0>>, resident_ctas<Features<1, 16, false, 4, true, 0>>},
    {"G16 S3", launch<Features<1, 16, false, 3>>, resident_ctas<Features<1, 16, false, 3>>},
};
}  // namespace

// Entry i (counted from 0 across both files): 0 <= i < count() (bindings.cpp checks).
extern "C" int bf16_probe_a_count() { return (int)(sizeof(kEntries) / sizeof(kEntries[0])); }
extern "C" const char* bf16_probe_a_name(int i) { return kEntries[i].name; }
extern "C" int bf16_probe_a_resident(int i) { return kEntries[i].resident(); }
extern "C" int bf16_probe_a_launch(int i, const void* A, const void* B, void* C, int M, int N, int K, void* stream, int grid) {
  return kEntries[i].launch(A, B, C, M, N, K, stream, grid);
}
