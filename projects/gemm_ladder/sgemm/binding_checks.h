// The checks every SGEMM binding runs before it launches, and the launch itself: shared by the ladder's
// bindings.cpp and the lab's sweep extension (lab/sgemm_sweep/bindings.cpp), so both refuse the same way.
//
// Errors are returned, not thrown: on the H200 box a C++ exception thrown from this module (TORCH_CHECK)
// crashed the Python process instead of raising (round 1, a refused shape in the GPU tests), while returned
// strings cannot. ladder.launch() turns a non-empty string into a Python RuntimeError.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace sgemm {
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
inline std::string refusal(const char* rung, Shapes shapes, const at::Tensor& A, const at::Tensor& B,
                           const at::Tensor& C) {
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

inline std::string run(const char* rung, Launcher launch, Shapes shapes, const at::Tensor& A, const at::Tensor& B,
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
}  // namespace sgemm
