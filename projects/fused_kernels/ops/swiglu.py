"""SwiGLU activation silu(gate) * up in Triton, forward and backward.

    h  = silu(g) * u,  silu(g) = g * sigmoid(g)
    du = dh * silu(g)
    dg = dh * u * sigmoid(g) * (1 + g * (1 - sigmoid(g)))

An elementwise op: gate and up are treated as flat arrays (same shape, contiguous), so every program moves
BLOCK contiguous elements with 16-byte vector loads, whatever the row width. I/O forward = read g, u +
write h (3 passes; eager writes silu(g) and reads it back: 5). Backward = read dh, g, u + write dg, du;
sigmoid(g) is recomputed rather than saved, which costs no memory traffic.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import _load

BLOCK = 4096  # elements per program: 8 KiB of bf16 per tensor, 16 elements (two 16 B vectors) per thread
NUM_WARPS = 8
STREAM_STORE = False


@triton.jit
def _store(ptrs, v, mask, STREAM: tl.constexpr):
    """STREAM: st.global.cs (evict-first streaming store) for outputs nobody re-reads soon; a sweep option."""
    if STREAM:
        tl.store(ptrs, v, mask=mask, cache_modifier=".cs")
    else:
        tl.store(ptrs, v, mask=mask)


@triton.jit
def _swiglu_fwd_block(g_ptr, u_ptr, h_ptr, numel, blk, BLOCK: tl.constexpr, EVICT_FIRST: tl.constexpr,
                      STREAM_STORE: tl.constexpr):
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    g = _load(g_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
    u = _load(u_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
    h = g * tl.sigmoid(g) * u
    _store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask, STREAM_STORE)


@triton.jit
def _swiglu_fwd_kernel(g_ptr, u_ptr, h_ptr, numel, BLOCK: tl.constexpr, EVICT_FIRST: tl.constexpr,
                       STREAM_STORE: tl.constexpr, PERSISTENT: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)  # int64 offsets: numel may pass 2^31
    if PERSISTENT:  # a grid-stride loop over the blocks (a sweep option)
        for blk in range(pid, tl.cdiv(numel, BLOCK), tl.num_programs(0)):
            _swiglu_fwd_block(g_ptr, u_ptr, h_ptr, numel, blk, BLOCK, EVICT_FIRST, STREAM_STORE)
    else:
        _swiglu_fwd_block(g_ptr, u_ptr, h_ptr, numel, pid, BLOCK, EVICT_FIRST, STREAM_STORE)


@triton.jit
def _swiglu_bwd_block(dh_ptr, g_ptr, u_ptr, dg_ptr, du_ptr, numel, blk, BLOCK: tl.constexpr,
                      EVICT_FIRST: tl.constexpr, STREAM_STORE: tl.constexpr):
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    dh = _load(dh_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
    g = _load(g_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
    u = _load(u_ptr + offs, mask, EVICT_FIRST).to(tl.float32)
    sig = tl.sigmoid(g)
    silu = g * sig
    _store(du_ptr + offs, (dh * silu).to(du_ptr.dtype.element_ty), mask, STREAM_STORE)
    dg = dh * u * sig * (1.0 + g * (1.0 - sig))
    _store(dg_ptr + offs, dg.to(dg_ptr.dtype.element_ty), mask, STREAM_STORE)


@triton.jit
def _swiglu_bwd_kernel(dh_ptr, g_ptr, u_ptr, dg_ptr, du_ptr, numel, BLOCK: tl.constexpr,
                       EVICT_FIRST: tl.constexpr, STREAM_STORE: tl.constexpr, PERSISTENT: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    if PERSISTENT:
        for blk in range(pid, tl.cdiv(numel, BLOCK), tl.num_programs(0)):
            _swiglu_bwd_block(dh_ptr, g_ptr, u_ptr, dg_ptr, du_ptr, numel, blk, BLOCK, EVICT_FIRST, STREAM_STORE)
    else:
        _swiglu_bwd_block(dh_ptr, g_ptr, u_ptr, dg_ptr, du_ptr, numel, pid, BLOCK, EVICT_FIRST, STREAM_STORE)


def _flat(*ts: torch.Tensor) -> list[torch.Tensor]:
    shape = ts[0].shape
    for t in ts[1:]:
        if t.shape != shape:
            raise ValueError(f"swiglu: shapes differ, {tuple(shape)} vs {tuple(t.shape)}")
    return [t.contiguous().view(-1) for t in ts]


def _grid(numel: int, block: int, progs: int) -> tuple[int]:
    """One program per block, or ``progs`` programs striding over the blocks (0: one per block)."""
    n_blocks = triton.cdiv(numel, block)
    return (min(n_blocks, progs) if progs else n_blocks,)


def swiglu_forward(gate: torch.Tensor, up: torch.Tensor, block: int = BLOCK, num_warps: int = NUM_WARPS,
                   evict_first: bool = False, stream_store: bool = STREAM_STORE, progs: int = 0) -> torch.Tensor:
    g, u = _flat(gate, up)
    h = torch.empty_like(g)
    if g.numel():
        _swiglu_fwd_kernel[_grid(g.numel(), block, progs)](g, u, h, g.numel(), BLOCK=block, EVICT_FIRST=evict_first,
                                                             STREAM_STORE=stream_store, PERSISTENT=progs > 0, num_warps=num_warps)
    return h.view(gate.shape)


def swiglu_backward(dh: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, block: int = BLOCK,
                    num_warps: int = NUM_WARPS, evict_first: bool = False, stream_store: bool = STREAM_STORE,
                    progs: int = 0):
    dh_, g, u = _flat(dh, gate, up)
    dg, du = torch.empty_like(g), torch.empty_like(u)
    if g.numel():
        _swiglu_bwd_kernel[_grid(g.numel(), block, progs)](dh_, g, u, dg, du, g.numel(), BLOCK=block,
                                                             EVICT_FIRST=evict_first, STREAM_STORE=stream_store,
                                                             PERSISTENT=progs > 0, num_warps=num_warps)
    return dg.view(gate.shape), du.view(up.shape)


class SwiGLUFunction(torch.autograd.Function):
    """(gate, up) -> silu(gate) * up; saves gate and up (not silu(gate)) for the backward."""

    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return swiglu_forward(gate, up)

    @staticmethod
    def backward(ctx, dh):
        gate, up = ctx.saved_tensors
        return swiglu_backward(dh, gate, up)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """Fused ``F.silu(gate) * up`` (forward and backward in Triton)."""
    return SwiGLUFunction.apply(gate, up)
