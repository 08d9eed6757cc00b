"""The kernel the Liger-Kernel patch adds, kept here so the repro measures the exact code the patch carries.

Liger's ``fused_add_rms_norm_forward`` launches one program per row with BLOCK_SIZE = next_pow2(H). For narrow
rows (H <= 2048) a program then moves only a few KiB and the GPU runs out of resident programs before it runs
out of bandwidth. ``_block_fused_add_rms_norm_forward_kernel`` gives each program BLOCK_ROW rows (a
[BLOCK_ROW, BLOCK_SIZE] tile, ~4096 elements), with the same math, casting modes, offset and per-row RSTD as the
row kernel, so Liger's backward is unchanged. Wide rows keep the row kernel (``rows_per_program`` returns 1).

The launch heuristic is the one our ``projects/fused_kernels`` add_rmsnorm uses (``launch_config``).
``test_port.py`` checks that the kernel's text here is the text the patch adds to Liger's file.
"""
from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

if os.environ.get("TRITON_INTERPRET") == "1":

    @triton.jit
    def rsqrt(x):  # libdevice has no interpreter implementation
        return tl.rsqrt(x)

else:
    try:
        from triton.language.extra.libdevice import rsqrt  # what Liger's file imports
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import rsqrt

_CASTING_MODE_NONE: tl.constexpr = tl.constexpr(-1)
_CASTING_MODE_LLAMA: tl.constexpr = tl.constexpr(0)
_CASTING_MODE_GEMMA: tl.constexpr = tl.constexpr(1)
CASTING_MODES = {"llama": 0, "gemma": 1, "none": -1}


# --- patch: kernel begin ---
@triton.jit
def _block_fused_add_rms_norm_forward_kernel(
    Y_ptr,
    Y_row_stride,
    S_ptr,  # output residual
    S_row_stride,
    X_ptr,
    X_row_stride,
    R_ptr,  # input residual
    R_row_stride,
    W_ptr,
    RSTD_ptr,
    RSTD_row_stride,
    n_rows,
    n_cols,
    eps,
    offset,
    casting_mode: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    BLOCK_ROW: tl.constexpr,
):
    """
    Same computation as _fused_add_rms_norm_forward_kernel, on BLOCK_ROW rows per program:
    narrow rows (hidden size <= 2048) give a one-row program too few bytes to keep HBM busy.
    """
    row_idx = tl.program_id(0).to(tl.int64) * BLOCK_ROW + tl.arange(0, BLOCK_ROW)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    row_mask = row_idx < n_rows
    col_mask = col_offsets < n_cols
    mask = row_mask[:, None] & col_mask[None, :]

    # X and R are read once and never again: let them leave L2 first
    X_rows = tl.load(
        X_ptr + row_idx[:, None] * X_row_stride + col_offsets[None, :],
        mask=mask,
        other=0,
        eviction_policy="evict_first",
    )
    R_rows = tl.load(
        R_ptr + row_idx[:, None] * R_row_stride + col_offsets[None, :],
        mask=mask,
        other=0,
        eviction_policy="evict_first",
    )
    S_rows = X_rows + R_rows
    tl.store(S_ptr + row_idx[:, None] * S_row_stride + col_offsets[None, :], S_rows, mask=mask)
    S_dtype = S_rows.dtype
    W_row = tl.load(W_ptr + col_offsets, mask=col_mask, other=0)

    if casting_mode == _CASTING_MODE_LLAMA:
        S_rows = S_rows.to(tl.float32)
    if casting_mode == _CASTING_MODE_GEMMA:
        W_row = W_row.to(tl.float32)
        S_rows = S_rows.to(tl.float32)
    if casting_mode == _CASTING_MODE_NONE:
        eps = tl.cast(eps, S_dtype)
        offset = tl.cast(offset, S_dtype)
    else:
        eps = tl.cast(eps, tl.float32)
        offset = tl.cast(offset, tl.float32)

    mean_square = tl.sum(S_rows * S_rows, axis=1) / n_cols
    rstd = rsqrt(mean_square + eps)
    tl.store(RSTD_ptr + row_idx * RSTD_row_stride, rstd, mask=row_mask)

    S_rows = S_rows * rstd[:, None]
    if casting_mode == _CASTING_MODE_LLAMA:
        S_rows = S_rows.to(S_dtype)
    Y_rows = S_rows * (offset + W_row)[None, :]
    if casting_mode == _CASTING_MODE_GEMMA:
        Y_rows = Y_rows.to(S_dtype)
    tl.store(Y_ptr + row_idx[:, None] * Y_row_stride + col_offsets[None, :], Y_rows, mask=mask)


def _block_settings(BLOCK_SIZE):
    """Rows per program and warps for the block kernel: about 4096 elements per program, at most 16 rows."""
    block_row = max(1, min(16, 4096 // BLOCK_SIZE))
    return block_row, 4
# --- patch: kernel end ---


def rows_per_program(n_cols: int) -> int:
    return _block_settings(triton.next_power_of_2(n_cols))[0]


def block_forward(X, R, W, eps, offset=0.0, casting_mode="llama"):
    """Launch the block kernel: X, R [..., H], W [H] -> (Y, S, RSTD), as Liger's forward returns them."""
    mode = CASTING_MODES[casting_mode] if isinstance(casting_mode, str) else casting_mode
    shape = X.shape
    n_cols = shape[-1]
    X2, R2 = X.reshape(-1, n_cols).contiguous(), R.reshape(-1, n_cols).contiguous()
    n_rows = X2.shape[0]
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    BLOCK_ROW, num_warps = _block_settings(BLOCK_SIZE)
    Y = torch.empty_like(X2)
    S = torch.empty_like(X2)
    RSTD = torch.empty(n_rows, dtype=torch.float32 if mode in (0, 1) else X.dtype, device=X.device)
    _block_fused_add_rms_norm_forward_kernel[(triton.cdiv(n_rows, BLOCK_ROW),)](
        Y, Y.stride(0), S, S.stride(0), X2, X2.stride(0), R2, R2.stride(0), W, RSTD, RSTD.stride(0),
        n_rows, n_cols, eps, offset, mode, BLOCK_SIZE=BLOCK_SIZE, BLOCK_ROW=BLOCK_ROW, num_warps=num_warps,
    )
    return Y.view(shape), S.view(shape), RSTD


def patched_fused_add_rms_norm(X, R, W, eps, offset=0.0, casting_mode="llama"):
    """(Y, S) as Liger's forward with the patch applied: the block kernel for narrow rows, Liger's own row
    kernel (unchanged by the patch) otherwise."""
    if rows_per_program(X.shape[-1]) > 1:
        Y, S, _ = block_forward(X, R, W, eps, offset, casting_mode)
        return Y, S
    from liger_kernel.ops.fused_add_rms_norm import fused_add_rms_norm_forward

    Y, S = fused_add_rms_norm_forward(X, R, W, eps, offset, casting_mode)[:2]
    return Y, S
