// The probe sweep's extension (not the ladder's: nothing here is compiled into the one users import):
// variants of the persistent kernel (probe_a.cu, probe_b.cu) and the ping-pong kernel (probe_c.cu) that
// ../bf16_probe.py times to choose the next rung, checked and launched as the rungs are
// (bf16/kernels/binding_checks.h).
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
DECLARE_PROBE(bf16_probe_c)

// One source file's entries; variants are numbered across the files in this order.
struct ProbeFile {
  int (*count)();
  const char* (*name)(int);
  int (*resident)(int);
  int (*launch)(int, const void*, const void*, void*, int, int, int, void*, int);
};
#define PROBE_FILE(f) ProbeFile{f##_count, f##_name, f##_resident, f##_launch}
static const ProbeFile kFiles[] = {PROBE_FILE(bf16_probe_a), PROBE_FILE(bf16_probe_b), PROBE_FILE(bf16_probe_c)};

// Global variant i -> (its file, its index there); false when out of range.
static bool locate(int i, const ProbeFile*& file, int& local) {
  if (i < 0) return false;
  for (const ProbeFile& f : kFiles) {
    if (i < f.count()) {
      file = &f;
      local = i;
      return true;
    }
    i -= f.count();
  }
  return false;
}

static std::vector<std::string> probe_names() {
  std::vector<std::string> out;
  for (const ProbeFile& f : kFiles)
    for (int i = 0; i < f.count(); ++i) out.push_back(f.name(i));
  return out;
}
static int probe_resident(int i) {
  const ProbeFile* f;
  int local;
  return locate(i, f, local) ? f->resident(local) : -1;
}
static std::string probe_run(int i, const at::Tensor& A, const at::Tensor& B, const at::Tensor& C, int grid) {
  const ProbeFile* f;
  int local;
  if (!locate(i, f, local)) return "probe index out of range";
  auto fn = [f, local, grid](const void* a, const void* b, void* c, int M, int N, int K, void* s) {
    return f->launch(local, a, b, c, M, N, K, s, grid);
  };
  return bf16ladder::run(fn, "probe", A, B, C);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("probe_names", &probe_names);
  m.def("probe_resident", &probe_resident);
  m.def("probe", &probe_run);
}
