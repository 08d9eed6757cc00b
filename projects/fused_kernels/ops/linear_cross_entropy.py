"""Fused linear + cross-entropy: loss = CE(x @ W^T, target), with the gradients computed in the forward pass and
the [T, V] logits never held in full.

Per chunk of C token rows (x_c: [C, d], W: [V, d], buffer L: [C, V] in the weight dtype, reused):
    L      = x_c @ W^T                    cuBLAS (torch.mm into the buffer)
    L      = dCE/dlogits, loss_rows[c]    one Triton program per row: online max/sum over V, then the gradient
                                          softmax - (1-eps)*onehot - eps/V, scaled by 1/n_valid, written in place
    dx_c   = L @ W                        cuBLAS, straight into grad_x's rows
    dW    += L^T @ x_c                    cuBLAS (the first chunk writes, the rest accumulate with beta=1)
The backward only scales the saved gradients by the incoming grad (a no-op when it is 1, the usual case).

Chunk size, from the memory budget. The only memory beyond the outputs (grad_W: V*d, grad_x: T*d) is the
[C, V] buffer, and the GEMMs want C large: each chunk's dW += L^T x_c reads and writes all of dW (2*V*d*2 bytes)
for 2*C*V*d FLOPs, about C/2 FLOP/byte, so below the H200's ridge point (767 TFLOP/s / 4.16 TB/s = 184
FLOP/byte, C = 384) that update is memory-bound; and cuBLAS at M = C runs below its large-GEMM rate well above
that (round 1 on the H200, T=8192 d=4096 V=128256: 476, 578, 601, 653 TFLOP/s end to end at C = 256,
512, 1024, 2048). So the default budget is half of grad_W (C*V <= V*d/2, C = d/2 = 2048 rows at d = 4096):
peak extra memory stays within 1.5x of the gradients every implementation must return, half of what
torch.compile's full-size logits cost. ``max_chunk_bytes`` lowers it (Liger's rule, a buffer no bigger than x,
gives C = 256 here).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_V = 4096  # logits per loop step of the CE kernel: 8 KiB of bf16, 16 elements per thread at 8 warps


@triton.jit
def _ce_grad_kernel(logits_ptr, target_ptr, loss_ptr, n_valid_ptr, n_cols, ignore_index, smoothing,
                    HAS_SMOOTHING: tl.constexpr, BLOCK: tl.constexpr):
    """One row: loss_ptr[row] = loss / n_valid; the row of logits is overwritten by dloss/dlogits."""
    row = tl.program_id(0)
    base = logits_ptr + row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    target = tl.load(target_ptr + row)
    out_ty = logits_ptr.dtype.element_ty
    if target == ignore_index:
        for off in range(0, n_cols, BLOCK):
            tl.store(base + off + cols, tl.zeros((BLOCK,), dtype=out_ty), mask=off + cols < n_cols)
        tl.store(loss_ptr + row, 0.0)
    else:
        scale = 1.0 / tl.load(n_valid_ptr).to(tl.float32)
        # Pass 1: per-lane running max and sum of exp (one rescale per step, no cross-lane work in the loop).
        # A finite floor instead of -inf keeps exp(m_old - m_new) defined for lanes that only saw padding.
        m = tl.full((BLOCK,), -1e30, dtype=tl.float32)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        zsum = tl.zeros((BLOCK,), dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            mask = off + cols < n_cols
            z = tl.load(base + off + cols, mask=mask, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, z)
            acc = acc * tl.exp(m - m_new) + tl.exp(z - m_new)
            m = m_new
            if HAS_SMOOTHING:
                zsum += tl.where(mask, z, 0.0)
        m_row = tl.max(m, axis=0)
        lse = m_row + tl.log(tl.sum(acc * tl.exp(m - m_row), axis=0))
        z_t = tl.load(base + target).to(tl.float32)
        # CE with smoothing eps: (1-eps) * (lse - z_t) + eps * (lse - mean(z))
        loss = lse - z_t
        if HAS_SMOOTHING:
            loss = (1.0 - smoothing) * loss + smoothing * (lse - tl.sum(zsum, axis=0) / n_cols)
        tl.store(loss_ptr + row, loss * scale)
        # Pass 2: the gradient, written over the logits it came from (same row, likely still in L2).
        for off in range(0, n_cols, BLOCK):
            mask = off + cols < n_cols
            z = tl.load(base + off + cols, mask=mask, other=0.0).to(tl.float32)
            g = tl.exp(z - lse)
            if HAS_SMOOTHING:
                g = g - smoothing / n_cols
                g = tl.where(off + cols == target, g - (1.0 - smoothing), g)
            else:
                g = tl.where(off + cols == target, g - 1.0, g)
            tl.store(base + off + cols, (g * scale).to(out_ty), mask=mask)


def chunk_rows(n_tokens: int, vocab: int, hidden: int, elem_bytes: int,
               max_chunk_bytes: int | None = None) -> int:
    """Token rows per chunk: the largest power of two <= hidden/2 (buffer <= half of grad_W), lowered to fit
    ``max_chunk_bytes`` (in multiples of 16 rows, whole GEMM tiles, at least 16) and never above n_tokens."""
    rows = 16
    while rows * 2 <= hidden // 2:
        rows *= 2
    if max_chunk_bytes is not None:
        cap = max_chunk_bytes // (vocab * elem_bytes)
        rows = min(rows, max(16, cap // 16 * 16))
    return max(1, min(rows, n_tokens))


def linear_cross_entropy_fwd_bwd(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, *,
                                 ignore_index: int = -100, label_smoothing: float = 0.0,
                                 max_chunk_bytes: int | None = None, chunk: int | None = None,
                                 ce_warps: int = 8):
    """Mean cross-entropy of x @ weight^T against target, with its gradients.

    x: [T, d]; weight: [V, d] (same dtype); target: [T] int64 with ignore_index for padding.
    Returns (loss: fp32 scalar, grad_x: [T, d], grad_weight: [V, d]) for d(loss) = 1.
    """
    if x.dim() != 2 or weight.dim() != 2 or x.shape[1] != weight.shape[1]:
        raise ValueError(f"x {tuple(x.shape)} and weight {tuple(weight.shape)} do not chain")
    if x.dtype != weight.dtype:
        raise ValueError(f"x is {x.dtype} but weight is {weight.dtype}")
    x = x.contiguous()
    weight = weight.contiguous()
    target = target.contiguous()
    n_tokens, hidden = x.shape
    vocab = weight.shape[0]
    chunk = chunk or chunk_rows(n_tokens, vocab, hidden, x.element_size(), max_chunk_bytes)
    buf = torch.empty((min(chunk, n_tokens), vocab), dtype=x.dtype, device=x.device)
    loss_rows = torch.empty(n_tokens, dtype=torch.float32, device=x.device)
    # Stays on the device: the kernel reads it, so no host sync is needed to scale by 1/n_valid.
    n_valid = (target != ignore_index).sum()
    grad_x = torch.empty_like(x)
    grad_w = torch.empty_like(weight)
    for start in range(0, n_tokens, chunk):
        stop = min(start + chunk, n_tokens)
        x_c, logits = x[start:stop], buf[: stop - start]
        torch.mm(x_c, weight.t(), out=logits)
        _ce_grad_kernel[(stop - start,)](logits, target[start:stop], loss_rows[start:stop], n_valid, vocab,
                                         ignore_index, float(label_smoothing),
                                         HAS_SMOOTHING=label_smoothing > 0, BLOCK=BLOCK_V, num_warps=ce_warps)
        torch.mm(logits, weight, out=grad_x[start:stop])
        if start == 0:
            torch.mm(logits.t(), x_c, out=grad_w)  # no zero-fill and no read of dW on the first chunk
        else:
            grad_w.addmm_(logits.t(), x_c)
    return loss_rows.sum(), grad_x, grad_w


class LinearCrossEntropyFunction(torch.autograd.Function):
    """(x, weight, target) -> mean CE loss; gradients are made in forward and only scaled in backward."""

    @staticmethod
    def forward(ctx, x, weight, target, ignore_index=-100, label_smoothing=0.0, max_chunk_bytes=None):
        loss, grad_x, grad_w = linear_cross_entropy_fwd_bwd(
            x, weight, target, ignore_index=ignore_index, label_smoothing=label_smoothing,
            max_chunk_bytes=max_chunk_bytes)
        ctx.save_for_backward(grad_x, grad_w)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grad_x, grad_w = ctx.saved_tensors
        # One host sync to skip scaling 1.1 GB of gradients by exactly 1 (the loss is usually the graph's root).
        if grad_loss.item() != 1.0:
            grad_x = grad_x * grad_loss.to(grad_x.dtype)
            grad_w = grad_w * grad_loss.to(grad_w.dtype)
        return grad_x, grad_w, None, None, None, None


def linear_cross_entropy(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, ignore_index: int = -100,
                         label_smoothing: float = 0.0, max_chunk_bytes: int | None = None) -> torch.Tensor:
    """``F.cross_entropy(x @ weight.T, target)`` (mean) without materialising the logits."""
    return LinearCrossEntropyFunction.apply(x, weight, target, ignore_index, label_smoothing, max_chunk_bytes)
