"""Functional entry points (``import gpufolio_projects.fused_kernels.functional as FK``): each checks its operands
and calls the op in ops/. Bad input raises before any launch: TypeError for what an operand is (not a tensor, a
dtype the kernels do not take), ValueError for shapes and devices (CUDA, or the CPU under TRITON_INTERPRET=1).
Non-contiguous operands are accepted (the ops copy them into rows) and so are zero rows (no launch, an empty
result). The ops themselves do not repeat the checks: the benchmarks time them directly.
"""
from __future__ import annotations

import math

import torch
from gpufolio import validate

from .ops.add_rmsnorm import add_rmsnorm as _add_rmsnorm
from .ops.linear_cross_entropy import linear_cross_entropy as _linear_cross_entropy
from .ops.rmsnorm import rmsnorm as _rmsnorm
from .ops.swiglu import swiglu as _swiglu

__all__ = ["add_rmsnorm", "rmsnorm", "swiglu", "linear_cross_entropy"]

# What the kernels load and store; they compute in fp32 whatever the input.
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
TARGET_DTYPES = (torch.int64, torch.int32)


def _on_device(op: str, named: dict) -> None:
    validate.device(op, named, validate.triton_device_types(), validate.TRITON_HINT)


def _check_norm(op: str, rows: dict, weight, eps) -> None:
    """rows: x (and residual) [..., H], one shape and dtype; weight [H], any of DTYPES (fp32 master weights
    under bf16 autocast are the usual mix)."""
    validate.tensors(op, rows, dtypes=DTYPES, same_dtype=True, same_shape=True)
    validate.tensors(op, {"weight": weight}, ndim=1, dtypes=DTYPES)
    x = rows["x"]
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError(f"{op}: x must be [..., H] with H >= 1, got shape {tuple(x.shape)}")
    if weight.shape[0] != x.shape[-1]:
        raise ValueError(f"{op}: weight is {tuple(weight.shape)} but x's last dimension is {x.shape[-1]}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise ValueError(f"{op}: eps must be a finite number >= 0, got {eps!r}")
    _on_device(op, rows | {"weight": weight})


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Fused RMSNorm over the last dimension (forward and backward in Triton); x [..., H], weight [H]."""
    _check_norm("rmsnorm", {"x": x}, weight, eps)
    return _rmsnorm(x, weight, eps)


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
    """Fused ``s = x + residual; return rmsnorm(s) * weight, s``; x and residual [..., H] of one dtype."""
    _check_norm("add_rmsnorm", {"x": x, "residual": residual}, weight, eps)
    return _add_rmsnorm(x, residual, weight, eps)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """Fused ``F.silu(gate) * up`` (forward and backward in Triton); gate and up of one shape and dtype."""
    operands = {"gate": gate, "up": up}
    validate.tensors("swiglu", operands, dtypes=DTYPES, same_dtype=True, same_shape=True)
    _on_device("swiglu", operands)
    return _swiglu(gate, up)


def linear_cross_entropy(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, ignore_index: int = -100,
                         label_smoothing: float = 0.0, max_chunk_bytes: int | None = None, **plan) -> torch.Tensor:
    """``F.cross_entropy(x @ weight.T, target)`` (mean) without materialising the logits: x [T, d], weight [V, d]
    of one dtype, target [T] int64 (or int32). ``plan``: the keyword-only schedule options of
    ops.linear_cross_entropy (chunk, overlap, skip_ignored, head)."""
    op = "linear_cross_entropy"
    validate.tensors(op, {"x": x, "weight": weight}, ndim=2, dtypes=DTYPES, same_dtype=True)
    validate.tensors(op, {"weight": weight}, nonempty=True)
    validate.tensors(op, {"target": target}, ndim=1, dtypes=TARGET_DTYPES)
    if x.shape[1] != weight.shape[1]:
        raise ValueError(f"{op}: x is {tuple(x.shape)} and weight {tuple(weight.shape)}: hidden sizes differ")
    if target.shape[0] != x.shape[0]:
        raise ValueError(f"{op}: target has {target.shape[0]} entries for x's {x.shape[0]} tokens")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    if max_chunk_bytes is not None and max_chunk_bytes <= 0:
        raise ValueError(f"{op}: max_chunk_bytes must be positive, got {max_chunk_bytes}")
    _on_device(op, {"x": x, "weight": weight, "target": target})
    return _linear_cross_entropy(x, weight, target, ignore_index, label_smoothing, max_chunk_bytes, **plan)
