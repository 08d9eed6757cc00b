"""Triton paged-attention decode kernel (GQA): one query token per sequence against its paged K/V.

One program per (sequence, KV head). It loads the group's G query heads once ([G_PAD, D], G padded to 16 rows
so that ``tl.dot`` can use tensor cores — decode is memory-bound, the padding costs no bytes), then walks the
sequence's context BLOCK_N tokens at a time: each token's physical block comes from the block table
(``block_tables[seq, pos // BLOCK_SIZE]``), so a tile may span several cache blocks. Online softmax in fp32.

    q:            [B, H, D]
    k/v_cache:    [num_blocks, BLOCK_SIZE, H_kv, D]
    block_tables: [B, W] int32 — block_table: [seq, logical_block] -> physical_block
    context_lens: [B] int32 — tokens with K/V, the current one included; 0 gives a zero output (padding rows)
    out:          [B, H, D]

Bytes per call: q and out (2·B·H·D) plus every context token's K and V for every KV head — each K/V element is
read once per group, not once per query head, which is what GQA buys at decode.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .pdl import pdl_supported


@triton.jit
def _online_softmax_step(m_i, l_i, acc, s, v, PRECISION: tl.constexpr):
    """Fold one tile into the running softmax: s [G_PAD, BLOCK_N] fp32 scores (masked ones -inf), v [BLOCK_N, D].
    Returns the new (max, sum of exp, unnormalised output)."""
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp(m_i - m_new)
    p = tl.exp(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION).to(tl.float32)
    return m_new, l_i, acc


@triton.jit
def _paged_decode_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, context_lens_ptr, out_ptr, scale,
    stride_qb, stride_qh, stride_cb, stride_ct, stride_ch, stride_bt, stride_ob, stride_oh,
    GROUP: tl.constexpr, G_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr, PRECISION: tl.constexpr,
):
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    ctx = tl.load(context_lens_ptr + seq)
    offs_g = tl.arange(0, G_PAD)
    offs_d = tl.arange(0, HEAD_DIM)
    mask_g = offs_g < GROUP
    heads = kv_head * GROUP + offs_g
    q = tl.load(q_ptr + seq * stride_qb + heads[:, None] * stride_qh + offs_d[None, :], mask=mask_g[:, None], other=0.0)
    m_i = tl.full([G_PAD], float("-inf"), tl.float32)
    l_i = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, HEAD_DIM], tl.float32)
    for start in range(0, ctx, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < ctx
        block = tl.load(block_tables_ptr + seq * stride_bt + offs_n // BLOCK_SIZE, mask=mask_n, other=0)
        tok = block.to(tl.int64) * stride_cb + (offs_n % BLOCK_SIZE) * stride_ct + kv_head * stride_ch
        k = tl.load(k_cache_ptr + tok[:, None] + offs_d[None, :], mask=mask_n[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION).to(tl.float32) * scale  # [G_PAD, BLOCK_N]
        s = tl.where(mask_n[None, :], s, float("-inf"))
        v = tl.load(v_cache_ptr + tok[:, None] + offs_d[None, :], mask=mask_n[:, None], other=0.0)
        m_i, l_i, acc = _online_softmax_step(m_i, l_i, acc, s, v, PRECISION)
    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(out_ptr + seq * stride_ob + heads[:, None] * stride_oh + offs_d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=mask_g[:, None])


def paged_decode_triton(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                        block_tables: torch.Tensor, context_lens: torch.Tensor, scale: float,
                        out: torch.Tensor | None = None, block_n: int = 64) -> torch.Tensor:
    B, H, D = q.shape
    _, block_size, Hkv, _ = k_cache.shape
    if D & (D - 1) or D < 16:
        raise ValueError(f"head_dim {D}: the kernel needs a power of two >= 16")
    if k_cache.stride(-1) != 1 or q.stride(-1) != 1:
        raise ValueError("q and the caches need a contiguous last dimension")
    group = H // Hkv
    g_pad = max(16, triton.next_power_of_2(group))
    out = torch.empty_like(q) if out is None else out
    _paged_decode_kernel[(B, Hkv)](
        q, k_cache, v_cache, block_tables, context_lens, out, scale,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        block_tables.stride(0), out.stride(0), out.stride(1),
        GROUP=group, G_PAD=g_pad, HEAD_DIM=D, BLOCK_SIZE=block_size, BLOCK_N=block_n,
        PRECISION="ieee" if q.dtype == torch.float32 else "tf32",  # fp32 must not drop to TF32
        num_warps=4, num_stages=2,
    )
    return out


# -- decode with RoPE and the K/V store folded in ---------------------------------------------------------------
@triton.jit
def _past_tile(k_cache_ptr, v_cache_ptr, table_ptr, start, past, head_off, stride_cb, stride_ct,
               HALF: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_SIZE: tl.constexpr, BLOCK_N: tl.constexpr):
    """Context tokens [start, start + BLOCK_N) below ``past`` of one sequence and KV head: (mask, K's two
    rotate-half halves, V), each [BLOCK_N, ...], masked rows zero."""
    offs_n = start + tl.arange(0, BLOCK_N)
    mask_n = offs_n < past
    blk = tl.load(table_ptr + offs_n // BLOCK_SIZE, mask=mask_n, other=0)
    tok = blk.to(tl.int64) * stride_cb + (offs_n % BLOCK_SIZE) * stride_ct + head_off
    offs_h = tl.arange(0, HALF)
    kc1 = tl.load(k_cache_ptr + tok[:, None] + offs_h[None, :], mask=mask_n[:, None], other=0.0)
    kc2 = tl.load(k_cache_ptr + tok[:, None] + HALF + offs_h[None, :], mask=mask_n[:, None], other=0.0)
    v = tl.load(v_cache_ptr + tok[:, None] + tl.arange(0, HEAD_DIM)[None, :], mask=mask_n[:, None], other=0.0)
    return mask_n, kc1, kc2, v


@triton.jit
def _rope_paged_decode_kernel(
    qkv_ptr, pos_ptr, cos_sin_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, context_lens_ptr, out_ptr, scale,
    stride_qkv, stride_cb, stride_ct, stride_ch, stride_bt, stride_ob, stride_oh,
    H: tl.constexpr, HKV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, PRECISION: tl.constexpr, PDL: tl.constexpr,
):
    # Like _paged_decode_kernel, but q, k, v come unrotated from the fused QKV projection. The program rotates
    # its group's q heads and its K head, writes K and V of the current token into the paged cache, attends over
    # the context before it from the cache, and adds the current token from registers: one kernel instead of
    # rope_store + attention. Scores are split in rotate-half halves: q·k = q[:D/2]·k[:D/2] + q[D/2:]·k[D/2:].
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    HALF: tl.constexpr = HEAD_DIM // 2
    dtype = qkv_ptr.dtype.element_ty
    offs_g = tl.arange(0, G_PAD)
    offs_h = tl.arange(0, HALF)
    offs_d = tl.arange(0, HEAD_DIM)
    # Under PDL the loads up to the wait overlap the QKV projection still running. They read only what the
    # previous decode step left (position, context length, block table, RoPE table, the past tokens' K/V): all
    # written before this step's first kernel, a plain launch, began. Only qkv is the previous kernel's output.
    ctx = tl.load(context_lens_ptr + seq)
    pos = tl.load(pos_ptr + seq).to(tl.int64)
    cos = tl.load(cos_sin_ptr + pos * HEAD_DIM + offs_h)
    sin = tl.load(cos_sin_ptr + pos * HEAD_DIM + HALF + offs_h)
    block = tl.load(block_tables_ptr + seq * stride_bt + pos // BLOCK_SIZE).to(tl.int64)
    past = ctx - 1  # tokens before the current one, read from the cache
    mask_n, kc1, kc2, v = _past_tile(k_cache_ptr, v_cache_ptr, block_tables_ptr + seq * stride_bt, 0, past,
                                     kv_head * stride_ch, stride_cb, stride_ct, HALF, HEAD_DIM, BLOCK_SIZE, BLOCK_N)
    if PDL:
        tl.extra.cuda.gdc_wait()
    mask_g = offs_g < GROUP
    heads = kv_head * GROUP + offs_g
    row = qkv_ptr + seq.to(tl.int64) * stride_qkv
    q_ptrs = row + heads[:, None] * HEAD_DIM + offs_h[None, :]
    qa = tl.load(q_ptrs, mask=mask_g[:, None], other=0.0).to(tl.float32)
    qb = tl.load(q_ptrs + HALF, mask=mask_g[:, None], other=0.0).to(tl.float32)
    q1 = (qa * cos[None, :] - qb * sin[None, :]).to(dtype)  # rounded where rope_store rounds q
    q2 = (qb * cos[None, :] + qa * sin[None, :]).to(dtype)
    k_row = row + (H + kv_head) * HEAD_DIM
    ka = tl.load(k_row + offs_h).to(tl.float32)
    kb = tl.load(k_row + HALF + offs_h).to(tl.float32)
    k1 = (ka * cos - kb * sin).to(dtype)
    k2 = (kb * cos + ka * sin).to(dtype)
    v_cur = tl.load(row + (H + HKV + kv_head) * HEAD_DIM + offs_d)
    slot = block * stride_cb + (pos % BLOCK_SIZE) * stride_ct + kv_head * stride_ch
    tl.store(k_cache_ptr + slot + offs_h, k1)
    tl.store(k_cache_ptr + slot + HALF + offs_h, k2)
    tl.store(v_cache_ptr + slot + offs_d, v_cur)

    m_i = tl.full([G_PAD], float("-inf"), tl.float32)
    l_i = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, HEAD_DIM], tl.float32)
    for start in range(0, past, BLOCK_N):
        if start > 0:  # the first tile was loaded before the wait
            mask_n, kc1, kc2, v = _past_tile(k_cache_ptr, v_cache_ptr, block_tables_ptr + seq * stride_bt, start,
                                             past, kv_head * stride_ch, stride_cb, stride_ct, HALF, HEAD_DIM,
                                             BLOCK_SIZE, BLOCK_N)
        s = tl.dot(q1, tl.trans(kc1), input_precision=PRECISION).to(tl.float32)
        s += tl.dot(q2, tl.trans(kc2), input_precision=PRECISION).to(tl.float32)
        s = tl.where(mask_n[None, :], s * scale, float("-inf"))
        m_i, l_i, acc = _online_softmax_step(m_i, l_i, acc, s, v, PRECISION)
    s_cur = (tl.sum(q1.to(tl.float32) * k1.to(tl.float32)[None, :], 1)
             + tl.sum(q2.to(tl.float32) * k2.to(tl.float32)[None, :], 1)) * scale
    m_new = tl.maximum(m_i, s_cur)
    alpha = tl.exp(m_i - m_new)
    p_cur = tl.exp(s_cur - m_new)
    l_i = l_i * alpha + p_cur
    acc = acc * alpha[:, None] + p_cur.to(dtype).to(tl.float32)[:, None] * v_cur.to(tl.float32)[None, :]
    out = acc / l_i[:, None]
    tl.store(out_ptr + seq * stride_ob + heads[:, None] * stride_oh + offs_d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=mask_g[:, None])


def rope_paged_decode_triton(qkv: torch.Tensor, positions: torch.Tensor, cos_sin: torch.Tensor,
                             k_cache: torch.Tensor, v_cache: torch.Tensor, block_tables: torch.Tensor,
                             context_lens: torch.Tensor, scale: float, num_heads: int,
                             block_n: int = 64, pdl: bool = False) -> torch.Tensor:
    """qkv: [B, (H + 2·H_kv)·D] straight from the QKV projection (one decode token per row, unrotated);
    positions: [B]; cos_sin: [max_pos, D] fp32 ([cos | sin]); context_lens counts the current token (>= 1).
    Writes the rotated K and V of each row at its position's slot; returns attention out: [B, H, D].
    ``pdl``: launch as a programmatic dependent of the previous kernel, the first ``block_n`` past tokens'
    K/V loaded before waiting for it (pdl.py; ignored where unsupported). Only for a decode step whose first
    kernel is a plain launch (fused_decode): see the kernel's comment."""
    B = qkv.shape[0]
    _, block_size, Hkv, D = k_cache.shape
    if D & (D - 1) or D < 32:
        raise ValueError(f"head_dim {D}: the kernel needs a power of two >= 32")
    if qkv.stride(-1) != 1 or k_cache.stride(-1) != 1 or qkv.shape[1] != (num_heads + 2 * Hkv) * D:
        raise ValueError("qkv [B, (H + 2·H_kv)·D] and the caches need a contiguous last dimension")
    group = num_heads // Hkv
    pdl = pdl and pdl_supported(qkv.device)
    out = torch.empty(B, num_heads, D, dtype=qkv.dtype, device=qkv.device)
    _rope_paged_decode_kernel[(B, Hkv)](
        qkv, positions, cos_sin, k_cache, v_cache, block_tables, context_lens, out, scale,
        qkv.stride(0), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0),
        out.stride(0), out.stride(1),
        H=num_heads, HKV=Hkv, GROUP=group, G_PAD=max(16, triton.next_power_of_2(group)), HEAD_DIM=D,
        BLOCK_SIZE=block_size, BLOCK_N=block_n, PRECISION="ieee" if qkv.dtype == torch.float32 else "tf32",
        PDL=pdl, launch_pdl=pdl, num_warps=4, num_stages=2,
    )
    return out
