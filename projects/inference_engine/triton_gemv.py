"""The decode GEMV with its neighbours fused in: at batch ≤ 16 a Llama layer is four weight streams, and each
elementwise kernel between them (RMSNorm, residual add, SiLU·mul) costs a launch and a ramp-up worth more than
its bytes. Folding them into the GEMVs leaves six kernels per layer instead of nine.

    fused_linear(x, w)                                  y = x @ w.T
    fused_linear(h, w, norm_weight=g)                   y = rmsnorm(h) * g @ w.T    (prologue: rstd per row)
    fused_linear(x, w, residual=h)                      h += x @ w.T  (in place; returns h)
    fused_linear(h, w, norm_weight=g, silu_mul=True)    y = silu(a) * b, [a | b] = rmsnorm(h) * g @ w.T
    out_dtype=torch.float32                             logits rounded to the weight dtype, stored as fp32

x: [M, K] with M ≤ 16 (padded to 16 rows for ``tl.dot``; decode is memory-bound, the padding costs no bytes;
at M = 1 ``USE_DOT=False`` in the config accumulates on CUDA cores instead);
w: [N, K] row-major, as nn.Linear stores it. Each program streams BLOCK_N rows of w (twice BLOCK_N for
silu_mul: the gate rows and the matching up rows) — those are the bytes that matter. Every rounding happens
where the PyTorch path (model.py) and Hugging Face round: the GEMV output to the activation dtype before the
residual add, the normalised row to the activation dtype before the norm weight, silu(gate) before the product.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

MAX_M = 16


@triton.jit
def _fused_gemv_kernel(x_ptr, w_ptr, y_ptr, norm_w_ptr, M, N, K, stride_xm, stride_wn, stride_ym, eps,
                       NORM: tl.constexpr, RESIDUAL: tl.constexpr, SILU_MUL: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       EVEN_K: tl.constexpr, PRECISION: tl.constexpr, USE_DOT: tl.constexpr):
    # USE_DOT: x padded to BLOCK_M = 16 rows for tl.dot (mma). Without it (M = 1, BLOCK_M = 1): products
    # accumulated elementwise in a [BLOCK_N, BLOCK_K] fp32 tile and summed once at the end (CUDA cores).
    pid = tl.program_id(0)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_rows = x_ptr + offs_m[:, None] * stride_xm
    act_dtype = x_ptr.dtype.element_ty
    if NORM:  # rstd of each row over all of K: x is a few KB and sits in L2, every program recomputes it
        sq = tl.zeros([BLOCK_M], tl.float32)
        for k0 in range(0, K, BLOCK_K):
            kk = k0 + offs_k
            xf = tl.load(x_rows + kk[None, :], mask=mask_m[:, None] & (kk[None, :] < K), other=0.0).to(tl.float32)
            sq += tl.sum(xf * xf, axis=1)
        rstd = 1.0 / tl.sqrt(sq / K + eps)
    w_rows = w_ptr + offs_n[:, None].to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    acc2 = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    if not USE_DOT:
        accv = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
        accv2 = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    if SILU_MUL:  # the up rows sit N rows below the gate rows (gate_up = [gate | up])
        w2_rows = w_rows + N * stride_wn
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        if EVEN_K:
            x = tl.load(x_rows + kk[None, :], mask=mask_m[:, None], other=0.0)
            w = tl.load(w_rows + kk[None, :], mask=mask_n[:, None], other=0.0)
        else:
            mask_k = kk < K
            x = tl.load(x_rows + kk[None, :], mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            w = tl.load(w_rows + kk[None, :], mask=mask_n[:, None] & mask_k[None, :], other=0.0)
        if NORM:
            if EVEN_K:
                g = tl.load(norm_w_ptr + kk).to(tl.float32)
            else:
                g = tl.load(norm_w_ptr + kk, mask=kk < K, other=0.0).to(tl.float32)
            xn = (x.to(tl.float32) * rstd[:, None]).to(act_dtype).to(tl.float32)
            x = (xn * g[None, :]).to(act_dtype)
        if USE_DOT:
            acc += tl.dot(x, tl.trans(w), input_precision=PRECISION)
        else:
            accv += w.to(tl.float32) * x.to(tl.float32)  # [BLOCK_N, BLOCK_K] * [1, BLOCK_K]
        if SILU_MUL:
            if EVEN_K:
                w2 = tl.load(w2_rows + kk[None, :], mask=mask_n[:, None], other=0.0)
            else:
                w2 = tl.load(w2_rows + kk[None, :], mask=mask_n[:, None] & (kk < K)[None, :], other=0.0)
            if USE_DOT:
                acc2 += tl.dot(x, tl.trans(w2), input_precision=PRECISION)
            else:
                accv2 += w2.to(tl.float32) * x.to(tl.float32)
    if not USE_DOT:
        acc = tl.reshape(tl.sum(accv, axis=1), [BLOCK_M, BLOCK_N])
        acc2 = tl.reshape(tl.sum(accv2, axis=1), [BLOCK_M, BLOCK_N])
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


def gemv_config(N: int, K: int) -> dict:
    """Tile sizes for one weight shape on an H200 (132 SMs): about one program per SM or more, 16-64 weight rows
    each, K tiles of 256-512 elements so that a few stages keep ~32 KB per program in flight."""
    block_n = 16 if N <= 8192 else 64
    block_k = min(512 if K >= 8192 else 256, triton.next_power_of_2(K))
    return dict(BLOCK_N=block_n, BLOCK_K=block_k, num_warps=4, num_stages=4, USE_DOT=True)


def fused_linear(x: torch.Tensor, weight: torch.Tensor, *, norm_weight: torch.Tensor | None = None,
                 eps: float = 1e-5, residual: torch.Tensor | None = None, silu_mul: bool = False,
                 out_dtype: torch.dtype | None = None, config: dict | None = None) -> torch.Tensor:
    """See the module docstring. x: [M, K] (M ≤ 16), weight: [N, K]; returns [M, N] ([M, N/2] with silu_mul,
    ``residual`` itself with residual)."""
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
    cfg = dict(gemv_config(n_out, K), **(config or {}))
    block_n, block_k, use_dot = cfg.pop("BLOCK_N"), cfg.pop("BLOCK_K"), cfg.pop("USE_DOT") or M > 1
    _fused_gemv_kernel[(triton.cdiv(n_out, block_n),)](
        x, weight, y, norm_weight if norm_weight is not None else x, M, n_out, K,
        x.stride(0), weight.stride(0), y.stride(0), eps,
        NORM=norm_weight is not None, RESIDUAL=residual is not None, SILU_MUL=silu_mul,
        BLOCK_M=MAX_M if use_dot else 1, BLOCK_N=block_n, BLOCK_K=block_k, EVEN_K=K % block_k == 0,
        PRECISION="ieee" if x.dtype == torch.float32 else "tf32", USE_DOT=use_dot, **cfg)
    return y
