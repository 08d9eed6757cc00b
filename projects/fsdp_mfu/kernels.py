"""The three replaceable ops (RMSNorm, SwiGLU, attention) as one bundle chosen at build time.

Default: plain PyTorch (what torch.compile fuses). Optional, off by default: the sibling projects' Triton
kernels (``gpufolio_projects.fused_kernels``, ``gpufolio_projects.flash_attention``). Their imports are
guarded: asking for them when they are not importable (or expose no function we know) raises with the
reason, it never silently falls back.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F


def rmsnorm_torch(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # Statistics in fp32, result in x's dtype (Llama's reference does the same).
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return y.type_as(x) * weight


def swiglu_torch(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return F.silu(gate) * up


def attention_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """q: [B, H, T, D], k/v: [B, KV, T, D], causal. SDPA picks the backend (flash / cuDNN / math)."""
    gqa = q.shape[1] != k.shape[1]
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa) if gqa else \
        F.scaled_dot_product_attention(q, k, v, is_causal=True)


@dataclass(frozen=True)
class Kernels:
    rmsnorm: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
    swiglu: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    attention: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
    label: str


def torch_kernels() -> Kernels:
    return Kernels(rmsnorm_torch, swiglu_torch, attention_sdpa, "torch")


def _find(module: str, names: tuple[str, ...]) -> Callable:
    """The first of ``names`` that ``module`` exposes; ImportError with the reason otherwise."""
    try:
        mod = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - a sibling being written may fail in any way; say how
        raise ImportError(f"{module} is not importable: {type(e).__name__}: {e}") from e
    for name in names:
        fn = getattr(mod, name, None)
        if callable(fn):
            return fn
    raise ImportError(f"{module} exposes none of {names}")


def build_kernels(fused: bool = False, triton_attention: bool = False) -> Kernels:
    """fused: RMSNorm and SwiGLU from gpufolio_projects.fused_kernels; triton_attention: causal attention
    from gpufolio_projects.flash_attention (called as fn(q, k, v, causal=True) on [B, H, T, D])."""
    k = torch_kernels()
    rmsnorm, swiglu, attention, labels = k.rmsnorm, k.swiglu, k.attention, []
    if fused:
        fk_rms = _find("gpufolio_projects.fused_kernels.ops.rmsnorm", ("rmsnorm", "rms_norm"))
        fk_swiglu = _find("gpufolio_projects.fused_kernels.ops.swiglu", ("swiglu", "swiglu_fn"))

        def rmsnorm(x, w, eps, _f=fk_rms):
            return _f(x, w, eps)

        def swiglu(g, u, _f=fk_swiglu):
            return _f(g, u)

        labels.append("fused_kernels")
    if triton_attention:
        # flash_attention(q, k, v, causal): SDPA's layout, GQA native; its causal mask is bottom-right aligned,
        # the same as SDPA's top-left here because Sq == Sk.
        fa = _find("gpufolio_projects.flash_attention.attention", ("flash_attention",))

        def attention(q, kk, v, _f=fa):
            return _f(q, kk, v, causal=True)

        labels.append("triton_attention")
    return Kernels(rmsnorm, swiglu, attention, "+".join(labels) or "torch")
