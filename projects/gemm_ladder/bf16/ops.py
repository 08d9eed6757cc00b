"""Torch-facing entry points for the BF16 ladder: build/load the extension and call a rung.

    from gpufolio_projects.gemm_ladder.bf16 import ops
    C = ops.gemm("05_warp_specialized", A, B)   # A [M,K], B [N,K] bf16 CUDA -> C [M,N] = A @ B.T
"""
from __future__ import annotations

from . import registry


def load():
    """The compiled extension (built on first use, then cached; see gemm_ladder/build.py)."""
    from ..build import SM90A_FLAGS, load_extension

    return load_extension(registry.EXTENSION_NAME, registry.sources(), SM90A_FLAGS)


def gemm(rung_id: str, A, B, out=None):
    """C = A @ B.T with rung ``rung_id``; raises gpufolio.api.Unsupported before launch for shapes it refuses."""
    import torch

    rung = registry.get(rung_id)
    M, K = A.shape
    N = B.shape[0]
    registry.check_shape(M, N, K)
    if B.shape[1] != K:
        raise ValueError(f"A is {tuple(A.shape)} but B is {tuple(B.shape)}; B must be [N, K]")
    for t in (A, B) + ((out,) if out is not None else ()):
        if t.dtype != torch.bfloat16 or not t.is_cuda or not t.is_contiguous() or t.data_ptr() % 16:
            from gpufolio.api import Unsupported

            raise Unsupported("operands must be contiguous, 16-byte aligned bf16 CUDA tensors")
    if out is None:
        out = torch.empty((M, N), dtype=torch.bfloat16, device=A.device)
    return getattr(load(), rung.launcher)(A, B, out)
