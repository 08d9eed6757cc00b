// Probe sweep (not a rung): variants of the persistent kernel, timed by ../bf16_probe.py (a lab stage) to decide what
// the next rung should be. Split over probe_a.cu, probe_b.cu and probe_c.cu so ninja compiles them in parallel.
#include "../../bf16/kernels/persistent.cuh"
#include "probe_table.h"

namespace {
using namespace bf16ladder::persistent;
const bf16probe::Entry kEntries[] = {
    {"C2 G8 S4 no-multicast", launch<Features<2, 8, false, 4, false>>, resident_ctas<Features<2, 8, false, 4, false>>},
    {"C2 G8 S4 multicast no-mma-overlap", launch<Features<2, 8, false, 4, true, 0>>, resident_ctas<Features<2, 8, false, 4, true, 0>>},
    // Rungs 08, 09 and 10 are not repeated here (one instantiation per kernel across the extension: probe_a.cu).
    {"C2 G16 S4 no-multicast", launch<Features<2, 16, false, 4, false>>, resident_ctas<Features<2, 16, false, 4, false>>},
};
}  // namespace

BF16_PROBE_EXPORTS(bf16_probe_b, kEntries)
