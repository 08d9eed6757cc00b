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


# -- decode with RoPE and the K/V store folded in, the context split across programs ---------------------------
@triton.jit
def _rope_paged_decode_kernel(
    qkv_ptr, pos_ptr, cos_sin_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, context_lens_ptr, out_ptr,
    part_ml_ptr, part_acc_ptr, scale,
    stride_qkv, stride_cb, stride_ct, stride_ch, stride_bt, stride_ob, stride_oh,
    H: tl.constexpr, HKV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, SPLITS: tl.constexpr, PRECISION: tl.constexpr,
    PDL: tl.constexpr,
):
    # Like _paged_decode_kernel, but q, k, v come unrotated from the fused QKV projection, and program
    # (seq, kv_head, split) covers one of SPLITS equal slices of the context. Each rotates its group's q heads;
    # split 0 also rotates K and writes K and V of the current token into the paged cache; the last split adds
    # the current token from registers (no split reads its slot, so nothing races the store). With SPLITS = 1
    # the program normalises and stores the output; otherwise it leaves (max, sum, unnormalised output) for
    # _combine_splits_kernel. Scores are split in rotate-half halves: q·k = q[:D/2]·k[:D/2] + q[D/2:]·k[D/2:].
    if PDL:  # everything below reads what earlier kernels wrote: wait for them first (pdl.py)
        tl.extra.cuda.gdc_launch_dependents()
        tl.extra.cuda.gdc_wait()
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    HALF: tl.constexpr = HEAD_DIM // 2
    dtype = qkv_ptr.dtype.element_ty
    ctx = tl.load(context_lens_ptr + seq)
    pos = tl.load(pos_ptr + seq).to(tl.int64)
    offs_g = tl.arange(0, G_PAD)
    offs_h = tl.arange(0, HALF)
    offs_d = tl.arange(0, HEAD_DIM)
    mask_g = offs_g < GROUP
    heads = kv_head * GROUP + offs_g
    row = qkv_ptr + seq.to(tl.int64) * stride_qkv
    cos = tl.load(cos_sin_ptr + pos * HEAD_DIM + offs_h)
    sin = tl.load(cos_sin_ptr + pos * HEAD_DIM + HALF + offs_h)
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
    if split == 0:
        block = tl.load(block_tables_ptr + seq * stride_bt + pos // BLOCK_SIZE).to(tl.int64)
        slot = block * stride_cb + (pos % BLOCK_SIZE) * stride_ct + kv_head * stride_ch
        tl.store(k_cache_ptr + slot + offs_h, k1)
        tl.store(k_cache_ptr + slot + HALF + offs_h, k2)
        tl.store(v_cache_ptr + slot + offs_d, v_cur)

    m_i = tl.full([G_PAD], float("-inf"), tl.float32)
    l_i = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, HEAD_DIM], tl.float32)
    past = ctx - 1  # tokens before the current one, read from the cache
    chunk = tl.cdiv(past, SPLITS)
    lo = split * chunk
    hi = tl.minimum(lo + chunk, past)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < hi
        blk = tl.load(block_tables_ptr + seq * stride_bt + offs_n // BLOCK_SIZE, mask=mask_n, other=0)
        tok = blk.to(tl.int64) * stride_cb + (offs_n % BLOCK_SIZE) * stride_ct + kv_head * stride_ch
        kc1 = tl.load(k_cache_ptr + tok[:, None] + offs_h[None, :], mask=mask_n[:, None], other=0.0)
        kc2 = tl.load(k_cache_ptr + tok[:, None] + HALF + offs_h[None, :], mask=mask_n[:, None], other=0.0)
        s = tl.dot(q1, tl.trans(kc1), input_precision=PRECISION).to(tl.float32)
        s += tl.dot(q2, tl.trans(kc2), input_precision=PRECISION).to(tl.float32)
        s = tl.where(mask_n[None, :], s * scale, float("-inf"))
        v = tl.load(v_cache_ptr + tok[:, None] + offs_d[None, :], mask=mask_n[:, None], other=0.0)
        m_i, l_i, acc = _online_softmax_step(m_i, l_i, acc, s, v, PRECISION)
    if split == SPLITS - 1:  # the current token, from registers
        s_cur = (tl.sum(q1.to(tl.float32) * k1.to(tl.float32)[None, :], 1)
                 + tl.sum(q2.to(tl.float32) * k2.to(tl.float32)[None, :], 1)) * scale
        m_new = tl.maximum(m_i, s_cur)
        alpha = tl.exp(m_i - m_new)
        p_cur = tl.exp(s_cur - m_new)
        l_i = l_i * alpha + p_cur
        acc = acc * alpha[:, None] + p_cur.to(dtype).to(tl.float32)[:, None] * v_cur.to(tl.float32)[None, :]
        m_i = m_new
    if SPLITS == 1:
        out = acc / l_i[:, None]
        tl.store(out_ptr + seq * stride_ob + heads[:, None] * stride_oh + offs_d[None, :],
                 out.to(out_ptr.dtype.element_ty), mask=mask_g[:, None])
    else:  # partials, fp32: ml [B, HKV, SPLITS, 2, G_PAD] (max, sum), acc [B, HKV, SPLITS, G_PAD, D]
        part = (seq * HKV + kv_head) * SPLITS + split
        tl.store(part_ml_ptr + part * 2 * G_PAD + offs_g, m_i)
        tl.store(part_ml_ptr + part * 2 * G_PAD + G_PAD + offs_g, l_i)
        tl.store(part_acc_ptr + part * G_PAD * HEAD_DIM + offs_g[:, None] * HEAD_DIM + offs_d[None, :], acc)


@triton.jit
def _combine_splits_kernel(part_ml_ptr, part_acc_ptr, out_ptr, stride_ob, stride_oh,
                           HKV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
                           SPLITS: tl.constexpr, PDL: tl.constexpr):
    # One program per (seq, kv_head): every split's partial rescaled to the common max, then normalised. A split
    # whose slice was empty left max -inf and sum 0, so its weight is 0; the last split always holds the current
    # token, so the common max is finite.
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()
        tl.extra.cuda.gdc_wait()
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    offs_s = tl.arange(0, SPLITS)
    offs_g = tl.arange(0, G_PAD)
    offs_d = tl.arange(0, HEAD_DIM)
    base = (seq * HKV + kv_head) * SPLITS
    ml = part_ml_ptr + (base + offs_s)[:, None] * 2 * G_PAD + offs_g[None, :]
    m = tl.load(ml)  # [SPLITS, G_PAD]
    l_s = tl.load(ml + G_PAD)
    m_all = tl.max(m, 0)
    w = tl.exp(m - m_all[None, :])
    l_all = tl.sum(w * l_s, 0)
    acc = tl.load(part_acc_ptr + (base + offs_s)[:, None, None] * G_PAD * HEAD_DIM
                  + offs_g[None, :, None] * HEAD_DIM + offs_d[None, None, :])  # [SPLITS, G_PAD, D]
    out = tl.sum(w[:, :, None] * acc, 0) / l_all[:, None]
    heads = kv_head * GROUP + offs_g
    tl.store(out_ptr + seq * stride_ob + heads[:, None] * stride_oh + offs_d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=(offs_g < GROUP)[:, None])


def context_splits(batch: int, num_kv_heads: int, target_programs: int = 128, most: int = 16) -> int:
    """Programs per (sequence, KV head), a power of two: enough that a small batch still spreads over ~128
    programs (the H200 has 132 SMs; at batch 1 one program per KV head leaves 124 of them idle while each walks
    the whole context)."""
    return max(1, min(most, triton.next_power_of_2(triton.cdiv(target_programs, batch * num_kv_heads))))


def rope_paged_decode_triton(qkv: torch.Tensor, positions: torch.Tensor, cos_sin: torch.Tensor,
                             k_cache: torch.Tensor, v_cache: torch.Tensor, block_tables: torch.Tensor,
                             context_lens: torch.Tensor, scale: float, num_heads: int,
                             block_n: int = 32, splits: int | None = None, pdl: bool = False) -> torch.Tensor:
    """qkv: [B, (H + 2·H_kv)·D] straight from the QKV projection (one decode token per row, unrotated);
    positions: [B]; cos_sin: [max_pos, D] fp32 ([cos | sin]); context_lens counts the current token (>= 1).
    Writes the rotated K and V of each row at its position's slot; returns attention out: [B, H, D].
    ``splits``: programs per (sequence, KV head), a power of two (default ``context_splits``); more than one
    adds the combine kernel. ``pdl``: launch as programmatic dependents (pdl.py; ignored where unsupported)."""
    B = qkv.shape[0]
    _, block_size, Hkv, D = k_cache.shape
    if D & (D - 1) or D < 32:
        raise ValueError(f"head_dim {D}: the kernel needs a power of two >= 32")
    if qkv.stride(-1) != 1 or k_cache.stride(-1) != 1 or qkv.shape[1] != (num_heads + 2 * Hkv) * D:
        raise ValueError("qkv [B, (H + 2·H_kv)·D] and the caches need a contiguous last dimension")
    splits = context_splits(B, Hkv) if splits is None else splits
    if splits < 1 or splits & (splits - 1):
        raise ValueError(f"splits must be a power of two, got {splits}")
    group = num_heads // Hkv
    g_pad = max(16, triton.next_power_of_2(group))
    pdl = pdl and pdl_supported(qkv.device)
    out = torch.empty(B, num_heads, D, dtype=qkv.dtype, device=qkv.device)
    n_part = B * Hkv * splits * g_pad if splits > 1 else 1
    part_ml = torch.empty(2 * n_part, dtype=torch.float32, device=qkv.device)
    part_acc = torch.empty(n_part * D, dtype=torch.float32, device=qkv.device)
    _rope_paged_decode_kernel[(B, Hkv, splits)](
        qkv, positions, cos_sin, k_cache, v_cache, block_tables, context_lens, out, part_ml, part_acc, scale,
        qkv.stride(0), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0),
        out.stride(0), out.stride(1),
        H=num_heads, HKV=Hkv, GROUP=group, G_PAD=g_pad, HEAD_DIM=D, BLOCK_SIZE=block_size, BLOCK_N=block_n,
        SPLITS=splits, PRECISION="ieee" if qkv.dtype == torch.float32 else "tf32", PDL=pdl, launch_pdl=pdl,
        num_warps=4, num_stages=2,
    )
    if splits > 1:
        _combine_splits_kernel[(B, Hkv)](part_ml, part_acc, out, out.stride(0), out.stride(1), HKV=Hkv,
                                         GROUP=group, G_PAD=g_pad, HEAD_DIM=D, SPLITS=splits, PDL=pdl,
                                         launch_pdl=pdl, num_warps=4)
    return out
