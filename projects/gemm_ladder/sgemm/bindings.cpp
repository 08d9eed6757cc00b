// The only torch-facing file of the SGEMM ladder: rungNN(A, B, C) writes C = A @ B with rung NN's kernel and
// returns "" on success, or says why it did not launch (or why the launch failed). Every shape constraint is
// checked here BEFORE launch (registry.py states the same ones and the bench checks them first), and every
// launch is followed by cudaGetLastError so a bad configuration is reported instead of leaving C stale.
// Errors are returned, not thrown (binding_checks.h says why).
//
// Narrow includes instead of <torch/extension.h>: this file is the slowest of the cold build (torch's
// headers), and the tensor + pybind casters are all it needs.
#include <torch/csrc/utils/pybind.h>

#include <string>

#include "binding_checks.h"
#include "launchers.h"

using sgemm::run;
using sgemm::Shapes;

// RUNG(id, launcher, shapes): the test suite reads these lines and compares them with registry.py.
#define RUNG(id, launcher, shapes)                                                                  \
  m.def(                                                                                            \
      "rung" #id,                                                                                   \
      [](const at::Tensor& A, const at::Tensor& B, const at::Tensor& C) {                          \
        return run("rung" #id, launcher, shapes, A, B, C);                                          \
      },                                                                                            \
      "C = A @ B with " #launcher "; returns '' or the reason it did not run", py::arg("A"),        \
      py::arg("B"), py::arg("C"))

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  RUNG(01, sgemm_01_naive, Shapes::kAny);
  RUNG(02, sgemm_02_gmem_coalesce, Shapes::kAny);
  RUNG(03, sgemm_03_smem_tiling, Shapes::kAny);
  RUNG(04, sgemm_04_blocktile_1d, Shapes::kAny);
  RUNG(05, sgemm_05_blocktile_2d, Shapes::kAny);
  RUNG(06, sgemm_06_vectorize, Shapes::kNK4);
  RUNG(07, sgemm_07_bank_conflicts, Shapes::kNK4);
  RUNG(08, sgemm_08_double_buffer, Shapes::kNK4);
  RUNG(09, sgemm_09_autotuned_sm90, Shapes::kNK4);
  RUNG(10, sgemm_10_warptiling, Shapes::kNK4);
  RUNG(11, sgemm_11_cp_async_pipeline, Shapes::kNK4);
  RUNG(12, sgemm_12_split_k, Shapes::kNK4);
  m.def("splits12", &sgemm_12_splits, "rung 12's K-split count for (M, N, K, SMs)", py::arg("M"), py::arg("N"),
        py::arg("K"), py::arg("sms"));
}
