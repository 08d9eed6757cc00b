"""The decode GEMV with its neighbours fused in: at batch ≤ 16 a Llama layer is four weight streams, and each
elementwise kernel between them (RMSNorm, residual add, SiLU·mul) costs a launch and a ramp-up worth more than
its bytes. Folding them into the GEMVs leaves five kernels per layer instead of nine.

    fused_linear(x, w)                                  y = x @ w.T
    fused_linear(h, w, norm_weight=g)                   y = rmsnorm(h) * g @ w.T    (prologue: rstd per row)
    fused_linear(x, w, residual=h)                      h += x @ w.T  (in place; returns h)
    fused_linear(h, w, norm_weight=g, silu_mul=True)    y = silu(a) * b, [a | b] = rmsnorm(h) * g @ w.T
    out_dtype=torch.float32                             logits rounded to the weight dtype, stored as fp32

x: [M, K] with M ≤ 16; w: [N, K] row-major, as nn.Linear stores it. Each program streams BLOCK_N rows of w
(twice BLOCK_N for silu_mul: the gate rows and the matching up rows) — those are the bytes that matter.

Two ways to multiply, picked per call:
- M = 1 (batch-1 decode): CUDA-core products summed along K, no padding. When a whole row fits one tile
  (``BLOCK_K >= K``, "one shot") every weight load is issued before the norm's reduction over x, so the weight
  stream starts at once instead of after an L2 round trip.
- 1 < M ≤ 16: x padded to 16 rows for ``tl.dot`` (decode is memory-bound: the padding costs no bytes).

Launch configs per weight shape come from ``gemv_configs.json``, written by the sweep in profile_decode.py
(``gemv`` stage) on the H200 and committed; shapes it never saw use ``default_config``. Every rounding happens
where the PyTorch path (model.py) and Hugging Face round: the GEMV output to the activation dtype before the
residual add, the normalised row to the activation dtype before the norm weight, silu(gate) before the product.
"""
from __future__ import annotations

import json
import os

import torch
import triton
import triton.language as tl

from .pdl import pdl_supported

MAX_M = 16
CONFIG_FILE = os.path.join(os.path.dirname(__file__), "gemv_configs.json")


@triton.jit
def _normalize(x, rstd, norm_w_ptr, kk, kmask):
    """round(round(x * rstd) * g), the activation dtype's roundings where HF rounds."""
    g = tl.load(norm_w_ptr + kk, mask=kmask, other=0.0).to(tl.float32)
    xn = (x.to(tl.float32) * rstd[:, None]).to(x.dtype).to(tl.float32)
    return (xn * g[None, :]).to(x.dtype)


@triton.jit
def _tile_product(x, w, USE_DOT: tl.constexpr, PRECISION: tl.constexpr):
    """[BLOCK_M, BLOCK_K] x [BLOCK_N, BLOCK_K] -> [BLOCK_M, BLOCK_N] fp32 partial sums."""
    # one return statement: Triton cannot inline a helper that returns early inside the caller's K loop
    if USE_DOT:
        out = tl.dot(x, tl.trans(w), input_precision=PRECISION)
    else:  # BLOCK_M = 1: elementwise on CUDA cores, one reduction along K
        out = tl.reshape(tl.sum(w.to(tl.float32) * x.to(tl.float32), axis=1), [1, w.shape[0]])
    return out


@triton.jit
def _fused_gemv_kernel(x_ptr, w_ptr, y_ptr, norm_w_ptr, M, N, K, stride_xm, stride_wn, stride_ym, eps,
                       NORM: tl.constexpr, RESIDUAL: tl.constexpr, SILU_MUL: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       ONE_SHOT: tl.constexpr, PRECISION: tl.constexpr, USE_DOT: tl.constexpr,
                       PDL: tl.constexpr):
    if PDL:  # the next kernel may be scheduled once every program here has started (pdl.py)
        tl.extra.cuda.gdc_launch_dependents()
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_rows = x_ptr + offs_m[:, None] * stride_xm
    w_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_wn
    w2_rows = w_rows + N * stride_wn  # SILU_MUL: the up rows sit N rows below the gate rows
    if ONE_SHOT:  # K <= BLOCK_K: the weight loads first, so they are in flight while the norm reduces x
        kmask = offs_k < K
        w = tl.load(w_rows + offs_k[None, :], mask=mask_n[:, None] & kmask[None, :], other=0.0)
        if SILU_MUL:
            w2 = tl.load(w2_rows + offs_k[None, :], mask=mask_n[:, None] & kmask[None, :], other=0.0)
        if PDL:  # the weights are in flight; x is the previous kernel's output
            tl.extra.cuda.gdc_wait()
        x = tl.load(x_rows + offs_k[None, :], mask=mask_m[:, None] & kmask[None, :], other=0.0)
        if NORM:
            xf = x.to(tl.float32)
            rstd = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=1) / K + eps)
            x = _normalize(x, rstd, norm_w_ptr, offs_k, kmask)
        acc = _tile_product(x, w, USE_DOT, PRECISION)
        if SILU_MUL:
            acc2 = _tile_product(x, w2, USE_DOT, PRECISION)
    else:
        if PDL:
            tl.extra.cuda.gdc_wait()
        if NORM:  # rstd of each row over all of K first: x is a few KB and sits in L2
            sq = tl.zeros([BLOCK_M], tl.float32)
            for k0 in range(0, K, BLOCK_K):
                kk = k0 + offs_k
                xf = tl.load(x_rows + kk[None, :], mask=mask_m[:, None] & (kk < K)[None, :], other=0.0)
                xf = xf.to(tl.float32)
                sq += tl.sum(xf * xf, axis=1)
            rstd = 1.0 / tl.sqrt(sq / K + eps)
        acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        acc2 = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for k0 in range(0, K, BLOCK_K):
            kk = k0 + offs_k
            kmask = kk < K  # K % 16 == 0 is specialised by Triton, so this mask keeps 16-byte loads
            w = tl.load(w_rows + kk[None, :], mask=mask_n[:, None] & kmask[None, :], other=0.0)
            if SILU_MUL:
                w2 = tl.load(w2_rows + kk[None, :], mask=mask_n[:, None] & kmask[None, :], other=0.0)
            x = tl.load(x_rows + kk[None, :], mask=mask_m[:, None] & kmask[None, :], other=0.0)
            if NORM:
                x = _normalize(x, rstd, norm_w_ptr, kk, kmask)
            acc += _tile_product(x, w, USE_DOT, PRECISION)
            if SILU_MUL:
                acc2 += _tile_product(x, w2, USE_DOT, PRECISION)
    act_dtype = x_ptr.dtype.element_ty
    out = acc.to(act_dtype)  # the projection's own rounding, whatever comes after
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :]
    mask = mask_m[:, None] & mask_n[None, :]
    if SILU_MUL:
        gf = out.to(tl.float32)
        act = (gf / (1.0 + tl.exp(-gf))).to(act_dtype)
        out = (act.to(tl.float32) * acc2.to(act_dtype).to(tl.float32)).to(act_dtype)
    if RESIDUAL:  # y_ptr is the residual stream: each program owns its columns, so in place is safe
        res = tl.load(y_ptrs, mask=mask, other=0.0)
        out = (out.to(tl.float32) + res.to(tl.float32)).to(act_dtype)
    tl.store(y_ptrs, out.to(y_ptr.dtype.element_ty), mask=mask)


# ---- launch configs -----------------------------------------------------------------------------------------
def config_key(n_out: int, K: int, silu_mul: bool) -> str:
    return f"{n_out}x{K}" + (":silu" if silu_mul else "")


def _load_tuned() -> dict[str, dict]:
    if not os.path.exists(CONFIG_FILE):
        return {}
    with open(CONFIG_FILE) as f:
        return json.load(f)["configs"]


TUNED: dict[str, dict] = _load_tuned()  # M = 1 configs from the H200 sweep; profile_decode can swap this dict


def default_config(n_out: int, K: int, M: int) -> dict:
    """Untuned shapes. M = 1: whole rows in one tile up to 8192 columns, about 32 KB of weights per program.
    M > 1: the tl.dot path, 16 weight rows (64 for the LM head) × 256 columns, 4 stages."""
    if M == 1:
        block_k = triton.next_power_of_2(K)
        if block_k <= 8192:
            return dict(BLOCK_N=max(1, 16384 // block_k), BLOCK_K=block_k, num_warps=4, num_stages=1,
                        USE_DOT=False)
        return dict(BLOCK_N=8, BLOCK_K=1024, num_warps=4, num_stages=2, USE_DOT=False)
    block_n = 16 if n_out <= 8192 else 64
    return dict(BLOCK_N=block_n, BLOCK_K=min(256, triton.next_power_of_2(K)), num_warps=4, num_stages=4,
                USE_DOT=True)


def gemv_config(n_out: int, K: int, M: int, silu_mul: bool) -> dict:
    if M == 1 and config_key(n_out, K, silu_mul) in TUNED:
        return dict(TUNED[config_key(n_out, K, silu_mul)])
    return default_config(n_out, K, M)


def fused_linear(x: torch.Tensor, weight: torch.Tensor, *, norm_weight: torch.Tensor | None = None,
                 eps: float = 1e-5, residual: torch.Tensor | None = None, silu_mul: bool = False,
                 out_dtype: torch.dtype | None = None, config: dict | None = None,
                 pdl: bool = False) -> torch.Tensor:
    """See the module docstring. x: [M, K] (M ≤ 16), weight: [N, K]; returns [M, N] ([M, N/2] with silu_mul,
    ``residual`` itself with residual). ``config`` overrides the launch config (BLOCK_N, BLOCK_K, USE_DOT,
    num_warps, num_stages); USE_DOT=False needs M = 1. ``pdl``: launch as a programmatic dependent of the
    previous kernel, streaming the weights before waiting for it (pdl.py; ignored where unsupported)."""
    M, K = x.shape
    N = weight.shape[0]
    if M > MAX_M:
        raise ValueError(f"fused_linear takes at most {MAX_M} rows, got {M}")
    if x.stride(-1) != 1 or weight.stride(-1) != 1 or weight.shape[1] != K:
        raise ValueError("x [M, K] and weight [N, K] need matching K and a contiguous last dimension")
    if silu_mul and residual is not None:
        raise ValueError("silu_mul and residual do not combine")
    n_out = N // 2 if silu_mul else N
    if residual is not None:
        if residual.shape != (M, N) or residual.stride(-1) != 1 or out_dtype is not None:
            raise ValueError("residual must be [M, N] with a contiguous last dimension")
        y = residual
    else:
        y = torch.empty(M, n_out, dtype=out_dtype or x.dtype, device=x.device)
    cfg = dict(gemv_config(n_out, K, M, silu_mul), **(config or {}))
    block_n, block_k, use_dot = cfg.pop("BLOCK_N"), cfg.pop("BLOCK_K"), cfg.pop("USE_DOT")
    pdl = pdl and pdl_supported(x.device)
    if use_dot and block_n < 16:
        raise ValueError("the tl.dot path needs BLOCK_N >= 16")
    if not use_dot and M > 1:
        raise ValueError("USE_DOT=False (CUDA-core products) takes one row; M > 1 needs the tl.dot path")
    _fused_gemv_kernel[(triton.cdiv(n_out, block_n),)](
        x, weight, y, norm_weight if norm_weight is not None else x, M, n_out, K,
        x.stride(0), weight.stride(0), y.stride(0), eps,
        NORM=norm_weight is not None, RESIDUAL=residual is not None, SILU_MUL=silu_mul,
        BLOCK_M=MAX_M if use_dot else 1, BLOCK_N=block_n, BLOCK_K=block_k, ONE_SHOT=block_k >= K,
        PRECISION="ieee" if x.dtype == torch.float32 else "tf32", USE_DOT=use_dot, PDL=pdl, launch_pdl=pdl, **cfg)
    return y
