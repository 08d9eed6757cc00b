// The only torch-facing file of the SGEMM ladder: rungNN(A, B, C) writes C = A @ B with rung NN's kernel.
// Every shape constraint is checked here BEFORE launch (registry.py states the same ones for the bench), and
// every launch is followed by cudaGetLastError so a bad configuration fails loudly instead of leaving C stale.
// Narrow includes instead of <torch/extension.h>: this file is the slowest of the cold build (torch's
// headers), and the tensor + pybind casters are all it needs (4x less compile time).
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

void run(const char* rung, Launcher launch, Shapes shapes, const at::Tensor& A, const at::Tensor& B,
         const at::Tensor& C) {
  TORCH_CHECK(A.is_cuda() && B.is_cuda() && C.is_cuda(), rung, ": A, B and C must be CUDA tensors");
  TORCH_CHECK(A.scalar_type() == at::kFloat && B.scalar_type() == at::kFloat && C.scalar_type() == at::kFloat,
              rung, ": A, B and C must be float32");
  TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && C.dim() == 2, rung, ": A, B and C must be 2-D");
  TORCH_CHECK(A.is_contiguous() && B.is_contiguous() && C.is_contiguous(), rung, ": tensors must be contiguous");
  TORCH_CHECK(A.device() == B.device() && A.device() == C.device(), rung, ": tensors on different devices");
  const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
  TORCH_CHECK(B.size(0) == K && C.size(0) == M && C.size(1) == N, rung, ": shapes A[", M, ",", K, "] B[",
              B.size(0), ",", N, "] C[", C.size(0), ",", C.size(1), "] do not compose");
  TORCH_CHECK(M >= 1 && N >= 1 && K >= 1, rung, ": empty matrices are not supported");
  // Grid y is at most 65535 blocks of >= 32 rows/columns; int offsets inside a row.
  TORCH_CHECK(M <= 65535 * 32 && N <= 65535 * 32 && K < (int64_t{1} << 31), rung, ": matrix too large");
  if (shapes == Shapes::kNK4) {
    TORCH_CHECK(N % 4 == 0 && K % 4 == 0, rung, ": needs N and K multiples of 4 (16-byte rows), got N=", N,
                " K=", K);
    const auto aligned = [](const at::Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0; };
    TORCH_CHECK(aligned(A) && aligned(B) && aligned(C), rung, ": needs 16-byte aligned data pointers");
  }
  const c10::cuda::CUDAGuard guard(A.device());
  launch(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), A.data_ptr<float>(), B.data_ptr<float>(),
         C.data_ptr<float>(), c10::cuda::getCurrentCUDAStream());
  C10_CUDA_CHECK(cudaGetLastError());
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
        run("rung" #id, launcher, shapes, A, B, C);                                                 \
      },                                                                                            \
      "C = A @ B with " #launcher, py::arg("A"), py::arg("B"), py::arg("C"))

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
  m.def("sweep_name", [](int i) { return std::string(sweep_entries().at(i).name); }, "label of sweep config i");
  m.def(
      "sweep",
      [](int i, const at::Tensor& A, const at::Tensor& B, const at::Tensor& C) {
        const auto entries = sweep_entries();
        TORCH_CHECK(i >= 0 && i < static_cast<int>(entries.size()), "sweep config ", i, " out of range");
        run(entries[i].name, entries[i].launch, Shapes::kNK4, A, B, C);
      },
      "time-tuning hook: C = A @ B with sweep config i (N, K multiples of 4)");
}
