"""``flash_attention(q, k, v, causal=False, scale=None, backend="triton")``: our FlashAttention with autograd.

Layout as ``torch.nn.functional.scaled_dot_product_attention``:
    q: [B, H, Sq, D]   k, v: [B, Hkv, Sk, D] with Hkv dividing H (GQA; Hkv = 1 is MQA)   ->   [B, H, Sq, D]
Causal masks are aligned bottom-right (FlashAttention-2): query i sees key j iff j <= i + Sk - Sq. Note that
SDPA's ``is_causal=True`` aligns top-left; the two agree when Sq == Sk.

Supported: CUDA tensors in bfloat16/float16 (float32 too, but only under TRITON_INTERPRET=1, for CPU tests),
head dims in ``SUPPORTED_HEAD_DIMS``, any sequence lengths. Anything else raises TypeError/ValueError before a
kernel launches.

Backends (the forward kernel; the backward is the Triton one, kernels/bwd.py, except for "gluon_bwd"):
    "triton"         kernels/fwd.py, everything above.
    "gluon"          kernels/gluon_fwd.py: warp-specialised (TMA producer warp, two ping-ponging wgmma consumer
                     warpgroups), Hopper and triton 3.6 only; Sq == Sk and H == Hkv (no GQA/MQA yet).
    "gluon_overlap"  the same with FlashAttention-3's intra-warpgroup overlap of softmax and the next GEMM.
    "gluon_lean"     "gluon_overlap" with leaner per-key-block synchronisation: every consumer thread arrives on
                     the mbarriers for itself (no warpgroup bar.sync before each arrive) and the softmax scale
                     rides in the exponent's FMA.
    "gluon_under_pv" "gluon_lean" with the softmax of key block j running while block j-1's P·V is on the
                     tensor cores (the next turn is taken between the two, which keeps ptxas from hoisting
                     the wait on P·V above the softmax).
    "gluon_persistent" "gluon_under_pv" with one CTA per SM walking tiles, the next tile's Q loading during
                     the current one.
    "gluon_bwd"      "gluon_persistent"'s forward and the warp-specialised Gluon backward (kernels/gluon_bwd.py:
                     a TMA producer warp, two consumer warpgroups, dQ by TMA reduce-adds).
"""
from __future__ import annotations

import math

import torch

from .kernels.launch import attn_bwd, attn_fwd
from .kernels.tuning import SUPPORTED_HEAD_DIMS, interpreting

GPU_DTYPES = (torch.bfloat16, torch.float16)
BACKENDS = ("triton", "gluon", "gluon_overlap", "gluon_lean", "gluon_under_pv", "gluon_persistent", "gluon_bwd")
# The Gluon backends' schedules: backend -> gluon_attention_fwd's schedule keywords; ping-pong is always on.
GLUON_SCHEDULES = {"gluon": dict(overlap=False, lean=False, under_pv=False),
                   "gluon_overlap": dict(overlap=True, lean=False, under_pv=False),
                   "gluon_lean": dict(overlap=True, lean=True, under_pv=False),
                   "gluon_under_pv": dict(overlap=True, lean=True, under_pv=True),
                   "gluon_persistent": dict(overlap=True, lean=True, under_pv=True, persistent=True),
                   "gluon_bwd": dict(overlap=True, lean=True, under_pv=True, persistent=True)}
GLUON_BACKWARD = ("gluon_bwd", )  # the backends whose backward is kernels/gluon_bwd.py
INTERPRETER_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def check_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None) -> float:
    """Validates shapes, dtypes and devices; returns the softmax scale to use."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"flash_attention: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"flash_attention: {name} must be 4-D [batch, heads, seqlen, head_dim], got shape "
                             f"{tuple(t.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"flash_attention: q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"flash_attention: q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    if q.device.type == "cuda":
        if interpreting():
            raise ValueError("flash_attention: TRITON_INTERPRET=1 runs kernels on CPU tensors; got CUDA tensors")
        if q.dtype not in GPU_DTYPES:
            raise TypeError(f"flash_attention: dtype {q.dtype} is not supported on CUDA; use torch.bfloat16 or "
                            "torch.float16")
    elif q.device.type == "cpu" and interpreting():
        if q.dtype not in INTERPRETER_DTYPES:
            raise TypeError(f"flash_attention: dtype {q.dtype} is not supported; use bfloat16/float16 (float32 "
                            "only under the interpreter)")
    else:
        raise ValueError(f"flash_attention: device {q.device} is not supported: the kernels need a CUDA GPU "
                         "(or CPU tensors with TRITON_INTERPRET=1)")
    B, H, Sq, D = q.shape
    if k.shape != v.shape:
        raise ValueError(f"flash_attention: k and v must have one shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    Bk, Hkv, Sk, Dk = k.shape
    if Bk != B:
        raise ValueError(f"flash_attention: batch sizes differ: q has {B}, k/v have {Bk}")
    if Dk != D:
        raise ValueError(f"flash_attention: head dims differ: q has {D}, k/v have {Dk}")
    if D not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"flash_attention: head_dim {D} is not supported; supported: {list(SUPPORTED_HEAD_DIMS)}")
    if Hkv == 0 or H % Hkv != 0:
        raise ValueError(f"flash_attention: the {Hkv} KV heads must divide the {H} query heads (GQA/MQA)")
    if min(B, H, Sq, Sk) == 0:
        raise ValueError(f"flash_attention: empty input: q {tuple(q.shape)}, k {tuple(k.shape)}")
    if scale is None:
        return 1.0 / math.sqrt(D)
    scale = float(scale)
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"flash_attention: scale must be a positive finite number, got {scale}")
    return scale


def check_backend(backend: str, q: torch.Tensor, k: torch.Tensor) -> None:
    """What the Gluon forward does not cover yet is refused here, naming the backend that does."""
    if backend not in BACKENDS:
        raise ValueError(f"flash_attention: backend {backend!r} unknown; backends are {', '.join(BACKENDS)}")
    if backend == "triton":
        return
    if k.shape[1] != q.shape[1]:
        raise ValueError(f"flash_attention: backend {backend!r} needs as many KV heads as query heads (no GQA/MQA "
                         f"yet), got {k.shape[1]} and {q.shape[1]}; use backend='triton'")
    if k.shape[2] != q.shape[2]:
        raise ValueError(f"flash_attention: backend {backend!r} needs Sq == Sk, got {q.shape[2]} and {k.shape[2]}; "
                         "use backend='triton'")


def _forward(q, k, v, causal: bool, scale: float, backend: str):
    if backend == "triton":
        return attn_fwd(q, k, v, causal, scale)
    from .kernels.gluon_fwd import gluon_attention_fwd

    o, lse = gluon_attention_fwd(q, k, v, causal=causal, scale=scale, pingpong=True, **GLUON_SCHEDULES[backend])
    return o, lse.view(-1, q.shape[2])  # [B·H, S], the layout the Triton backward reads


class FlashAttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal: bool, scale: float, atomic_dq: bool, backend: str):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        o, lse = _forward(q, k, v, causal, scale, backend)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        ctx.scale = scale
        ctx.atomic_dq = atomic_dq
        ctx.backend = backend
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        if ctx.backend in GLUON_BACKWARD:
            from .kernels.gluon_bwd import gluon_attention_bwd

            dq, dk, dv = gluon_attention_bwd(do.contiguous(), q, k, v, o, lse.view(q.shape[:3]), ctx.causal,
                                             ctx.scale)
        else:
            dq, dk, dv = attn_bwd(do.contiguous(), q, k, v, o, lse, ctx.causal, ctx.scale, atomic_dq=ctx.atomic_dq)
        return dq, dk, dv, None, None, None, None


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    scale: float | None = None, *, atomic_dq: bool = False, backend: str = "triton") -> torch.Tensor:
    """softmax(q·kᵀ·scale [+ causal mask]) · v, per (batch, head); scale defaults to 1/sqrt(head_dim).
    atomic_dq picks the backward's dQ strategy (kernels/bwd.py): fp32 atomics in the dK/dV kernel instead of
    a separate dQ kernel. backend picks the forward kernel (``BACKENDS``, module docstring)."""
    scale = check_inputs(q, k, v, scale)
    check_backend(backend, q, k)
    return FlashAttentionFunction.apply(q, k, v, bool(causal), scale, bool(atomic_dq), backend)
