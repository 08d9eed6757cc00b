"""Pieces the kernels share."""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _load(ptrs, mask, EVICT_FIRST: tl.constexpr):
    """A masked streaming load (0 where masked). EVICT_FIRST adds L1/L2 evict-first hints: a sweep option, off
    by default, because with it the copy reached only 91-93% of Tensor.copy_ on the H200 in round 1."""
    if EVICT_FIRST:
        v = tl.load(ptrs, mask=mask, other=0.0, eviction_policy="evict_first")
    else:
        v = tl.load(ptrs, mask=mask, other=0.0)
    return v


@triton.jit
def _store(ptrs, v, mask):
    """Store in the pointer's dtype (the kernels compute in fp32 and store in the activations' dtype)."""
    tl.store(ptrs, v.to(ptrs.dtype.element_ty), mask=mask)


@triton.jit
def _rms_grad(n, wdy, rstd, c):
    """ds for one part of a row: y = w * n, n = s * rstd gives ds = rstd * (w*dy - n * c), c = mean(n * w*dy)
    over the whole row (so a row split into parts shares rstd and c)."""
    return rstd * (wdy - n * c)


@triton.jit
def _online_lse_step(m, acc, zsum, z, mask, HAS_SMOOTHING: tl.constexpr):
    """One step of a per-lane running max m and sum of exp(z - m), and the sum of z for label smoothing.
    One exp per element, not two: if z > m the sum is rescaled by exp(m - z) and gains exp(0) = 1, otherwise it
    gains exp(z - m); both are exp(-|z - m|). Masked lanes must hold z = -inf (they add exp(-inf) = 0); m
    starts at a finite floor, so the first real z gives exp(-huge) = 0 and a sum of 1."""
    e = tl.exp(-tl.abs(z - m))
    up = z > m
    acc = tl.where(up, acc * e + 1.0, acc + e)
    m = tl.maximum(m, z)
    if HAS_SMOOTHING:
        zsum += tl.where(mask, z, 0.0)
    return m, acc, zsum
