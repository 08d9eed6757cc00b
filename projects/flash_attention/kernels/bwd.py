"""FlashAttention backward in Triton: three kernels, no atomics (or, with ATOMIC_DQ, two plus a cast).

    1. ``_bwd_preprocess_kernel``: Δ = rowsum(dO ∘ O)                      [B·H, Sq] fp32
    2. ``_bwd_dkdv_kernel``: a program owns BLOCK_N key rows of one KV head; for every query head of its GQA group
       it steps over BLOCK_M query rows, recomputes Pᵀ = exp2(s₂ᵀ − lse) and accumulates
           dV += Pᵀ·dO        dK += dSᵀ·Q,  dSᵀ = Pᵀ ∘ (dO·Vᵀ − Δ)ᵀ        (dK scaled once at the end)
       Summing the group inside the program is what makes GQA atomics-free.
    3. ``_bwd_dq_kernel``: a program owns BLOCK_M query rows and steps over key blocks:
           dQ += dS·K  (scaled once at the end)

Splitting dQ from dK/dV costs two extra matmuls (QKᵀ and dO·Vᵀ recomputed: 7 instead of 5) but avoids fp32
atomics on dQ. The other way (``ATOMIC_DQ``, as FlashAttention-2's CUDA kernel does): the dK/dV program also
forms dQ's share dS·K of its key block and adds it into an fp32 buffer with atomics — 5 matmuls, but
Sk/BLOCK_N fp32 read-modify-writes of all of dQ through L2; ``_dq_convert_kernel`` then scales and casts. The FLOP count the bench reports stays the standard 2.5× forward (5 matmuls).

Masking follows the forward (fwd.py): causal bottom-right, rows/keys past the sequence ends masked in the
diagonal/tail stages only; full blocks run unmasked.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .blocks import _key_ranges, _query_block, _visible


@triton.jit(do_not_specialize=["n_rows"])
def _bwd_preprocess_kernel(Out, DO, DELTA, n_rows, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    # Out, DO: [rows = B·H·Sq, D] contiguous; DELTA: [rows] fp32.
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = rows < n_rows
    offs = rows.to(tl.int64)[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    o = tl.load(Out + offs, mask=ok[:, None], other=0.0).to(tl.float32)
    do = tl.load(DO + offs, mask=ok[:, None], other=0.0).to(tl.float32)
    tl.store(DELTA + rows, tl.sum(o * do, 1), mask=ok)


@triton.jit
def _dkdv_inner(dk, dv, k, v, desc_q, desc_do, LSE, DELTA, DQ_ACC, q_row0, lo, hi, offs_n, qk_scale, seqlen_q, diag,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr,
                PRECISION: tl.constexpr, ATOMIC_DQ: tl.constexpr):
    # q_row0: first row of this query head in the flattened [B·H·Sq, D] tensors (and in LSE/DELTA).
    offs_m0 = tl.arange(0, BLOCK_M)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + offs_m0
        q = desc_q.load([q_row0 + start_m, 0])
        if MASK:
            row_ok = offs_m < seqlen_q
            lse = tl.load(LSE + q_row0 + offs_m, mask=row_ok, other=float("inf"))
        else:
            lse = tl.load(LSE + q_row0 + offs_m)
        qkT = tl.dot(k, q.T, input_precision=PRECISION)  # [BLOCK_N, BLOCK_M]
        if MASK:
            keep = row_ok[None, :]
            if CAUSAL:
                keep = keep & (offs_n[:, None] <= offs_m[None, :] + diag)
            pT = tl.math.exp2(tl.where(keep, qkT * qk_scale - lse[None, :], -float("inf")))
        else:
            pT = tl.math.exp2(qkT * qk_scale - lse[None, :])
        do = desc_do.load([q_row0 + start_m, 0])
        dv = tl.dot(pT.to(do.dtype), do, dv, input_precision=PRECISION)
        if MASK:
            delta = tl.load(DELTA + q_row0 + offs_m, mask=row_ok, other=0.0)
        else:
            delta = tl.load(DELTA + q_row0 + offs_m)
        dpT = tl.dot(v, do.T, input_precision=PRECISION)
        dsT = (pT * (dpT - delta[None, :])).to(q.dtype)
        dk = tl.dot(dsT, q, dk, input_precision=PRECISION)
        if ATOMIC_DQ:
            # dQ's share of this key block, added into an fp32 buffer (scaled and cast by _dq_convert_kernel).
            dq = tl.dot(dsT.T, k, input_precision=PRECISION)  # [BLOCK_M, D]
            rows = (q_row0 + offs_m).to(tl.int64)
            ptrs = DQ_ACC + rows[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
            if MASK:
                tl.atomic_add(ptrs, dq, mask=row_ok[:, None], sem="relaxed")
            else:
                tl.atomic_add(ptrs, dq, sem="relaxed")
    return dk, dv


@triton.jit(do_not_specialize=["seqlen_q", "seqlen_k", "num_heads", "group"])
def _bwd_dkdv_kernel(desc_q, desc_k, desc_v, desc_do, LSE, DELTA, DK, DV, DQ_ACC, qk_scale, scale,
                     seqlen_q, seqlen_k, num_heads, group,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, PRECISION: tl.constexpr, ATOMIC_DQ: tl.constexpr):
    # grid: (cdiv(Sk, BLOCK_N), B·Hkv). Causal: the first key blocks are seen by the most queries and already
    # launch first.
    pid_n = tl.program_id(0)
    bh_kv = tl.program_id(1)
    num_kv_heads = num_heads // group
    batch = bh_kv // num_kv_heads
    head_kv = bh_kv % num_kv_heads
    start_n = pid_n * BLOCK_N
    kv_row = bh_kv * seqlen_k + start_n
    diag = seqlen_k - seqlen_q
    offs_n = start_n + tl.arange(0, BLOCK_N)

    k = desc_k.load([kv_row, 0])
    v = desc_v.load([kv_row, 0])
    if ATOMIC_DQ:
        # Rows past Sk hold the next head's keys: zero them, or their dS·K would leak into dQ. (Without
        # atomics they only touch dK/dV rows that are never stored.)
        k = tl.where((offs_n < seqlen_k)[:, None], k, 0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)

    q_end = tl.cdiv(seqlen_q, BLOCK_M) * BLOCK_M
    q_full_end = (seqlen_q // BLOCK_M) * BLOCK_M
    if CAUSAL:
        # First query that sees key start_n: i >= start_n - diag. Queries i < start_n + BLOCK_N - 1 - diag miss
        # some key of this block (diagonal stage, masked).
        q_lo = (tl.maximum(start_n - diag, 0) // BLOCK_M) * BLOCK_M
        q_lo = tl.minimum(q_lo, q_end)
        q_diag_end = tl.cdiv(tl.maximum(start_n + BLOCK_N - 1 - diag, q_lo), BLOCK_M) * BLOCK_M
        q_diag_end = tl.minimum(q_diag_end, q_end)
    else:
        q_lo = 0
        q_diag_end = 0
    q_tail_lo = tl.maximum(q_full_end, q_diag_end)

    for g in range(group):
        q_row0 = (batch * num_heads + head_kv * group + g) * seqlen_q
        dk, dv = _dkdv_inner(dk, dv, k, v, desc_q, desc_do, LSE, DELTA, DQ_ACC, q_row0, q_lo, q_diag_end, offs_n,
                             qk_scale, seqlen_q, diag, HEAD_DIM, BLOCK_M, True, CAUSAL, PRECISION, ATOMIC_DQ)
        dk, dv = _dkdv_inner(dk, dv, k, v, desc_q, desc_do, LSE, DELTA, DQ_ACC, q_row0, q_diag_end, q_full_end,
                             offs_n, qk_scale, seqlen_q, diag, HEAD_DIM, BLOCK_M, False, CAUSAL, PRECISION, ATOMIC_DQ)
        dk, dv = _dkdv_inner(dk, dv, k, v, desc_q, desc_do, LSE, DELTA, DQ_ACC, q_row0, q_tail_lo, q_end, offs_n,
                             qk_scale, seqlen_q, diag, HEAD_DIM, BLOCK_M, True, CAUSAL, PRECISION, ATOMIC_DQ)

    key_ok = offs_n < seqlen_k
    rows = (bh_kv * seqlen_k + offs_n).to(tl.int64)
    offs = rows[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    tl.store(DK + offs, (dk * scale).to(DK.dtype.element_ty), mask=key_ok[:, None])
    tl.store(DV + offs, dv.to(DV.dtype.element_ty), mask=key_ok[:, None])


@triton.jit
def _dq_inner(dq, q, do, lse, delta, desc_k, desc_v, kv_row0, lo, hi, offs_m, qk_scale, seqlen_k, diag,
              BLOCK_N: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        k = desc_k.load([kv_row0 + start_n, 0])
        v = desc_v.load([kv_row0 + start_n, 0])
        qk = tl.dot(q, k.T, input_precision=PRECISION)
        if MASK:
            keep = _visible(offs_m, start_n + offs_n0, seqlen_k, diag, CAUSAL)
            p = tl.math.exp2(tl.where(keep, qk * qk_scale - lse[:, None], -float("inf")))
        else:
            p = tl.math.exp2(qk * qk_scale - lse[:, None])
        dp = tl.dot(do, v.T, input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=PRECISION)
    return dq


@triton.jit(do_not_specialize=["seqlen_q", "seqlen_k", "num_heads", "group"])
def _bwd_dq_kernel(desc_q, desc_k, desc_v, desc_do, LSE, DELTA, DQ, qk_scale, scale,
                   seqlen_q, seqlen_k, num_heads, group,
                   HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    # grid: (cdiv(Sq, BLOCK_M), B·H), the forward's blocks and key ranges (blocks.py)
    _, start_m, q_row0, kv_row0, diag = _query_block(seqlen_q, seqlen_k, num_heads, group, BLOCK_M, CAUSAL)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    row_ok = offs_m < seqlen_q
    q = desc_q.load([q_row0 + start_m, 0])
    do = desc_do.load([q_row0 + start_m, 0])
    # Rows past Sq: lse = +inf makes their P zero (their q/dO rows belong to the next head).
    lse = tl.load(LSE + q_row0 + offs_m, mask=row_ok, other=float("inf"))
    delta = tl.load(DELTA + q_row0 + offs_m, mask=row_ok, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    full_end, hi = _key_ranges(start_m, diag, seqlen_k, BLOCK_M, BLOCK_N, CAUSAL)
    dq = _dq_inner(dq, q, do, lse, delta, desc_k, desc_v, kv_row0, 0, full_end, offs_m, qk_scale, seqlen_k,
                   diag, BLOCK_N, False, CAUSAL, PRECISION)
    dq = _dq_inner(dq, q, do, lse, delta, desc_k, desc_v, kv_row0, full_end, hi, offs_m, qk_scale, seqlen_k,
                   diag, BLOCK_N, True, CAUSAL, PRECISION)

    rows = (q_row0 + offs_m).to(tl.int64)
    offs = rows[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    tl.store(DQ + offs, (dq * scale).to(DQ.dtype.element_ty), mask=row_ok[:, None])


@triton.jit(do_not_specialize=["n_rows"])
def _dq_convert_kernel(DQ_ACC, DQ, scale, n_rows, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    # DQ_ACC: [rows, D] fp32 (atomic-dQ path) -> DQ = scale · DQ_ACC in the input dtype.
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = rows < n_rows
    offs = rows.to(tl.int64)[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    acc = tl.load(DQ_ACC + offs, mask=ok[:, None], other=0.0)
    tl.store(DQ + offs, (acc * scale).to(DQ.dtype.element_ty), mask=ok[:, None])
