"""FlashAttention forward in Triton: online softmax over key blocks, O and the log-sum-exp out.

    q: [B, H, Sq, D]   k, v: [B, Hkv, Sk, D] (Hkv divides H: GQA/MQA)   ->   o: [B, H, Sq, D], lse: [B·H, Sq] fp32

One program owns BLOCK_M query rows of one (batch, head) and walks the key blocks it can see. Scores stay in
fp32 and in log2 units (s₂ = q·k · scale · log2 e), so the softmax uses exp2 and the scale folds into one FMA.
``lse`` is stored in the same log2 units (m + log2 l); the backward recomputes P = exp2(s₂ − lse).

Causal attention is aligned bottom-right as in FlashAttention-2: query i sees key j iff j ≤ i + (Sk − Sq). The
key range of a query block splits in two stages: blocks every row sees in full (no mask, no bounds check)
and the diagonal/ragged-tail blocks (mask). Rows that see no key at all (causal with Sq > Sk) give O = 0 and
lse = +inf, which makes their P, and so their gradients, exactly zero.

The lengths, head count and group size are not specialised on (``do_not_specialize``): one binary per
(dtype, head dim, causal, config) serves every shape, so the bench and tests compile each kernel once. They only
feed loop bounds and row offsets, where divisibility buys nothing (D is a constexpr).

Tensors reach the kernel as TMA tensor descriptors over the flattened [rows, D] view; a block that runs past a
head's last row reads the next head's rows (or TMA's zero fill at the tensor's end), which the mask removes,
and O is stored with plain masked stores so a ragged tail never writes into the next head.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .blocks import _key_ranges, _query_block, _visible

LOG2E = 1.4426950408889634


@triton.jit
def _fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, lo, hi, offs_m, qk_scale, seqlen_k, diag,
               BLOCK_N: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
               WARP_SPECIALIZE: tl.constexpr):
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        k = desc_k.load([kv_row0 + start_n, 0])
        qk = tl.dot(q, k.T, input_precision=PRECISION)
        if MASK:
            keep = _visible(offs_m, start_n + offs_n0, seqlen_k, diag, CAUSAL)
            s = tl.where(keep, qk * qk_scale, -float("inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            # A row with no visible key yet keeps m = -inf; subtract 0 instead so exp2 gives 0, not NaN.
            m_sub = tl.where(m_new == -float("inf"), 0.0, m_new)
            p = tl.math.exp2(s - m_sub[:, None])
            alpha = tl.math.exp2(m_i - m_sub)
        else:
            # qk_scale > 0 (checked on the host), so max(qk)·scale = max(qk·scale): one multiply per row.
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            p = tl.math.exp2(qk * qk_scale - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([kv_row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit(do_not_specialize=["seqlen_q", "seqlen_k", "num_heads", "group"])
def _attn_fwd_kernel(desc_q, desc_k, desc_v, Out, LSE, qk_scale, seqlen_q, seqlen_k, num_heads, group,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, PRECISION: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    # grid: (cdiv(Sq, BLOCK_M), B·H), causal blocks in reverse (blocks.py)
    bh, start_m, q_row0, kv_row0, diag = _query_block(seqlen_q, seqlen_k, num_heads, group, BLOCK_M, CAUSAL)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    q = desc_q.load([q_row0 + start_m, 0])

    full_end, hi = _key_ranges(start_m, diag, seqlen_k, BLOCK_M, BLOCK_N, CAUSAL)
    # Warp specialisation (an experimental config) applies to the long unmasked loop only.
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, 0, full_end, offs_m, qk_scale,
                               seqlen_k, diag, BLOCK_N, False, CAUSAL, PRECISION, WARP_SPECIALIZE)
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, full_end, hi, offs_m, qk_scale,
                               seqlen_k, diag, BLOCK_N, True, CAUSAL, PRECISION, False)

    empty = l_i == 0.0
    o = acc / tl.where(empty, 1.0, l_i)[:, None]
    lse = tl.where(empty, float("inf"), m_i + tl.math.log2(tl.where(empty, 1.0, l_i)))
    row_ok = offs_m < seqlen_q
    tl.store(LSE + bh.to(tl.int64) * seqlen_q + offs_m, lse, mask=row_ok)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = (q_row0 + offs_m).to(tl.int64)
    tl.store(Out + rows[:, None] * HEAD_DIM + offs_d[None, :], o.to(Out.dtype.element_ty), mask=row_ok[:, None])
