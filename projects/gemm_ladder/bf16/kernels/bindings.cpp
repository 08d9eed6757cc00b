// torch bindings: one function per rung, r01 .. rNN, each (A[M,K], B[N,K], C[M,N]) bf16 CUDA tensors,
// writing C = A @ B^T. Shape rules are checked in Python first (registry.check_shape); the checks here are
// the last line of defence against a launch on memory the kernel does not own.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#define DECLARE(n) extern "C" int bf16_rung##n##_launch(const void*, const void*, void*, int, int, int, void*);
DECLARE(01)
DECLARE(02)
DECLARE(03)
DECLARE(04)
DECLARE(05)
DECLARE(06)
DECLARE(07)
DECLARE(08)
DECLARE(09)
DECLARE(10)

#define DECLARE_PROBE(f)                                                                                   \
  extern "C" int f##_count();                                                                              \
  extern "C" const char* f##_name(int);                                                                   \
  extern "C" int f##_resident(int);                                                                       \
  extern "C" int f##_launch(int, const void*, const void*, void*, int, int, int, void*, int);
DECLARE_PROBE(bf16_probe_a)
DECLARE_PROBE(bf16_probe_b)

static std::string describe(int code) {
  if (code == 999) return "cuTensorMapEncodeTiled not found in the driver";
  if (code >= 1000) return "cuTensorMapEncodeTiled failed with CUresult " + std::to_string(code - 1000);
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

// fn: (A, B, C, M, N, K, stream) -> 0 or an error code (a rung launcher or a probe closure).
template <class Fn>
static at::Tensor run(Fn fn, const char* name, const at::Tensor& A, const at::Tensor& B, at::Tensor C) {
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&A, &B, &C}) {
    TORCH_CHECK(t->is_cuda() && t->scalar_type() == at::kBFloat16 && t->dim() == 2 && t->is_contiguous(), name,
                ": A, B, C must be contiguous 2-D bf16 CUDA tensors");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 == 0, name, ": tensors must be 16-byte aligned");
  }
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  TORCH_CHECK(B.size(1) == K && C.size(0) == M && C.size(1) == N, name, ": shapes must be A[M,K], B[N,K], C[M,N]");
  TORCH_CHECK(M >= 1 && N >= 1 && K >= 1 && K % 8 == 0 && N % 8 == 0, name, ": needs K % 8 == 0 and N % 8 == 0");
  TORCH_CHECK(A.get_device() == B.get_device() && B.get_device() == C.get_device(), name, ": one device");
  const int e = fn(A.data_ptr(), B.data_ptr(), C.data_ptr(), (int)M, (int)N, (int)K,
                   at::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(e == 0, name, " launch failed: ", describe(e));
  return C;
}

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
static at::Tensor probe_run(int i, const at::Tensor& A, const at::Tensor& B, at::Tensor C, int grid) {
  const int na = bf16_probe_a_count(), nb = bf16_probe_b_count();
  TORCH_CHECK(i >= 0 && i < na + nb, "probe index out of range");
  auto fn = [i, na, grid](const void* a, const void* b, void* c, int M, int N, int K, void* s) {
    return i < na ? bf16_probe_a_launch(i, a, b, c, M, N, K, s, grid) : bf16_probe_b_launch(i - na, a, b, c, M, N, K, s, grid);
  };
  return run(fn, "probe", A, B, C);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("probe_names", &probe_names);
  m.def("probe_resident", &probe_resident);
  m.def("probe", &probe_run);
#define BIND(n) \
  m.def("r" #n, [](const at::Tensor& A, const at::Tensor& B, at::Tensor C) { return run(bf16_rung##n##_launch, "r" #n, A, B, C); });
  BIND(01)
  BIND(02)
  BIND(03)
  BIND(04)
  BIND(05)
  BIND(06)
  BIND(07)
  BIND(08)
  BIND(09)
  BIND(10)
}
