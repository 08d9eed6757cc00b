"""Torch-facing entry point for the SGEMM ladder: check the operands, build/load the extension, call a rung.

    from gpufolio_projects.gemm_ladder.sgemm import ops
    C = ops.gemm("10_warptiling", A, B)   # A [M, K], B [K, N] float32 CUDA -> C [M, N] = A @ B

The bench calls ``ladder.launch`` instead, the bare binding call, so that its timed loop holds no Python
checks (the binding checks the same rules again before it launches).
"""
from __future__ import annotations

from .. import ladder, operands
from . import registry


def gemm(rung_name: str, A, B, out=None):
    """C = A @ B with rung ``rung_name``. Operands that are no fp32 GEMM (not 2-D contiguous float32 CUDA
    tensors, empty, K or out not matching) raise TypeError/ValueError; a problem the rung refuses
    (``Rung.check_shape``, a misaligned pointer for the float4 rungs) raises gpufolio.api.Unsupported. Both
    before the extension is built or called."""
    import torch
    from gpufolio.api import Unsupported

    rung = registry.by_name(rung_name)
    M, N, K = operands.check("sgemm", A, B, out, torch.float32, b_layout="kn")
    rung.check_shape(M, N, K)
    if rung.shapes == "nk4" and operands.misaligned(A, B, out):
        raise Unsupported(f"{rung.name}: float4 rows need operands that start on 16-byte boundaries")
    if out is None:
        out = torch.empty((M, N), dtype=torch.float32, device=A.device)
    ladder.launch(registry.load(), rung, A, B, out)
    return out
