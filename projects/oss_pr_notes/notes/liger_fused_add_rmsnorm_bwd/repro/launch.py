"""The patched launcher: Liger-Kernel's own backward kernel, launched with ``programs_per_sm`` programs per SM.

This is ``fused_add_rms_norm_backward`` as the patch leaves it (the kernel is Liger's, imported, unchanged); the
only difference from upstream is the grid and the matching number of dW partial rows. ``PATCH_PROGRAMS_PER_SM``
is the constant the patch writes into Liger's file (``test_bwd_patch.py`` checks they agree).
"""
from __future__ import annotations

import math

PATCH_PROGRAMS_PER_SM = 4


def liger_settings(n_cols: int) -> tuple[int, int, int]:
    """BLOCK_SIZE, num_warps, num_stages exactly as Liger's forward picks them and hands to its backward."""
    from liger_kernel.ops.utils import calculate_settings

    block_size, num_warps = calculate_settings(n_cols)
    return block_size, num_warps, 2


def backward(dY, dS_out, S, W, RSTD, offset, casting_mode, programs_per_sm: int):
    """(dX, dW) for upstream's kernel on ``sm_count * programs_per_sm`` programs (upstream: 1 per SM)."""
    import torch
    from liger_kernel.ops.fused_add_rms_norm import _fused_add_rms_norm_backward_kernel
    from liger_kernel.ops.utils import torch_to_triton_dtype

    shape = dY.shape
    n_cols = shape[-1]
    dY, dS_out, S = dY.view(-1, n_cols), dS_out.view(-1, n_cols), S.view(-1, n_cols)
    n_rows = dY.shape[0]
    BLOCK_SIZE, num_warps, num_stages = liger_settings(n_cols)
    n_programs = torch.cuda.get_device_properties(S.device).multi_processor_count * programs_per_sm
    _dW = torch.empty((n_programs, n_cols), dtype=torch.float32, device=W.device)
    dX = torch.empty_like(dY)
    # liger-kernel 0.8.5 added COMPUTE_DW (skip dW when W needs no grad); older releases lack it
    extra = {"COMPUTE_DW": True} if "COMPUTE_DW" in _fused_add_rms_norm_backward_kernel.arg_names else {}
    _fused_add_rms_norm_backward_kernel[(n_programs,)](
        dY, dY.stride(0), dS_out, dS_out.stride(0), dX, dX.stride(0), S, S.stride(0),
        torch_to_triton_dtype[S.dtype], W, W.stride(0), RSTD, RSTD.stride(0), _dW, _dW.stride(0),
        n_rows, n_cols, offset, math.ceil(n_rows / n_programs), casting_mode,
        BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps, num_stages=num_stages, has_dS_out=True, **extra,
    )
    return dX.view(*shape), _dW.sum(dim=0).to(W.dtype)
