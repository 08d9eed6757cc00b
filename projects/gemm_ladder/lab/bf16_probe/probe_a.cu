// Probe sweep (not a rung): variants of the persistent kernel, timed by ../bf16_probe.py (a lab stage) to decide what
// the next rung should be. Split over probe_a.cu, probe_b.cu and probe_c.cu so ninja compiles them in parallel.
#include "../../bf16/kernels/persistent.cuh"
#include "probe_table.h"

namespace {
using namespace bf16ladder::persistent;
const bf16probe::Entry kEntries[] = {
    // No entry repeats a rung's instantiation: in session 2 the copy of rung 07 here failed its launch
    // ("invalid argument") while rung 07 itself passed; one instantiation per kernel across the extension.
    {"G16 S3 TMA-store", launch<Features<1, 16, true, 3>>, resident_ctas<Features<1, 16, true, 3>>},
    {"G8 S4", launch<Features<1, 8, false, 4>>, resident_ctas<Features<1, 8, false, 4>>},
    {"G32 S4", launch<Features<1, 32, false, 4>>, resident_ctas<Features<1, 32, false, 4>>},
    {"G16 S4 no-mma-overlap", launch<Features<1, 16, false, 4, true, 0>>, resident_ctas<Features<1, 16, false, 4, true, 0>>},
    {"G16 S3", launch<Features<1, 16, false, 3>>, resident_ctas<Features<1, 16, false, 3>>},
};
}  // namespace

BF16_PROBE_EXPORTS(bf16_probe_a, kEntries)
