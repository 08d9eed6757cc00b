// The tile sweep's extension (not the ladder's: nothing here is compiled into the one users import).
// sweep(i, A, B, C) writes C = A @ B with sweep config i, checked and launched as the rungs are
// (sgemm/binding_checks.h), and returns "" or the reason it did not run.
#include <torch/csrc/utils/pybind.h>

#include <string>
#include <vector>

#include "../../sgemm/binding_checks.h"
#include "sweep.cuh"

namespace {
// The sweep configs of every family, in one list.
std::vector<sgemm::SweepEntry> sweep_entries() {
  std::vector<sgemm::SweepEntry> all;
  for (auto family : {&sgemm_sweep_block, &sgemm_sweep_warp, &sgemm_sweep_cp_async}) {
    int count = 0;
    const sgemm::SweepEntry* entries = family(&count);
    all.insert(all.end(), entries, entries + count);
  }
  return all;
}
}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("sweep_size", [] { return static_cast<int>(sweep_entries().size()); }, "number of sweep configs");
  m.def(
      "sweep_name",
      [](int i) {
        const auto entries = sweep_entries();
        return i >= 0 && i < static_cast<int>(entries.size()) ? std::string(entries[i].name) : std::string();
      },
      "label of sweep config i ('' when out of range)");
  m.def(
      "sweep",
      [](int i, const at::Tensor& A, const at::Tensor& B, const at::Tensor& C) {
        const auto entries = sweep_entries();
        if (i < 0 || i >= static_cast<int>(entries.size())) return std::string("sweep config out of range");
        return sgemm::run(entries[i].name, entries[i].launch, sgemm::Shapes::kNK4, A, B, C);
      },
      "C = A @ B with sweep config i (N, K multiples of 4); returns '' or the reason");
}
