// The probe sweep's extension (not the ladder's: nothing here is compiled into the one users import):
// variants of the persistent kernel (probe_a.cu, probe_b.cu) that ../bf16_probe.py times to choose the next
// rung, checked and launched as the rungs are (bf16/kernels/binding_checks.h).
#include <torch/extension.h>

#include <string>
#include <vector>

#include "../../bf16/kernels/binding_checks.h"

#define DECLARE_PROBE(f)                                                                                   \
  extern "C" int f##_count();                                                                              \
  extern "C" const char* f##_name(int);                                                                   \
  extern "C" int f##_resident(int);                                                                       \
  extern "C" int f##_launch(int, const void*, const void*, void*, int, int, int, void*, int);
DECLARE_PROBE(bf16_probe_a)
DECLARE_PROBE(bf16_probe_b)

// Probe variants (probe_a.cu, probe_b.cu), numbered across both files: names, resident CTAs, launch.
static std::vector<std::string> probe_names() {
  std::vector<std::string> out;
  for (int i = 0; i < bf16_probe_a_count(); ++i) out.push_back(bf16_probe_a_name(i));
  for (int i = 0; i < bf16_probe_b_count(); ++i) out.push_back(bf16_probe_b_name(i));
  return out;
}
static int probe_resident(int i) {
  const int na = bf16_probe_a_count();
  return i < na ? bf16_probe_a_resident(i) : bf16_probe_b_resident(i - na);
}
static std::string probe_run(int i, const at::Tensor& A, const at::Tensor& B, const at::Tensor& C, int grid) {
  const int na = bf16_probe_a_count(), nb = bf16_probe_b_count();
  if (i < 0 || i >= na + nb) return "probe index out of range";
  auto fn = [i, na, grid](const void* a, const void* b, void* c, int M, int N, int K, void* s) {
    return i < na ? bf16_probe_a_launch(i, a, b, c, M, N, K, s, grid) : bf16_probe_b_launch(i - na, a, b, c, M, N, K, s, grid);
  };
  return bf16ladder::run(fn, "probe", A, B, C);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("probe_names", &probe_names);
  m.def("probe_resident", &probe_resident);
  m.def("probe", &probe_run);
}
