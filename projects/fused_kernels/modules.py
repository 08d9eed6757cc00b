"""nn.Module wrappers, drop-in for the usual transformer blocks (the weights live here, the math in ops/)."""
from __future__ import annotations

import torch
from torch import nn

from . import functional as FK


class RMSNorm(nn.Module):
    """Same parameters and result as ``torch.nn.RMSNorm(hidden, eps)`` with an elementwise weight."""

    def __init__(self, hidden: int, eps: float = 1e-6, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return FK.rmsnorm(x, self.weight, self.eps)


class AddRMSNorm(RMSNorm):
    """``forward(x, residual) -> (norm(x + residual), x + residual)``: the pre-norm block's residual step."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return FK.add_rmsnorm(x, residual, self.weight, self.eps)


class SwiGLUMLP(nn.Module):
    """Llama's MLP: down(silu(gate(x)) * up(x)), with the activation fused."""

    def __init__(self, hidden: int, intermediate: int, device=None, dtype=None):
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = nn.Linear(hidden, intermediate, **kw)
        self.up_proj = nn.Linear(hidden, intermediate, **kw)
        self.down_proj = nn.Linear(intermediate, hidden, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(FK.swiglu(self.gate_proj(x), self.up_proj(x)))


class LinearCrossEntropyLoss(nn.Module):
    """Mean CE of ``x @ weight.T`` against targets, for an LM head whose weight is passed in (often tied)."""

    def __init__(self, ignore_index: int = -100, label_smoothing: float = 0.0,
                 max_chunk_bytes: int | None = None):
        super().__init__()
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.max_chunk_bytes = max_chunk_bytes

    def forward(self, x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        x = x.reshape(-1, x.shape[-1])
        return FK.linear_cross_entropy(x, weight, target.reshape(-1), self.ignore_index, self.label_smoothing,
                                       self.max_chunk_bytes)
