"""fp64 references and the per-dtype tolerance table shared by the op tests."""
from __future__ import annotations

import torch

# |out - ref| <= atol + rtol*|ref| for outputs of O(1) size, per stored dtype (a few ulps: 2^-8 bf16,
# 2^-11 fp16, 2^-24 fp32, with room for sums over a few thousand terms taken in another order).
TOL = {
    torch.float32: dict(atol=2e-5, rtol=2e-5),
    torch.float16: dict(atol=2e-3, rtol=4e-3),
    torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2),
}


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, scale: float = 1.0, name: str = ""):
    """Elementwise check; ``scale`` widens atol for sums over many rows (dweight grows like sqrt(rows))."""
    tol = TOL[dtype]
    torch.testing.assert_close(out.double(), ref.double(), atol=tol["atol"] * scale, rtol=tol["rtol"],
                               msg=lambda m: f"{name}: {m}")


def leaves(*ts: torch.Tensor, dtype=torch.float64) -> list[torch.Tensor]:
    """Detached upcast copies that require grad: the fp64 reference's inputs."""
    return [t.detach().to(dtype).requires_grad_(True) for t in ts]


def ref_add_rmsnorm(x, r, w, eps=1e-6):
    s = x + r
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * w, s


def ref_rmsnorm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
