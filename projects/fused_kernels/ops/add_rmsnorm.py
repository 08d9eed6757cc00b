"""Residual-add + RMSNorm in Triton, forward and backward; plain RMSNorm is the same kernels with HAS_RESIDUAL off.

    s     = x + residual                      (fp32; stored back as the new residual in the input dtype)
    y     = w * s * rstd,  rstd = 1/sqrt(mean(s^2) + eps)
    ds    = rstd * (w*dy - n * mean(n * w*dy)) + d(residual_out),  n = s * rstd
    dx    = dresidual = ds                    (the add passes the same gradient to both inputs)
    dw    = sum over rows of dy * n           (per-program fp32 partial sums, then one reduction)

Why it wins on the roofline: unfused, x + r writes s and the norm reads it back, 2 extra passes over a
[T, H] tensor (5 passes instead of 4 in the forward). Here each element is read and written once:
I/O forward = read x, r + write y, r_out; backward = read dy, d(r_out), r_out + write ds. The backward
recomputes rstd from the saved residual (a row reduction in registers) instead of saving it: one fewer
tensor to keep alive between forward and backward, and no extra pass.

Layout: rows are [T, H] contiguous; a program holds ROWS x BLOCK_N elements in registers (BLOCK_N =
next_pow2(H), masked for odd widths). Small H packs several rows per program so each still moves enough bytes.
Widths that are not a multiple of 16 elements run the kernels of rmsnorm_split.py instead (same math, each row
split so that its body moves as 16-byte vectors): ``LaunchConfig.split``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
import triton
import triton.language as tl

from . import _rows
from ._common import _load, _rms_grad
from .rmsnorm_split import _rmsnorm_bwd_split_kernel, _rmsnorm_fwd_split_kernel

MAX_BLOCK_N = 65536  # beyond this a row no longer fits in one program's registers: refuse rather than spill


@triton.jit
def _rmsnorm_fwd_kernel(x_ptr, r_ptr, w_ptr, y_ptr, r_out_ptr, n_rows, n_cols, eps,
                        HAS_RESIDUAL: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
                        EVICT_FIRST: tl.constexpr):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)).to(tl.int64)[:, None]  # [ROWS, 1]
    cols = tl.arange(0, BLOCK_N)[None, :]  # [1, BLOCK_N]
    col_ok = cols < n_cols
    mask = (rows < n_rows) & col_ok
    offs = rows * n_cols + cols
    s = _load(x_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
    if HAS_RESIDUAL:
        s += _load(r_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
        tl.store(r_out_ptr + offs, s.to(r_out_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(s * s, axis=1) / n_cols + eps)  # [ROWS]
    y = s * rstd[:, None] * w
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_bwd_kernel(dy_ptr, dr_out_ptr, s_ptr, w_ptr, ds_ptr, dw_part_ptr, n_rows, n_cols, eps,
                        tiles_per_prog, HAS_DRES: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
                        PREFETCH: tl.constexpr, EVICT_FIRST: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)[None, :]
    col_ok = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw_acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    t_first = pid * tiles_per_prog
    t_end = t_first + tiles_per_prog
    row_stop = tl.minimum(n_rows, t_end * ROWS)
    if PREFETCH:  # registers double-buffer the rows: tile t+1's loads are in flight while tile t computes
        rows = (t_first * ROWS + tl.arange(0, ROWS)).to(tl.int64)[:, None]
        mask = (rows < n_rows) & col_ok
        s_next = _load(s_ptr + rows * n_cols + cols, mask, EVICT_FIRST)  # raw dtype: half the registers
        dy_next = _load(dy_ptr + rows * n_cols + cols, mask, EVICT_FIRST)
        if HAS_DRES:
            dr_next = _load(dr_out_ptr + rows * n_cols + cols, mask, EVICT_FIRST)
    # A contiguous run of row tiles per program: its dw partial is one row of dw_part, no atomics.
    for t in range(t_first, t_end):
        rows = (t * ROWS + tl.arange(0, ROWS)).to(tl.int64)[:, None]
        mask = (rows < n_rows) & col_ok
        offs = rows * n_cols + cols
        if PREFETCH:
            s = s_next.to(tl.float32)
            dy = dy_next.to(tl.float32)
            if HAS_DRES:
                dr = dr_next.to(tl.float32)
            nxt = offs + ROWS * n_cols
            nmask = (rows + ROWS < row_stop) & col_ok  # the next tile, if it is still this program's
            s_next = _load(s_ptr + nxt, nmask, EVICT_FIRST)
            dy_next = _load(dy_ptr + nxt, nmask, EVICT_FIRST)
            if HAS_DRES:
                dr_next = _load(dr_out_ptr + nxt, nmask, EVICT_FIRST)
        else:
            s = _load(s_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
            dy = _load(dy_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
            if HAS_DRES:
                dr = _load(dr_out_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(s * s, axis=1) / n_cols + eps)[:, None]
        n = s * rstd
        wdy = w * dy
        c = tl.sum(n * wdy, axis=1)[:, None] / n_cols
        ds = _rms_grad(n, wdy, rstd, c)
        if HAS_DRES:
            ds += dr
        tl.store(ds_ptr + offs, ds.to(ds_ptr.dtype.element_ty), mask=mask)
        dw_acc += tl.sum(dy * n, axis=0)
    tl.store(dw_part_ptr + pid * n_cols + tl.arange(0, BLOCK_N), dw_acc, mask=tl.arange(0, BLOCK_N) < n_cols)


@dataclass(frozen=True)
class LaunchConfig:
    """How one [T, H] problem maps onto programs. Defaults from ``launch_config``; the sweep overrides them."""

    block_n: int
    rows: int  # rows per program (per loop step in the backward)
    num_warps: int
    bwd_num_warps: int = 16  # the backward holds 3 rows + the dweight accumulator: more threads, fewer registers each
    bwd_progs_per_sm: int = 1  # backward programs per SM (each loops over a run of row tiles)
    bwd_stages: int = 1  # software-pipelining depth of the backward's row loop (Triton num_stages)
    bwd_prefetch: bool = True  # load row tile t+1 before computing tile t (register double-buffering)
    evict_first: bool = False  # L1/L2 evict-first hints on the streamed loads
    split: bool = False  # rows as head / 16-byte-aligned body / tail (rmsnorm_split.py); block_n is the body's

    def __post_init__(self) -> None:
        if self.block_n > MAX_BLOCK_N:
            raise ValueError(f"hidden size needs BLOCK_N={self.block_n} > {MAX_BLOCK_N}: unsupported")
        if self.rows < 1 or self.rows & (self.rows - 1):
            raise ValueError(f"rows per program must be a power of two, got {self.rows}")


@lru_cache(maxsize=64)  # per call this is Python overhead on the launch path: compute once per width
def launch_config(n_cols: int, elem_size: int = 2, split: bool | None = None) -> LaunchConfig:
    """BLOCK_N = next_pow2(H); forward warps grow with the row (4 up to 2048 wide, 8 at 4096, 16 from 8192) so
    each thread holds 8-16 elements; small rows are packed so a program moves at least ~4096 elements. The
    backward keeps three rows and a dweight accumulator live, so it runs twice the warps (8 elements per thread
    at 4096), one program per SM, and double-buffers its rows in registers: round 1's sweep on the H200 put
    that at 3.43 TB/s against 3.25 for 8 warps x 2 per SM without prefetch and 2.17 for one program per SM
    without it (a persistent program that waits for each row before computing it starves HBM).

    Widths not a multiple of 16 elements (where Triton cannot prove the plain kernel's rows 16-byte aligned)
    take the split kernels, sized to the row's aligned body: 4096 lanes at H = 4097, not 8192 (``split``
    forces either kernel, for the sweeps). The split backward runs as many warps as the forward, not twice:
    on the H200 (tune_odd, this session) half the warps ran its forward+backward at 8191 at 2.47 against
    1.52 TB/s (add+RMSNorm; 2.11 against 1.45 for RMSNorm)."""
    split = n_cols % 16 != 0 if split is None else split
    block_n = _rows.body_block(n_cols, _rows.vec_elems(elem_size)) if split else triton.next_power_of_2(n_cols)
    num_warps = 4 if block_n <= 2048 else 8 if block_n <= 4096 else 16
    rows = max(1, min(16, 4096 // block_n))
    bwd_num_warps = num_warps if split else min(32, 2 * num_warps)
    return LaunchConfig(block_n=block_n, rows=rows, num_warps=num_warps, bwd_num_warps=bwd_num_warps, split=split)


@lru_cache(maxsize=16)
def _sm_count(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # interpreter: a few programs, so the partial-sum reduction is still exercised


def _check_block(cfg: LaunchConfig, n_cols: int, vec: int) -> None:
    """A config made for another width or dtype could leave columns outside the block: refuse it."""
    need = n_cols // vec * vec if cfg.split else n_cols
    if cfg.block_n < need:
        raise ValueError(f"block_n={cfg.block_n} < {need} columns per row (split={cfg.split}, {vec} per vector)")


def _as_rows(t: torch.Tensor, n_cols: int) -> torch.Tensor:
    """[..., H] -> contiguous [rows, H]; the common case (already that) costs two attribute reads, because on
    a slow host the Python around a launch is a visible share of a 0.3 ms kernel."""
    return t if t.dim() == 2 and t.is_contiguous() else t.reshape(-1, n_cols).contiguous()


def rmsnorm_forward(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float,
                    cfg: LaunchConfig | None = None):
    """x, residual: [..., H]; weight: [H]. Returns (y, residual_out); residual_out is None without a residual.
    residual_out is the new residual stream x + residual, in x's dtype."""
    shape = x.shape
    n_cols = shape[-1]
    x2 = _as_rows(x, n_cols)
    weight = weight.contiguous()
    n_rows = x2.shape[0]
    cfg = cfg or launch_config(n_cols, x.element_size())
    y = torch.empty_like(x2)
    if residual is not None:
        if residual.shape != shape:
            raise ValueError(f"residual shape {tuple(residual.shape)} != x shape {tuple(shape)}")
        r2 = _as_rows(residual, n_cols)
        r_out = torch.empty_like(x2)
    else:
        r2 = r_out = x2  # unused: HAS_RESIDUAL=False compiles the loads and stores away
    vec = _rows.vec_elems(x.element_size())
    _check_block(cfg, n_cols, vec)
    if n_rows and cfg.split:
        P = _rows.n_phases(n_cols, vec)
        grid = (P * triton.cdiv(triton.cdiv(n_rows, P), cfg.rows),)  # P phases x their row tiles
        _rmsnorm_fwd_split_kernel[grid](x2, r2, weight, y, r_out, n_rows, n_cols, eps, P,
                                        HAS_RESIDUAL=residual is not None, ROWS=cfg.rows, BLOCK_N=cfg.block_n,
                                        VEC=vec, EDGE=_rows.edge_lanes(cfg.num_warps, cfg.rows, vec),
                                        EVICT_FIRST=cfg.evict_first, num_warps=cfg.num_warps)
    elif n_rows:
        grid = (triton.cdiv(n_rows, cfg.rows),)
        _rmsnorm_fwd_kernel[grid](x2, r2, weight, y, r_out, n_rows, n_cols, eps, HAS_RESIDUAL=residual is not None,
                                  ROWS=cfg.rows, BLOCK_N=cfg.block_n, EVICT_FIRST=cfg.evict_first,
                                  num_warps=cfg.num_warps)
    if x2.shape != shape:
        y = y.view(shape)
        r_out = r_out.view(shape)
    return y, (r_out if residual is not None else None)


def rmsnorm_backward(dy: torch.Tensor, dres_out: torch.Tensor | None, s: torch.Tensor, weight: torch.Tensor,
                     eps: float, cfg: LaunchConfig | None = None):
    """Gradients of rmsnorm_forward. ``s`` is the normalised input (residual_out, or x for plain RMSNorm);
    ``dres_out`` the gradient flowing into residual_out (None if it has none). Returns (ds, dweight)."""
    shape = s.shape
    n_cols = shape[-1]
    s2 = _as_rows(s, n_cols)
    dy2 = _as_rows(dy, n_cols)
    dr2 = _as_rows(dres_out, n_cols) if dres_out is not None else dy2
    weight = weight.contiguous()
    n_rows = s2.shape[0]
    cfg = cfg or launch_config(n_cols, s.element_size())
    ds = torch.empty_like(s2)
    vec = _rows.vec_elems(s.element_size())
    _check_block(cfg, n_cols, vec)
    P = _rows.n_phases(n_cols, vec) if cfg.split else 1
    # Each of the P phases gets the same number of programs, each a contiguous run of that phase's row tiles.
    n_tiles = triton.cdiv(triton.cdiv(n_rows, P), cfg.rows)  # phase 0's: the most of any phase
    per_phase = max(1, min(n_tiles, _sm_count(s.device) * cfg.bwd_progs_per_sm // P))
    tiles_per_prog = triton.cdiv(n_tiles, per_phase)
    n_progs = P * (triton.cdiv(n_tiles, tiles_per_prog) if n_tiles else 1)  # no program with an empty range
    dw_part = torch.empty((n_progs, n_cols), dtype=torch.float32, device=s.device)
    if n_rows and cfg.split:
        _rmsnorm_bwd_split_kernel[(n_progs,)](dy2, dr2, s2, weight, ds, dw_part, n_rows, n_cols, eps, P,
                                              tiles_per_prog, HAS_DRES=dres_out is not None, ROWS=cfg.rows,
                                              BLOCK_N=cfg.block_n, VEC=vec,
                                              EDGE=_rows.edge_lanes(cfg.bwd_num_warps, cfg.rows, vec),
                                              PREFETCH=cfg.bwd_prefetch,
                                              EVICT_FIRST=cfg.evict_first, num_warps=cfg.bwd_num_warps,
                                              num_stages=cfg.bwd_stages)
    elif n_rows:
        _rmsnorm_bwd_kernel[(n_progs,)](dy2, dr2, s2, weight, ds, dw_part, n_rows, n_cols, eps, tiles_per_prog,
                                        HAS_DRES=dres_out is not None, ROWS=cfg.rows, BLOCK_N=cfg.block_n,
                                        PREFETCH=cfg.bwd_prefetch, EVICT_FIRST=cfg.evict_first,
                                        num_warps=cfg.bwd_num_warps,
                                        num_stages=cfg.bwd_stages)
    else:
        dw_part.zero_()
    dw = dw_part.sum(0).to(weight.dtype)
    return (ds if ds.shape == shape else ds.view(shape)), dw


class AddRMSNormFunction(torch.autograd.Function):
    """(x, residual, weight) -> (rmsnorm(x + residual) * weight, x + residual)."""

    @staticmethod
    def forward(ctx, x, residual, weight, eps):
        y, r_out = rmsnorm_forward(x, residual, weight, eps)
        ctx.save_for_backward(r_out, weight)
        ctx.eps = eps
        # An unused residual_out gets None, not a [T, H] tensor of zeros that the kernel would then read.
        ctx.set_materialize_grads(False)
        return y, r_out

    @staticmethod
    def backward(ctx, dy, dr_out):
        r_out, weight = ctx.saved_tensors
        if dy is None:
            dy = torch.zeros_like(r_out)
        ds, dw = rmsnorm_backward(dy, dr_out, r_out, weight, ctx.eps)
        # The same tensor for x and residual: autograd copies before it would let one alias the other's .grad.
        return ds, ds, dw, None


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
    """Fused ``s = x + residual; return rmsnorm(s) * weight, s`` (forward and backward in Triton)."""
    return AddRMSNormFunction.apply(x, residual, weight, eps)
