"""Fused linear + cross-entropy: loss = CE(x @ W^T, target), with the gradients computed in the forward pass and
the [T, V] logits never held in full.

Per chunk of C token rows (x_c: [C, d], W: [V, d], buffer L: [C, V] in the weight dtype, reused):
    L      = x_c @ W^T                    cuBLAS (torch.mm into the buffer)
    L      = dCE/dlogits, loss_rows[c]    one Triton program per row: online max/sum over V, then the gradient
                                          softmax - (1-eps)*onehot - eps/V, scaled by 1/n_valid, written in place
    dx_c   = L @ W                        cuBLAS, straight into grad_x's rows
    dW    += L^T @ x_c                    cuBLAS (the first chunk writes, the rest accumulate with beta=1)
The backward only scales the saved gradients by the incoming grad (a no-op when it is 1, the usual case).

Schedule (ChunkPlan): from 512 rows the dW update runs on a second stream beside dX (both only read L);
from 1024 rows the ignored tokens are compacted away first, so padding costs no GEMM work. Both thresholds
are measured (session 2, round 1): below them each helps nothing or costs more than it saves. Below
HEAD_MAX_ROWS the first min(T, d) tokens skip the chunks altogether: they are done in grad_W's own storage
(linear_cross_entropy_head.py), and the chunks take only the rest.

Chunk size, from the memory budget. The only memory beyond the outputs (grad_W: V*d, grad_x: T*d) is the
[C, V] buffer, and the GEMMs want C large: each chunk's dW += L^T x_c reads and writes all of dW (2*V*d*2 bytes)
for 2*C*V*d FLOPs, about C/2 FLOP/byte, so below the H200's ridge point (767 TFLOP/s / 4.16 TB/s = 184
FLOP/byte, C = 384) that update is memory-bound; and cuBLAS at M = C runs below its large-GEMM rate well above
that (round 1 on the H200, T=8192 d=4096 V=128256: 476, 578, 601, 653 TFLOP/s end to end at C = 256,
512, 1024, 2048). So the default budget is half of grad_W (C*V <= V*d/2, C = d/2 = 2048 rows at d = 4096):
peak extra memory stays within 1.5x of the gradients every implementation must return, half of what
torch.compile's full-size logits cost. ``max_chunk_bytes`` lowers it (Liger's rule, a buffer no bigger than x,
gives C = 256 here). Why no chunk size gives both torch.compile's time and Liger's memory: at 256 rows the
32 dW updates each read and write all of dW for a K = 256 product, and that update alone takes longer than
the chunk's two compute-bound GEMMs (measured apart in tune.py lce; the README has the curve).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ._common import _online_lse_step
from .linear_cross_entropy_head import VOCAB_CHUNK, head_in_grad_w

# Schedule thresholds (ChunkPlan.auto), from the H200 sweep at the Llama-3 head (tune.py lce, session 2
# round 1, evidence/): the two-stream overlap gained nothing at 256 rows (at that M each cuBLAS kernel fills
# the GPU alone) and most at 512; skipping ignored tokens lost at 240-496 rows (gather, scatter and the
# shorter chunk cost more than 5% of the GEMMs saves) and won from 1024.
OVERLAP_MIN_ROWS = 512
SKIP_IGNORED_MIN_ROWS = 1024
# The head (first min(T, d) tokens in grad_W's storage) pays when the chunks are small: it swaps their K = C
# updates of grad_W for three full-size GEMMs and no buffer. Measured (tune.py lce, evidence/2026-12-03-tune-lce.log,
# T = 8192): 256-row chunks 54.2 -> 47.5-48.7 ms with it; at 512 rows a tie; at 1024 and 2048 rows it costs
# 2 ms (those chunks already update grad_W at a good rate, and skip the padding the head computes).
HEAD_MAX_ROWS = 256
BLOCK_V = 4096  # logits per loop step of the CE kernel: 8 KiB of bf16, 16 elements per thread at 8 warps


@triton.jit
def _ce_grad_kernel(logits_ptr, target_ptr, idx_ptr, loss_ptr, n_valid_ptr, n_cols, ignore_index, smoothing,
                    HAS_IDX: tl.constexpr, HAS_SMOOTHING: tl.constexpr, BLOCK: tl.constexpr):
    """One row: loss_ptr[row] = loss / n_valid; the row of logits is overwritten by dloss/dlogits.
    HAS_IDX: row r of the chunk is token idx_ptr[r] (compacted rows), so its target is target_ptr[idx[r]]."""
    row = tl.program_id(0)
    base = logits_ptr + row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    if HAS_IDX:
        target = tl.load(target_ptr + tl.load(idx_ptr + row))
    else:
        target = tl.load(target_ptr + row)
    out_ty = logits_ptr.dtype.element_ty
    if target == ignore_index:
        for off in range(0, n_cols, BLOCK):
            tl.store(base + off + cols, tl.zeros((BLOCK,), dtype=out_ty), mask=off + cols < n_cols)
        tl.store(loss_ptr + row, 0.0)
    else:
        scale = 1.0 / tl.load(n_valid_ptr).to(tl.float32)
        # Pass 1: per-lane running max and sum of exp (one rescale per step, no cross-lane work in the loop).
        m = tl.full((BLOCK,), -1e30, dtype=tl.float32)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        zsum = tl.zeros((BLOCK,), dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            mask = off + cols < n_cols
            z = tl.load(base + off + cols, mask=mask, other=float("-inf")).to(tl.float32)
            m, acc, zsum = _online_lse_step(m, acc, zsum, z, mask, HAS_SMOOTHING)
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


@triton.jit
def _move_rows_kernel(src_ptr, dst_ptr, idx_ptr, n_cols, GATHER: tl.constexpr, BLOCK: tl.constexpr):
    """GATHER: dst[r] = src[idx[r]]; else (scatter) dst[idx[r]] = src[r]. Grid: (rows, cdiv(n_cols, BLOCK))."""
    r = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    i = tl.load(idx_ptr + r).to(tl.int64)
    if GATHER:
        v = tl.load(src_ptr + i * n_cols + cols, mask=mask)
        tl.store(dst_ptr + r.to(tl.int64) * n_cols + cols, v, mask=mask)
    else:
        v = tl.load(src_ptr + r.to(tl.int64) * n_cols + cols, mask=mask)
        tl.store(dst_ptr + i * n_cols + cols, v, mask=mask)


def _move_rows(src: torch.Tensor, dst: torch.Tensor, idx: torch.Tensor, gather: bool) -> None:
    n_rows, n_cols = idx.numel(), src.shape[1]
    if n_rows:
        _move_rows_kernel[(n_rows, triton.cdiv(n_cols, 2048))](src, dst, idx, n_cols, GATHER=gather, BLOCK=2048,
                                                               num_warps=4)


@dataclass(frozen=True)
class ChunkPlan:
    """How the T tokens are cut and scheduled. ``rows``: tokens per chunk (the [rows, V] buffer).
    ``overlap``: run each chunk's dW update on a second stream while dX runs on the first (dW += G^T x_c
    is memory-bound at small chunks, dX = G W compute-bound: together they can fill both HBM and the tensor
    cores). ``skip_ignored``: compact the non-ignored tokens first, so padding rows cost no GEMM work (this
    gathers each chunk's x rows and scatters its dX rows: two [rows, d] buffers beside the logits buffer).
    ``head``: the first min(T, d) tokens go through grad_W's storage instead (no buffer, full-size GEMMs)."""

    rows: int
    overlap: bool = False
    skip_ignored: bool = False
    ce_warps: int = 8
    head: bool = False

    @staticmethod
    def auto(n_tokens: int, vocab: int, hidden: int, elem_bytes: int, max_chunk_bytes: int | None = None,
             chunk: int | None = None, overlap: bool | None = None, skip_ignored: bool | None = None,
             ce_warps: int = 8, head: bool | None = None) -> ChunkPlan:
        """Rows from ``chunk`` or the budget; each schedule switch, where not given, from the thresholds above.
        Skipping is decided on the rows without its buffers; under a budget the rows then shrink to fit them."""
        rows = chunk or chunk_rows(n_tokens, vocab, hidden, elem_bytes, max_chunk_bytes)
        if skip_ignored is None:
            skip_ignored = rows >= SKIP_IGNORED_MIN_ROWS
        if skip_ignored and chunk is None:
            rows = chunk_rows(n_tokens, vocab, hidden, elem_bytes, max_chunk_bytes, skip_ignored=True)
        if overlap is None:
            overlap = rows >= OVERLAP_MIN_ROWS
        if head is None:
            head = rows <= HEAD_MAX_ROWS and rows < min(n_tokens, hidden)
        return ChunkPlan(rows, overlap, skip_ignored, ce_warps, head)


def chunk_rows(n_tokens: int, vocab: int, hidden: int, elem_bytes: int,
               max_chunk_bytes: int | None = None, skip_ignored: bool = False) -> int:
    """Token rows per chunk: the largest power of two <= hidden/2 (buffer <= half of grad_W), lowered to fit
    ``max_chunk_bytes`` (in multiples of 16 rows, whole GEMM tiles, at least 16) and never above n_tokens.
    The budget covers every per-chunk buffer: the [rows, V] logits, plus the gathered x rows and the dX rows
    ([rows, d] each) when ignored tokens are skipped."""
    rows = 16
    while rows * 2 <= hidden // 2:
        rows *= 2
    if max_chunk_bytes is not None:
        per_row = (vocab + (2 * hidden if skip_ignored else 0)) * elem_bytes
        cap = max_chunk_bytes // per_row
        rows = min(rows, max(16, cap // 16 * 16))
    return max(1, min(rows, n_tokens))


_SIDE_STREAMS: dict = {}


def _side_stream(device: torch.device):
    """One long-lived second stream per device: a new stream per call would also get a new cuBLAS workspace
    per call (torch keys the workspace by stream)."""
    key = device.index if device.index is not None else torch.cuda.current_device()
    if key not in _SIDE_STREAMS:
        _SIDE_STREAMS[key] = torch.cuda.Stream(device=device)
    return _SIDE_STREAMS[key]


def linear_cross_entropy_fwd_bwd(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, *,
                                 ignore_index: int = -100, label_smoothing: float = 0.0,
                                 max_chunk_bytes: int | None = None, chunk: int | None = None,
                                 ce_warps: int = 8, overlap: bool | None = None,
                                 skip_ignored: bool | None = None, head: bool | None = None,
                                 vocab_chunk: int | None = None):
    """Mean cross-entropy of x @ weight^T against target, with its gradients.

    x: [T, d]; weight: [V, d] (same dtype); target: [T] int64 with ignore_index for padding.
    Returns (loss: fp32 scalar, grad_x: [T, d], grad_weight: [V, d]) for d(loss) = 1.
    """
    if x.dim() != 2 or weight.dim() != 2 or x.shape[1] != weight.shape[1]:
        raise ValueError(f"x {tuple(x.shape)} and weight {tuple(weight.shape)} do not chain")
    if x.dtype != weight.dtype:
        raise ValueError(f"x is {x.dtype} but weight is {weight.dtype}")
    if target.shape != x.shape[:1]:
        raise ValueError(f"target {tuple(target.shape)} does not match x's {x.shape[0]} tokens")
    x = x.contiguous()
    weight = weight.contiguous()
    target = target.contiguous()
    n_tokens, hidden = x.shape
    vocab = weight.shape[0]
    plan = ChunkPlan.auto(n_tokens, vocab, hidden, x.element_size(), max_chunk_bytes, chunk, overlap, skip_ignored,
                          ce_warps, head)
    overlap = plan.overlap and x.is_cuda
    skip_ignored = plan.skip_ignored
    n_head = min(n_tokens, hidden) if plan.head else 0
    # Over ALL tokens, on the device (the kernels read it: no host sync); at least 1, so that a batch of only
    # padding gives loss 0 rather than 0/0.
    n_valid = (target != ignore_index).sum().clamp_(min=1)
    idx = None
    if skip_ignored:
        # One host sync (the count sizes the loop); made before any buffer exists, so its scratch is not on top.
        idx = (target[n_head:] != ignore_index).nonzero().view(-1) + n_head
        n_rows = idx.numel()
    else:
        n_rows = n_tokens - n_head
    loss_rows = torch.zeros(n_head + max(n_rows, 1), dtype=torch.float32, device=x.device)
    grad_x = torch.zeros_like(x) if skip_ignored else torch.empty_like(x)  # skipped: ignored rows stay 0
    grad_w = torch.empty_like(weight) if n_head or n_rows else torch.zeros_like(weight)
    if n_head:
        head_in_grad_w(x[:n_head], weight, target[:n_head], n_valid, grad_w, grad_x[:n_head], loss_rows[:n_head],
                       ignore_index=ignore_index, smoothing=float(label_smoothing),
                       vocab_chunk=vocab_chunk or VOCAB_CHUNK)
    if n_rows:
        _chunks(x, weight, target, idx, n_head, n_rows, plan.rows, overlap, plan.ce_warps, n_valid, grad_x, grad_w,
                loss_rows[n_head:], first_writes=n_head == 0, ignore_index=ignore_index,
                smoothing=float(label_smoothing))
    return loss_rows.sum(), grad_x, grad_w


def _chunks(x, weight, target, idx, first_token, n_rows, rows, overlap, ce_warps, n_valid, grad_x, grad_w,
            loss_rows, *, first_writes, ignore_index, smoothing):
    """The chunk loop over n_rows tokens: those in idx (compacted, skip_ignored) or x[first_token:]. Accumulates
    into grad_w, except that the first chunk writes it when ``first_writes`` (so it is never zero-filled)."""
    vocab, hidden = weight.shape
    skip_ignored = idx is not None
    rows = max(1, min(rows, n_rows))
    buf = torch.empty((rows, vocab), dtype=x.dtype, device=x.device)
    if skip_ignored:
        x_rows = torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
        dx_rows = torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
    main = torch.cuda.current_stream(x.device) if overlap else None
    side = _side_stream(x.device) if overlap else None
    for start in range(0, n_rows, rows):
        stop = min(start + rows, n_rows)
        n = stop - start
        logits = buf[:n]
        if skip_ignored:
            idx_c = idx[start:stop]
            x_c = x_rows[:n]
            _move_rows(x, x_c, idx_c, gather=True)
        else:
            idx_c, x_c = None, x[first_token + start:first_token + stop]
        torch.mm(x_c, weight.t(), out=logits)
        _ce_grad_kernel[(n,)](logits, target if skip_ignored else target[first_token + start:first_token + stop],
                              idx_c if skip_ignored else target, loss_rows[start:stop], n_valid, vocab,
                              ignore_index, smoothing, HAS_IDX=skip_ignored, HAS_SMOOTHING=smoothing > 0,
                              BLOCK=BLOCK_V, num_warps=ce_warps)
        if overlap:
            side.wait_stream(main)  # the gradient chunk is ready
            ctx = torch.cuda.stream(side)
        else:
            ctx = contextlib.nullcontext()
        with ctx:
            if start == 0 and first_writes:
                torch.mm(logits.t(), x_c, out=grad_w)  # no zero-fill and no read of dW on the first chunk
            else:
                grad_w.addmm_(logits.t(), x_c)
        if skip_ignored:
            torch.mm(logits, weight, out=dx_rows[:n])
            _move_rows(dx_rows[:n], grad_x, idx_c, gather=False)
        else:
            torch.mm(logits, weight, out=grad_x[first_token + start:first_token + stop])
        if overlap:
            main.wait_stream(side)  # the next chunk overwrites the buffer (and x_rows) that dW reads


class LinearCrossEntropyFunction(torch.autograd.Function):
    """(x, weight, target) -> mean CE loss; gradients are made in forward and only scaled in backward."""

    @staticmethod
    def forward(ctx, x, weight, target, ignore_index=-100, label_smoothing=0.0, max_chunk_bytes=None,
                plan_kw=None):
        loss, grad_x, grad_w = linear_cross_entropy_fwd_bwd(
            x, weight, target, ignore_index=ignore_index, label_smoothing=label_smoothing,
            max_chunk_bytes=max_chunk_bytes, **(plan_kw or {}))
        ctx.save_for_backward(grad_x, grad_w)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grad_x, grad_w = ctx.saved_tensors
        # One host sync to skip scaling 1.1 GB of gradients by exactly 1 (the loss is usually the graph's root).
        if grad_loss.item() != 1.0:
            grad_x = grad_x * grad_loss.to(grad_x.dtype)
            grad_w = grad_w * grad_loss.to(grad_w.dtype)
        return grad_x, grad_w, None, None, None, None, None


def linear_cross_entropy(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, ignore_index: int = -100,
                         label_smoothing: float = 0.0, max_chunk_bytes: int | None = None, *,
                         chunk: int | None = None, overlap: bool | None = None,
                         skip_ignored: bool | None = None, head: bool | None = None) -> torch.Tensor:
    """``F.cross_entropy(x @ weight.T, target)`` (mean) without materialising the logits. ``chunk`` fixes the
    token rows per chunk (else from the budget); ``overlap``, ``skip_ignored`` and ``head`` as in ``ChunkPlan``
    (None: from the measured thresholds, ``ChunkPlan.auto``)."""
    plan_kw = {"chunk": chunk, "overlap": overlap, "skip_ignored": skip_ignored, "head": head}
    return LinearCrossEntropyFunction.apply(x, weight, target, ignore_index, label_smoothing, max_chunk_bytes,
                                            plan_kw)
