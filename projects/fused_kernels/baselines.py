"""The peers each candidate is measured against, in the same run: plain PyTorch, torch.compile of that same
function, Liger-Kernel, and QuACK (CuTe DSL kernels; RMSNorm with and without the residual, cross-entropy).
Imported lazily by bench.py (torch is only needed once a case is built)."""
from __future__ import annotations

from collections.abc import Callable

from gpufolio.api import peer_missing

EPS = 1e-6


def liger_missing() -> str | None:
    """``Variant.available`` for Liger: None if importable, else why not (the GPU box gets it from a wheel)."""
    try:
        import liger_kernel.ops.rms_norm  # noqa: F401
    except Exception as e:  # noqa: BLE001 - an ImportError or a version clash inside liger: both mean skip
        return f"liger-kernel not installed ({type(e).__name__}: {e})"[:200]
    return None


def quack_missing() -> str | None:
    """``Variant.available`` for QuACK (the ``peers`` extra): its CuTe DSL kernels need sm_90+."""
    return peer_missing("quack", "quack-kernels")


# ---- the eager functions (the reference semantics, and what torch.compile compiles) -----------------------
def eager_add_rmsnorm(x, r, w):
    import torch.nn.functional as F

    s = x + r
    return F.rms_norm(s, (s.shape[-1],), w, EPS), s


def eager_rmsnorm(x, w):
    import torch.nn.functional as F

    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def eager_swiglu(g, u):
    import torch.nn.functional as F

    return F.silu(g) * u


def eager_linear_cross_entropy(x, w, y, label_smoothing=0.0):
    """The textbook recipe: bf16 logits, upcast to fp32 for a stable softmax (the [T, V] fp32 copy is the
    memory this costs), mean over non-ignored tokens."""
    import torch.nn.functional as F

    return F.cross_entropy(F.linear(x, w).float(), y, ignore_index=-100, label_smoothing=label_smoothing)


EAGER = {"add_rmsnorm": eager_add_rmsnorm, "rmsnorm": eager_rmsnorm, "swiglu": eager_swiglu,
         "linear_cross_entropy": eager_linear_cross_entropy}


def compiled(bench: str) -> Callable:
    """torch.compile of the eager function, fresh per case: dynamo caches per code object and falls back to
    eager after its recompile limit, so one cached wrapper across many shapes would silently stop compiling."""
    import torch

    torch._dynamo.reset()
    return torch.compile(EAGER[bench], dynamic=False)


# ---- Liger-Kernel ------------------------------------------------------------------------------------------
def liger(bench: str) -> Callable:
    if bench == "add_rmsnorm":
        try:
            from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
        except ImportError as e:
            from gpufolio.api import Unsupported

            raise Unsupported(f"this liger-kernel has no fused add+RMSNorm ({e})") from e
        return lambda x, r, w: LigerFusedAddRMSNormFunction.apply(x, r, w, EPS, 0.0, "llama", False)
    if bench == "rmsnorm":
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction

        # in_place=False: in-place would overwrite dy with dx (same bytes moved, but the checked inputs change).
        return lambda x, w: LigerRMSNormFunction.apply(x, w, EPS, 0.0, "llama", False)
    if bench == "swiglu":
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction

        return lambda g, u: LigerSiLUMulFunction.apply(g, u)  # its backward overwrites g and u with dg, du
    if bench == "linear_cross_entropy":
        from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction

        def flce(x, w, y, label_smoothing=0.0):
            out = LigerFusedLinearCrossEntropyFunction.apply(x, w, y, None, None, -100, 0.0, label_smoothing,
                                                             "mean")
            return out[0] if isinstance(out, tuple) else out

        return flce
    raise KeyError(bench)


# ---- QuACK ---------------------------------------------------------------------------------------------------
def quack(bench: str) -> Callable:
    """QuACK's autograd functions, called as its README shows: ``quack.rmsnorm`` (with ``residual`` and
    ``prenorm=True`` it returns (y, x + residual), our add+RMSNorm) and ``quack.cross_entropy`` on logits that
    cuBLAS materialised (it has no fused linear + cross-entropy)."""
    import torch.nn.functional as F
    from quack import cross_entropy, rmsnorm

    if bench == "rmsnorm":
        return lambda x, w: rmsnorm(x, w, eps=EPS)
    if bench == "add_rmsnorm":
        return lambda x, r, w: rmsnorm(x, w, residual=r, eps=EPS, prenorm=True)
    if bench == "linear_cross_entropy":
        def ce(x, w, y, label_smoothing=0.0):  # the bench refuses label smoothing before building this
            return cross_entropy(F.linear(x, w), y, ignore_index=-100, reduction="mean")

        return ce
    raise KeyError(bench)
