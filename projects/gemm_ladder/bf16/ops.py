"""Torch-facing entry points for the BF16 ladder: build/load the extension and call a rung.

    from gpufolio_projects.gemm_ladder.bf16 import ops
    C = ops.gemm("05_warp_specialized", A, B)   # A [M,K], B [N,K] bf16 CUDA -> C [M,N] = A @ B.T

The bench calls ``ladder.launch`` instead, the bare binding call, so that its timed loop holds no Python checks.
"""
from __future__ import annotations

from .. import ladder, operands
from . import registry


def load():
    """The compiled extension (built on first use, then cached; see gemm_ladder/build.py)."""
    from ..build import SM90A_FLAGS, load_extension

    return load_extension(registry.EXTENSION_NAME, registry.sources(), SM90A_FLAGS)


def gemm(rung_name: str, A, B, out=None):
    """C = A @ B.T with rung ``rung_name``. Operands that are no bf16 GEMM (not 2-D contiguous bf16 CUDA tensors,
    empty, K or out not matching) raise TypeError/ValueError; a problem the rungs refuse (registry.check_shape,
    a misaligned pointer) raises gpufolio.api.Unsupported. Both before the extension is built or called."""
    import torch
    from gpufolio.api import Unsupported

    rung = registry.by_name(rung_name)
    M, N, K = operands.check("bf16 gemm", A, B, out, torch.bfloat16, b_layout="nk")
    registry.check_shape(M, N, K)
    if operands.misaligned(A, B, out):
        raise Unsupported("bf16 gemm: operands must start on 16-byte boundaries (TMA, cp.async)")
    if out is None:
        out = torch.empty((M, N), dtype=torch.bfloat16, device=A.device)
    ladder.launch(load(), rung, A, B, out)
    return out
