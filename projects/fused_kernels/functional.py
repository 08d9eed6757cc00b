"""One-line functional entry points (``import gpufolio_projects.fused_kernels.functional as FK``)."""
from __future__ import annotations

from .ops.add_rmsnorm import add_rmsnorm
from .ops.linear_cross_entropy import linear_cross_entropy
from .ops.rmsnorm import rmsnorm
from .ops.swiglu import swiglu

__all__ = ["add_rmsnorm", "rmsnorm", "swiglu", "linear_cross_entropy"]
