"""The operand checks both ladders' ``ops.gemm`` make before anything is built or launched.

TypeError/ValueError for operands that are no GEMM of the ladder's dtype (gpufolio.validate); the caller then
applies its rungs' own shape rules, which raise gpufolio.api.Unsupported.
"""
from __future__ import annotations


def check(op: str, A, B, out, dtype, b_layout: str) -> tuple[int, int, int]:
    """(M, N, K) of C[M, N] = A[M, K] @ B, where B is [K, N] (``b_layout="kn"``, the SGEMM ladder) or [N, K]
    (``"nk"``, the BF16 ladder's K-major B); ``out`` is None or C."""
    from gpufolio import validate

    operands = {"A": A, "B": B} | ({"out": out} if out is not None else {})
    validate.tensors(op, operands, ndim=2, dtypes=(dtype,), contiguous=True, nonempty=True)
    M, K = A.shape
    K_b, N = B.shape if b_layout == "kn" else reversed(B.shape)
    if K_b != K:
        want = "[K, N]" if b_layout == "kn" else "[N, K]"
        raise ValueError(f"{op}: A is {tuple(A.shape)} but B is {tuple(B.shape)}; B must be {want}")
    if out is not None and out.shape != (M, N):
        raise ValueError(f"{op}: out is {tuple(out.shape)}, the product is {(M, N)}")
    validate.device(op, operands, ("cuda",))
    return M, N, K


def misaligned(*tensors) -> bool:
    """Whether any tensor (None is skipped) starts off a 16-byte boundary (TMA, cp.async, float4 accesses)."""
    return any(t is not None and t.data_ptr() % 16 for t in tensors)
