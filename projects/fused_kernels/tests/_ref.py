"""fp64 references for the op tests; their tolerances are the harness's one table (``gpufolio.check``)."""
from __future__ import annotations

import math

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


def check_against_fp64(op, ref, inputs: list[torch.Tensor], cotangents: list[torch.Tensor], dtype: torch.dtype,
                       names: list[str], weight_rows: int) -> None:
    """``op(*inputs)``, and the gradients of its first ``len(cotangents)`` outputs w.r.t. every input, against
    ``ref`` on fp64 copies of the inputs. ``names``: the outputs', then the gradients'. The last input is the
    weight: its gradient sums over ``weight_rows`` rows, so its atol grows like sqrt(rows)."""
    outs = _as_tuple(op(*inputs))
    grads = torch.autograd.grad(outs[:len(cotangents)], inputs, cotangents)
    inputs64 = leaves(*inputs)
    refs = _as_tuple(ref(*inputs64))
    ref_grads = torch.autograd.grad(refs[:len(cotangents)], inputs64, [c.double() for c in cotangents])
    scales = [1.0] * (len(outs) + len(inputs) - 1) + [math.sqrt(weight_rows)]
    for out, expected, scale, name in zip((*outs, *grads), (*refs, *ref_grads), scales, names, strict=True):
        assert_close(out, expected, dtype, scale=scale, name=name)


def _as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def ref_add_rmsnorm(x, r, w, eps=1e-6):
    s = x + r
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * w, s


def ref_rmsnorm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
