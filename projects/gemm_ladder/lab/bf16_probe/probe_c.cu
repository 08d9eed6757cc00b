// Probe sweep (not a rung): the ping-pong schedule (pingpong.cuh), two consumers on their own 128 x 128 tiles
// taking turns on the tensor cores, beside the shared-tile variants of probe_a.cu and probe_b.cu.
#include "pingpong.cuh"
#include "probe_table.h"

namespace {
using namespace bf16ladder::pingpong;
const bf16probe::Entry kEntries[] = {
    {"PP G16 S5 TMA-store", launch<Config<5, true>>, resident_ctas<Config<5, true>>},
    {"PP G16 S6 reg-store", launch<Config<6, false>>, resident_ctas<Config<6, false>>},
};
}  // namespace

BF16_PROBE_EXPORTS(bf16_probe_c, kEntries)
