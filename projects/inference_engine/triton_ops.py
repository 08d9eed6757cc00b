"""Fused elementwise kernels for the GPU forward: at batch 1 a 1B model's step is ~150 launches, and every
unfused elementwise op (an RMSNorm is ~9 PyTorch kernels, RoPE ~18) costs a launch worth more than its bytes.

    add_rmsnorm(x, residual, w)    -> (norm(x + residual) * w, x + residual)     one program per token
    rope_store(qkv, positions, cos_sin, slots, k_cache, v_cache) -> q rotated     one program per (token, head);
                                   K rotated and V written into the paged cache at ``slots``
    silu_mul(gate_up)              -> silu(gate) * up                               one program per (token, tile)
    greedy_argmax(logits)          -> first index of each row's maximum            block maxima, then one pick

Each rounds where the PyTorch path (model.py) rounds, so the two paths differ only by summation order. The
decode GEMVs live in triton_gemv.py.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _add_rmsnorm_kernel(x_ptr, res_ptr, w_ptr, y_ptr, res_out_ptr, N, eps, HAS_RES: tl.constexpr,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
    if HAS_RES:
        x = (x.to(tl.float32) + tl.load(res_ptr + row * N + offs, mask=mask, other=0.0).to(tl.float32)).to(x.dtype)
        tl.store(res_out_ptr + row * N + offs, x, mask=mask)
    xf = x.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=0) / N + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    y = ((xf * rstd).to(x.dtype).to(tl.float32) * w.to(tl.float32)).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + row * N + offs, y, mask=mask)


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float):
    """x, residual: [T, N] contiguous. Returns y (and x + residual when residual is given)."""
    T, N = x.shape
    y = torch.empty_like(x)
    res_out = torch.empty_like(x) if residual is not None else y
    _add_rmsnorm_kernel[(T,)](x, residual if residual is not None else x, weight, y, res_out, N, eps,
                              HAS_RES=residual is not None, BLOCK=triton.next_power_of_2(N), num_warps=8)
    return y if residual is None else (y, res_out)


@triton.jit
def _rope_store_kernel(qkv_ptr, pos_ptr, cos_sin_ptr, slot_ptr, q_out_ptr, k_out_ptr, k_cache_ptr, v_cache_ptr,
                       stride_t, stride_bt, H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
                       STORE_K: tl.constexpr, SLOT_FROM_TABLE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    half = tl.arange(0, D // 2)
    pos = tl.load(pos_ptr + t).to(tl.int64)
    cos = tl.load(cos_sin_ptr + pos * D + half)
    sin = tl.load(cos_sin_ptr + pos * D + D // 2 + half)
    base = qkv_ptr + t * stride_t + h * D  # q heads, then k heads: head h of the fused row
    x1 = tl.load(base + half).to(tl.float32)
    x2 = tl.load(base + D // 2 + half).to(tl.float32)
    r1 = (x1 * cos - x2 * sin).to(q_out_ptr.dtype.element_ty)
    r2 = (x2 * cos + x1 * sin).to(q_out_ptr.dtype.element_ty)
    if h < H:
        out = q_out_ptr + (t * H + h) * D
        tl.store(out + half, r1)
        tl.store(out + D // 2 + half, r2)
    else:
        kh = h - H
        if SLOT_FROM_TABLE:  # decode: slot_ptr is the block table, one token per row at its position
            slot = tl.load(slot_ptr + t * stride_bt + pos // BLOCK_SIZE).to(tl.int64) * BLOCK_SIZE + pos % BLOCK_SIZE
        else:
            slot = tl.load(slot_ptr + t).to(tl.int64)
        kc = k_cache_ptr + (slot * HKV + kh) * D
        tl.store(kc + half, r1)
        tl.store(kc + D // 2 + half, r2)
        if STORE_K:  # prefill attends over this step's k directly
            ko = k_out_ptr + (t * HKV + kh) * D
            tl.store(ko + half, r1)
            tl.store(ko + D // 2 + half, r2)
        offs = tl.arange(0, D)
        v = tl.load(qkv_ptr + t * stride_t + (H + HKV + kh) * D + offs)
        tl.store(v_cache_ptr + (slot * HKV + kh) * D + offs, v)


def rope_store(qkv: torch.Tensor, positions: torch.Tensor, cos_sin: torch.Tensor, slots: torch.Tensor,
               k_cache: torch.Tensor, v_cache: torch.Tensor, H: int, Hkv: int, D: int, return_k: bool = False,
               block_tables: torch.Tensor | None = None):
    """qkv: [T, (H + 2·Hkv)·D]; cos_sin: [max_pos, D] fp32 ([cos | sin]); caches [blocks, bs, Hkv, D]
    (contiguous). Writes rotated K and V at ``slots``; returns (q: [T, H, D] rotated, k: [T, Hkv, D] rotated
    or None). Decode may pass ``block_tables`` ([T, W], one token per row) and slots=None: the kernel looks the
    slot up itself, which saves the five small kernels that compute a slot mapping."""
    T = qkv.shape[0]
    q = torch.empty(T, H, D, dtype=qkv.dtype, device=qkv.device)
    k = torch.empty(T, Hkv, D, dtype=qkv.dtype, device=qkv.device) if return_k else q
    from_table = block_tables is not None
    _rope_store_kernel[(T, H + Hkv)](qkv, positions, cos_sin, block_tables if from_table else slots, q, k, k_cache,
                                     v_cache, qkv.stride(0), block_tables.stride(0) if from_table else 0,
                                     H=H, HKV=Hkv, D=D, STORE_K=return_k, SLOT_FROM_TABLE=from_table,
                                     BLOCK_SIZE=k_cache.shape[1], num_warps=1)
    return q, (k if return_k else None)


@triton.jit
def _silu_mul_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    g = tl.load(x_ptr + row * 2 * N + offs, mask=mask, other=0.0)
    u = tl.load(x_ptr + row * 2 * N + N + offs, mask=mask, other=0.0)
    gf = g.to(tl.float32)
    act = (gf / (1.0 + tl.exp(-gf))).to(g.dtype)
    tl.store(y_ptr + row * N + offs, (act.to(tl.float32) * u.to(tl.float32)).to(g.dtype), mask=mask)


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """gate_up: [T, 2·N] contiguous -> [T, N]."""
    T, N2 = gate_up.shape
    N = N2 // 2
    y = torch.empty(T, N, dtype=gate_up.dtype, device=gate_up.device)
    BLOCK = 1024
    _silu_mul_kernel[(T, triton.cdiv(N, BLOCK))](gate_up, y, N, BLOCK=BLOCK, num_warps=4)
    return y


@triton.jit
def _argmax_blocks_kernel(x_ptr, val_ptr, idx_ptr, V, stride_row, NB, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + offs, mask=offs < V, other=float("-inf"))
    i = tl.argmax(x, 0, tie_break_left=True)  # the first of equal maxima, as torch.argmax
    tl.store(val_ptr + row * NB + blk, tl.max(x, 0).to(tl.float32))
    tl.store(idx_ptr + row * NB + blk, blk * BLOCK + i)


@triton.jit
def _argmax_final_kernel(val_ptr, idx_ptr, out_ptr, NB, NB_PAD: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, NB_PAD)
    v = tl.load(val_ptr + row * NB + offs, mask=offs < NB, other=float("-inf"))
    j = tl.argmax(v, 0, tie_break_left=True)  # the first block holding the maximum holds its first index
    tl.store(out_ptr + row, tl.load(idx_ptr + row * NB + j).to(tl.int64))


def greedy_argmax(logits: torch.Tensor, block: int = 2048) -> torch.Tensor:
    """logits: [B, V] (any float dtype) -> [B] int64, the first index of each row's maximum (torch.argmax's).
    Two launches: ~V/2048 programs per row take block maxima, one program per row picks among them. At batch 1
    torch.argmax reduces the 128k-entry row in few blocks and takes ~25 µs of a ~0.8 ms decode step."""
    B, V = logits.shape
    if logits.stride(-1) != 1:
        raise ValueError("logits need a contiguous last dimension")
    nb = triton.cdiv(V, block)
    vals = torch.empty(B, nb, dtype=torch.float32, device=logits.device)
    idx = torch.empty(B, nb, dtype=torch.int32, device=logits.device)
    out = torch.empty(B, dtype=torch.int64, device=logits.device)
    _argmax_blocks_kernel[(B, nb)](logits, vals, idx, V, logits.stride(0), nb, BLOCK=block, num_warps=4)
    _argmax_final_kernel[(B,)](vals, idx, out, nb, NB_PAD=triton.next_power_of_2(nb), num_warps=1)
    return out
