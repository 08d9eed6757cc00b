// The only torch-facing file of the SGEMM ladder: rungNN(A, B, C) writes C = A @ B with rung NN's kernel and
// returns "" on success, or says why it did not launch (or why the launch failed). Every shape constraint is
// checked here BEFORE launch (registry.py states the same ones and the bench checks them first), and every
// launch is followed by cudaGetLastError so a bad configuration is reported instead of leaving C stale.
//
// Errors are returned, not thrown: on the H200 box a C++ exception thrown from this module (TORCH_CHECK)
// crashed the Python process instead of raising (round 1, a refused shape in the GPU tests), while returned
// strings cannot. registry.launch() turns a non-empty string into a Python RuntimeError.
//
// Narrow includes instead of <torch/extension.h>: this file is the slowest of the cold build (torch's
// headers), and the tensor + pybind casters are all it needs.
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "launchers.h"
#include "sweep.cuh"

namespace {
using Launcher = void (*)(int, int, int, const float*, const float*, float*, cudaStream_t);

// What a rung accepts: any M, N, K; or rows of 16 bytes (float4 loads of A and B, float4 stores of C).
enum class Shapes { kAny, kNK4 };

// Messages are built from std::string and std::to_string only: on the H200 box, formatting through iostreams
// (std::ostringstream here, c10::str inside TORCH_CHECK) segfaulted in this module, twice, while plain string
// concatenation is header-only and touches no locale machinery (README, "The refusal-path crash").
inline std::string part(const char* s) { return s; }
inline std::string part(const std::string& s) { return s; }
inline std::string part(int64_t v) { return std::to_string(v); }

template <typename... Parts>
std::string say(const char* rung, const Parts&... parts) {
  std::string out = std::string(rung) + ": ";
  ((out += part(parts)), ...);
  return out;
}

// "" when (A, B, C) is a problem the rung accepts; otherwise the reason.
std::string refusal(const char* rung, Shapes shapes, const at::Tensor& A, const at::Tensor& B, const at::Tensor& C) {
  if (!(A.is_cuda() && B.is_cuda() && C.is_cuda())) return say(rung, "A, B and C must be CUDA tensors");
  if (A.scalar_type() != at::kFloat || B.scalar_type() != at::kFloat || C.scalar_type() != at::kFloat)
    return say(rung, "A, B and C must be float32");
  if (A.dim() != 2 || B.dim() != 2 || C.dim() != 2) return say(rung, "A, B and C must be 2-D");
  if (!(A.is_contiguous() && B.is_contiguous() && C.is_contiguous())) return say(rung, "tensors must be contiguous");
  if (A.device() != B.device() || A.device() != C.device()) return say(rung, "tensors on different devices");
  const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
  if (B.size(0) != K || C.size(0) != M || C.size(1) != N)
    return say(rung, "shapes A[", M, ",", K, "] B[", B.size(0), ",", N, "] C[", C.size(0), ",", C.size(1),
               "] do not compose");
  if (M < 1 || N < 1 || K < 1) return say(rung, "empty matrices are not supported");
  // Grid y is at most 65535 blocks of >= 32 rows/columns; int offsets inside a row.
  if (M > 65535 * 32 || N > 65535 * 32 || K >= (int64_t{1} << 31)) return say(rung, "matrix too large");
  if (shapes == Shapes::kNK4) {
    if (N % 4 != 0 || K % 4 != 0)
      return say(rung, "needs N and K multiples of 4 (16-byte rows), got N=", N, " K=", K);
    for (const at::Tensor* t : {&A, &B, &C})
      if (reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 != 0)
        return say(rung, "needs 16-byte aligned data pointers");
  }
  return "";
}

std::string run(const char* rung, Launcher launch, Shapes shapes, const at::Tensor& A, const at::Tensor& B,
                const at::Tensor& C) {
  std::string why = refusal(rung, shapes, A, B, C);
  if (!why.empty()) return why;
  const c10::cuda::CUDAGuard guard(A.device());
  cudaGetLastError();  // an earlier, unrelated error must not be blamed on this launch
  launch(static_cast<int>(A.size(0)), static_cast<int>(B.size(1)), static_cast<int>(A.size(1)),
         A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), c10::cuda::getCurrentCUDAStream());
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? std::string() : say(rung, "launch failed: ", cudaGetErrorString(err));
}

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
        return run(entries[i].name, entries[i].launch, Shapes::kNK4, A, B, C);
      },
      "time-tuning hook: C = A @ B with sweep config i (N, K multiples of 4); returns '' or the reason");
}
