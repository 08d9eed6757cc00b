"""Linear + cross-entropy for up to d tokens with no logits buffer at all: grad_W's own storage holds them.

Why it fits: grad_W is [V, d]; the transposed logits of Th <= d tokens, [V, Th], take no more elements. So
    Lt     = W @ x_h^T                 cuBLAS, written into grad_W's storage (as a [V, Th] matrix)
    Lt     = dCE/dlogits^T, loss       two Triton kernels: per-column statistics over slices of V, then the
                                       gradient in place (the column is the token)
    dx_h   = Lt^T @ W                  cuBLAS, straight into grad_x's rows
    dW     = Lt @ x_h                  cuBLAS, one vocab chunk at a time, from the LAST chunk down
The last step is the trick. Row v of grad_W starts at element v*d; row v of Lt at v*Th <= v*d. Going down
from the top, every Lt row still to be read (< v1) ends at v1*Th, so a chunk's result can overwrite
grad_W[v0:v1] directly once v1*Th <= v0*d; otherwise (always when Th == d) it goes through a [chunk, d]
buffer and a copy. The three GEMMs are each one large product at cuBLAS's full rate (no K = C updates of
grad_W), and the only scratch is that chunk buffer. The chunked path (linear_cross_entropy.py) takes the
tokens after the first d, accumulating into the grad_W this leaves.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import _online_lse_step

# grad_W rows per product in the last step: [2048, d] outputs, about 2 waves of tiles at d = 4096. Measured
# against 1024 and 4096 (evidence/2026-12-03-tune-lce.log): no size wins at both T = 8192 and T = 4096, and 4096
# would make the buffer as large as Liger's whole chunk at T = 4096.
VOCAB_CHUNK = 2048
# Column-CE launch settings (tile rows x token columns, warps): the sweep in evidence/2026-12-03-tune-lce-head.log
# found nothing 5% better than these (1.04-1.35 ms for both kernels at T = d = 4096, V = 128256).
STATS_BLOCK_V, STATS_BLOCK_T, STATS_WARPS = 32, 64, 8  # 128-byte rows of bf16 along the tokens per tile row
GRAD_BLOCK_V, GRAD_BLOCK_T, GRAD_WARPS = 32, 128, 8


@triton.jit
def _col_stats_kernel(lt_ptr, stats_ptr, n_rows, n_cols, rows_per_split, n_splits,
                      HAS_SMOOTHING: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_T: tl.constexpr):
    """Columns [pid0*BLOCK_T, +BLOCK_T) of lt [n_rows, n_cols], over rows [pid1*rows_per_split, +rows_per_split):
    stats[0, s, j] = max, stats[1, s, j] = sum exp(z - max), stats[2, s, j] = sum z (smoothing only)."""
    cols = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    split = tl.program_id(1)
    cmask = cols < n_cols
    r0 = split * rows_per_split
    r1 = tl.minimum(r0 + rows_per_split, n_rows)
    # Per-lane running statistics, reduced over the rows once at the end (as in the row kernel).
    m = tl.full((BLOCK_V, BLOCK_T), -1e30, dtype=tl.float32)
    acc = tl.zeros((BLOCK_V, BLOCK_T), dtype=tl.float32)
    zsum = tl.zeros((BLOCK_V, BLOCK_T), dtype=tl.float32)
    for off in range(r0, r1, BLOCK_V):
        rows = off + tl.arange(0, BLOCK_V)
        mask = (rows < r1)[:, None] & cmask[None, :]
        z = tl.load(lt_ptr + rows.to(tl.int64)[:, None] * n_cols + cols[None, :], mask=mask,
                    other=float("-inf")).to(tl.float32)
        m, acc, zsum = _online_lse_step(m, acc, zsum, z, mask, HAS_SMOOTHING)
    m_col = tl.max(m, axis=0)
    s_col = tl.sum(acc * tl.exp(m - m_col[None, :]), axis=0)
    out = stats_ptr + split * n_cols + cols
    tl.store(out, m_col, mask=cmask)
    tl.store(out + n_splits * n_cols, s_col, mask=cmask)
    if HAS_SMOOTHING:
        tl.store(out + 2 * n_splits * n_cols, tl.sum(zsum, axis=0), mask=cmask)


@triton.jit
def _col_grad_kernel(lt_ptr, lse_ptr, target_ptr, n_valid_ptr, n_rows, n_cols, ignore_index, smoothing,
                     HAS_SMOOTHING: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_T: tl.constexpr):
    """lt[v, j] <- (softmax - (1-eps)*onehot - eps/V) / n_valid for token column j; 0 where j is ignored."""
    rows = tl.program_id(0) * BLOCK_V + tl.arange(0, BLOCK_V)
    cols = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    cmask = cols < n_cols
    mask = (rows < n_rows)[:, None] & cmask[None, :]
    ptrs = lt_ptr + rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    lse = tl.load(lse_ptr + cols, mask=cmask, other=0.0)
    target = tl.load(target_ptr + cols, mask=cmask, other=ignore_index)
    scale = 1.0 / tl.load(n_valid_ptr).to(tl.float32)
    z = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    g = tl.exp(z - lse[None, :])
    hit = rows[:, None] == target[None, :]
    if HAS_SMOOTHING:
        g = tl.where(hit, g - (1.0 - smoothing), g) - smoothing / n_rows
    else:
        g = tl.where(hit, g - 1.0, g)
    g = tl.where((target != ignore_index)[None, :], g * scale, 0.0)
    tl.store(ptrs, g.to(lt_ptr.dtype.element_ty), mask=mask)


def _ce_columns(lt: torch.Tensor, target: torch.Tensor, n_valid: torch.Tensor, loss_out: torch.Tensor,
                ignore_index: int, smoothing: float) -> None:
    """Loss per token (column of lt, divided by n_valid, 0 if ignored) into loss_out; lt becomes its gradient."""
    n_rows, n_cols = lt.shape
    col_blocks = triton.cdiv(n_cols, STATS_BLOCK_T)
    # Enough row slices for ~8 programs per SM on a 132-SM part when the tokens alone give few column blocks.
    n_splits = max(1, min(triton.cdiv(1024, col_blocks), triton.cdiv(n_rows, 4 * STATS_BLOCK_V)))
    rows_per_split = triton.cdiv(triton.cdiv(n_rows, n_splits), STATS_BLOCK_V) * STATS_BLOCK_V
    n_splits = triton.cdiv(n_rows, rows_per_split)
    stats = torch.empty((3, n_splits, n_cols), dtype=torch.float32, device=lt.device)
    _col_stats_kernel[(col_blocks, n_splits)](lt, stats, n_rows, n_cols, rows_per_split, n_splits,
                                              HAS_SMOOTHING=smoothing > 0, BLOCK_V=STATS_BLOCK_V,
                                              BLOCK_T=STATS_BLOCK_T, num_warps=STATS_WARPS)
    m = stats[0].max(dim=0).values
    lse = m + torch.log((stats[1] * torch.exp(stats[0] - m)).sum(dim=0))
    valid = target != ignore_index
    z_t = lt[target.clamp(0, n_rows - 1), torch.arange(n_cols, device=lt.device)].float()  # before lt is overwritten
    loss = lse - z_t
    if smoothing > 0:
        loss = (1.0 - smoothing) * loss + smoothing * (lse - stats[2].sum(dim=0) / n_rows)
    torch.div(torch.where(valid, loss, 0.0), n_valid, out=loss_out)
    grid = (triton.cdiv(n_rows, GRAD_BLOCK_V), triton.cdiv(n_cols, GRAD_BLOCK_T))
    _col_grad_kernel[grid](lt, lse, target, n_valid, n_rows, n_cols, ignore_index, float(smoothing),
                           HAS_SMOOTHING=smoothing > 0, BLOCK_V=GRAD_BLOCK_V, BLOCK_T=GRAD_BLOCK_T,
                           num_warps=GRAD_WARPS)


def head_in_grad_w(x_h: torch.Tensor, weight: torch.Tensor, target_h: torch.Tensor, n_valid: torch.Tensor,
                   grad_w: torch.Tensor, grad_x_h: torch.Tensor, loss_h: torch.Tensor, *, ignore_index: int,
                   smoothing: float, vocab_chunk: int = VOCAB_CHUNK) -> None:
    """Tokens x_h [Th, d] (Th <= d): writes grad_w = their dW (all of it), grad_x_h and loss_h (per token,
    already divided by n_valid: the count over ALL tokens, a device tensor, at least 1)."""
    n_head, hidden = x_h.shape
    vocab = weight.shape[0]
    if n_head > hidden:
        raise ValueError(f"{n_head} tokens do not fit grad_W's storage: at most d = {hidden}")
    if not (grad_w.is_contiguous() and grad_w.shape == weight.shape and grad_w.dtype == x_h.dtype):
        raise ValueError("grad_w must be a contiguous [V, d] tensor of x's dtype")
    lt = grad_w.view(-1)[: vocab * n_head].view(vocab, n_head)
    torch.mm(weight, x_h.t(), out=lt)
    _ce_columns(lt, target_h, n_valid, loss_h, ignore_index, smoothing)
    torch.mm(lt.t(), weight, out=grad_x_h)
    buf = None
    for v0 in reversed(range(0, vocab, vocab_chunk)):
        v1 = min(v0 + vocab_chunk, vocab)
        if v1 * n_head <= v0 * hidden:  # grad_W[v0:v1] lies past every Lt row this and later products read
            torch.mm(lt[v0:v1], x_h, out=grad_w[v0:v1])
        else:
            if buf is None:
                buf = torch.empty((min(vocab_chunk, vocab), hidden), dtype=x_h.dtype, device=x_h.device)
            torch.mm(lt[v0:v1], x_h, out=buf[: v1 - v0])
            grad_w[v0:v1].copy_(buf[: v1 - v0])
