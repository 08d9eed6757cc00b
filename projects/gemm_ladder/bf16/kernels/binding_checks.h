// The checks every BF16 binding runs before it launches, and the launch: shared by the ladder's bindings.cpp
// and the lab's probe extension (lab/bf16_probe/bindings.cpp). Like the SGEMM bindings, these return "" or
// the reason they did not run instead of throwing: a C++ exception thrown from an extension crashed the Python
// process on the GPU box (sgemm/binding_checks.h); ladder.launch() raises the reason in Python.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace bf16ladder {
inline std::string describe(int code) {
  if (code == 999) return "cuTensorMapEncodeTiled not found in the driver";
  if (code >= 1000) return "cuTensorMapEncodeTiled failed with CUresult " + std::to_string(code - 1000);
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

// fn: (A, B, C, M, N, K, stream) -> 0 or an error code (a rung launcher or a probe closure).
template <class Fn>
std::string run(Fn fn, const std::string& name, const at::Tensor& A, const at::Tensor& B, const at::Tensor& C) {
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&A, &B, &C}) {
    if (!(t->is_cuda() && t->scalar_type() == at::kBFloat16 && t->dim() == 2 && t->is_contiguous()))
      return name + ": A, B, C must be contiguous 2-D bf16 CUDA tensors";
    if (reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 != 0) return name + ": tensors must be 16-byte aligned";
  }
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  if (!(B.size(1) == K && C.size(0) == M && C.size(1) == N)) return name + ": shapes must be A[M,K], B[N,K], C[M,N]";
  if (!(M >= 1 && N >= 1 && K >= 1 && K % 8 == 0 && N % 8 == 0)) return name + ": needs K % 8 == 0 and N % 8 == 0";
  if (!(A.get_device() == B.get_device() && B.get_device() == C.get_device())) return name + ": one device";
  const int e = fn(A.data_ptr(), B.data_ptr(), C.data_ptr(), static_cast<int>(M), static_cast<int>(N),
                   static_cast<int>(K), at::cuda::getCurrentCUDAStream().stream());
  return e == 0 ? std::string() : name + " launch failed: " + describe(e);
}
}  // namespace bf16ladder
