// torch bindings: one function per rung, rung01 .. rungNN, each (A[M,K], B[N,K], C[M,N]) bf16 CUDA tensors,
// writing C = A @ B^T and returning "" or the reason it did not run. Shape rules are checked in Python first
// (registry.check_shape); the checks here (binding_checks.h) are the last line of defence against a launch on
// memory the kernel does not own.
#include <torch/extension.h>

#include "binding_checks.h"

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
DECLARE(11)
DECLARE(12)
DECLARE(13)
DECLARE(14)
DECLARE(15)

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
#define BIND(n)                                                                                      \
  m.def("rung" #n, [](const at::Tensor& A, const at::Tensor& B, const at::Tensor& C) {                \
    return bf16ladder::run(bf16_rung##n##_launch, "rung" #n, A, B, C);                                \
  });
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
  BIND(11)
  BIND(12)
  BIND(13)
  BIND(14)
  BIND(15)
}
