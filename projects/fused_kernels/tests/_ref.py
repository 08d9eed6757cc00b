"""fp64 references for the op tests; their tolerances are the harness's one table (``gpufolio.check``)."""
from __future__ import annotations

import torch
from gpufolio.check import tolerance_for


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, scale: float = 1.0, name: str = ""):
    """Elementwise check; ``scale`` widens atol for sums over many rows (dweight grows like sqrt(rows))."""
    tol = tolerance_for(dtype)
    torch.testing.assert_close(out.double(), ref.double(), atol=tol.atol * scale, rtol=tol.rtol,
                               msg=lambda m: f"{name}: {m}")


def leaves(*ts: torch.Tensor, dtype=torch.float64) -> list[torch.Tensor]:
    """Detached upcast copies that require grad: the fp64 reference's inputs."""
    return [t.detach().to(dtype).requires_grad_(True) for t in ts]


def ref_add_rmsnorm(x, r, w, eps=1e-6):
    s = x + r
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * w, s


def ref_rmsnorm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
