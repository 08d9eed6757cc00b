"""Reference attention for checks: materialised softmax, chunked over heads so long sequences fit in memory.

``reference_attention(..., compute_dtype=torch.float32)`` is the fp32 truth (inputs upcast);
with ``compute_dtype=q.dtype`` it is PyTorch's own same-dtype math (scores, softmax and P·V each rounded to the
input dtype), the "lowp" side of FlashAttention's rule. Causal masks are aligned bottom-right (FlashAttention-2);
a query row that sees no key outputs zeros (and gets zero gradients).
"""
from __future__ import annotations

import math

import torch

# Scores materialised at once are capped near this many elements (fp32: 2 GiB), by chunking over heads.
CHUNK_ELEMENTS = 1 << 29


def causal_mask(seqlen_q: int, seqlen_k: int, device) -> torch.Tensor:
    """[Sq, Sk] bool, True where query i may attend key j: j <= i + (Sk - Sq)."""
    i = torch.arange(seqlen_q, device=device)[:, None]
    j = torch.arange(seqlen_k, device=device)[None, :]
    return j <= i + (seqlen_k - seqlen_q)


def _attend(q, k, v, causal: bool, scale: float) -> torch.Tensor:
    # q: [B, h, Sq, D]; k, v: [B, h, Sk, D] (KV heads already repeated for GQA)
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(~causal_mask(q.shape[2], k.shape[2], q.device), float("-inf"))
    p = torch.softmax(s, dim=-1)
    if causal:
        p = torch.nan_to_num(p, nan=0.0)  # rows with no visible key: softmax of all -inf
    return torch.matmul(p, v)


def _chunks(B: int, H: int, Hkv: int, Sq: int, Sk: int):
    """Yields KV-head ranges [lo, hi) such that the scores of their query heads stay under CHUNK_ELEMENTS."""
    group = H // Hkv
    per_kv_head = B * group * Sq * Sk
    step = max(1, CHUNK_ELEMENTS // max(per_kv_head, 1))
    for lo in range(0, Hkv, step):
        yield lo, min(Hkv, lo + step)


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                        scale: float | None = None, do: torch.Tensor | None = None,
                        compute_dtype: torch.dtype | None = None):
    """Returns out (and, if ``do`` is given, (out, dq, dk, dv)) computed in ``compute_dtype``
    (default float32). Inputs are never modified; GQA KV heads are repeated per group."""
    compute_dtype = compute_dtype or torch.float32
    B, H, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    group = H // Hkv
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    out = torch.empty(q.shape, device=q.device, dtype=compute_dtype)
    grads = None
    if do is not None:
        grads = (torch.empty(q.shape, device=q.device, dtype=compute_dtype),
                 torch.empty(k.shape, device=q.device, dtype=compute_dtype),
                 torch.empty(v.shape, device=q.device, dtype=compute_dtype))
    for lo, hi in _chunks(B, H, Hkv, Sq, Sk):
        qs = q[:, lo * group:hi * group].detach().to(compute_dtype)
        ks = k[:, lo:hi].detach().to(compute_dtype)
        vs = v[:, lo:hi].detach().to(compute_dtype)
        if do is None:
            with torch.no_grad():
                out[:, lo * group:hi * group] = _attend(qs, ks.repeat_interleave(group, 1),
                                                        vs.repeat_interleave(group, 1), causal, scale)
            continue
        qs.requires_grad_(True)
        ks.requires_grad_(True)
        vs.requires_grad_(True)
        with torch.enable_grad():
            o = _attend(qs, ks.repeat_interleave(group, 1), vs.repeat_interleave(group, 1), causal, scale)
            dq, dk, dv = torch.autograd.grad(o, (qs, ks, vs), do[:, lo * group:hi * group].to(compute_dtype))
        out[:, lo * group:hi * group] = o.detach()
        grads[0][:, lo * group:hi * group] = dq
        grads[1][:, lo:hi] = dk
        grads[2][:, lo:hi] = dv
    if do is None:
        return out
    return (out, *grads)
