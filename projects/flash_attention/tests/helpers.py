"""Shared helpers for the flash_attention tests: random inputs and FlashAttention's error rule."""
from __future__ import annotations

import torch
from gpufolio_projects.flash_attention.reference import reference_attention


def make_qkv(B, H, Hkv, Sq, Sk, D, dtype, device="cpu", qk_magnitude=1.0, grad=False):
    """q: [B, H, Sq, D], k, v: [B, Hkv, Sk, D], standard normal (q and k times qk_magnitude)."""
    def rnd(shape, scale=1.0):
        t = (torch.randn(*shape, device=device, dtype=torch.float32) * scale).to(dtype)
        return t.requires_grad_(grad)

    return rnd((B, H, Sq, D), qk_magnitude), rnd((B, Hkv, Sk, D), qk_magnitude), rnd((B, Hkv, Sk, D))


def max_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max())


def check_flash_rule(outs, q, k, v, causal, scale=None, do=None, factor=2.0, slack=1e-4, names=None):
    """Each output's max error against the fp32 reference <= factor × the error of the same-dtype reference
    (materialised softmax in the input dtype) + slack. fp32 inputs: the same-dtype reference IS the reference,
    so the bound is the slack."""
    ref = reference_attention(q, k, v, causal, scale, do=do)
    lowp = reference_attention(q, k, v, causal, scale, do=do, compute_dtype=q.dtype)
    ref = ref if isinstance(ref, tuple) else (ref,)
    lowp = lowp if isinstance(lowp, tuple) else (lowp,)
    outs = outs if isinstance(outs, tuple) else (outs,)
    names = names or ["out", "dq", "dk", "dv"]
    for name, o, r, lo in zip(names, outs, ref, lowp):
        assert o.shape == r.shape, f"{name}: shape {tuple(o.shape)} != {tuple(r.shape)}"
        assert o.dtype == q.dtype, f"{name}: dtype {o.dtype} != {q.dtype}"
        assert torch.isfinite(o).all(), f"{name}: non-finite values"
        err, lowp_err = max_err(o, r), max_err(lo, r)
        bound = factor * lowp_err + slack
        assert err <= bound, f"{name}: max error {err:.3e} > {factor} × same-dtype error {lowp_err:.3e} + {slack:g}"
