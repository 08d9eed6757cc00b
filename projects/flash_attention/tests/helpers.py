"""Shared helpers for the flash_attention tests: random inputs and FlashAttention's error rule."""
from __future__ import annotations

import torch
from gpufolio.api import FlashRule
from gpufolio.check import compare_flash_rule
from gpufolio_projects.flash_attention.bench import SLACK
from gpufolio_projects.flash_attention.reference import reference_attention


def make_qkv(B, H, Hkv, Sq, Sk, D, dtype, device="cpu", qk_magnitude=1.0, grad=False):
    """q: [B, H, Sq, D], k, v: [B, Hkv, Sk, D], standard normal (q and k times qk_magnitude)."""
    def rnd(shape, scale=1.0):
        t = (torch.randn(*shape, device=device, dtype=torch.float32) * scale).to(dtype)
        return t.requires_grad_(grad)

    return rnd((B, H, Sq, D), qk_magnitude), rnd((B, Hkv, Sk, D), qk_magnitude), rnd((B, Hkv, Sk, D))


def check_flash_rule(outs, q, k, v, causal, scale=None, do=None, factor=2.0, slack=None, names=None):
    """The bench's check (``gpufolio.check.compare_flash_rule``): each output's max error against the fp32
    reference <= factor × the error of the same-dtype reference (``reference_attention`` in the input dtype)
    + slack (the bench's ``SLACK`` for the dtype unless given). fp32 inputs: the same-dtype reference IS the
    reference, so the bound is the slack."""
    if slack is None:
        slack = SLACK[str(q.dtype).removeprefix("torch.")]
    ref = reference_attention(q, k, v, causal, scale, do=do)
    lowp = reference_attention(q, k, v, causal, scale, do=do, compute_dtype=q.dtype)
    outs = outs if isinstance(outs, tuple) else (outs,)
    names = names or ["out", "dq", "dk", "dv"]
    for name, o in zip(names, outs):
        assert o.dtype == q.dtype, f"{name}: dtype {o.dtype} != {q.dtype}"
    result = compare_flash_rule(outs, ref, lowp, FlashRule(factor=factor, slack=slack))
    assert result["checks"], f"{names}: {result['detail']}"
    for name, c in zip(names, result["checks"]):
        assert not c["non_finite"], f"{name}: non-finite values"
        assert c["passed"], (f"{name}: max error {c['max_abs_err']:.3e} > {factor} × same-dtype error "
                             f"{c['lowp_max_abs_err']:.3e} + {slack:g}")
