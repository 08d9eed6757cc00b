"""Repro: Liger-Kernel's fused residual-add + RMSNorm forward (upstream) against ours (patched), in one run.

    upstream  liger_kernel.ops.fused_add_rms_norm.LigerFusedAddRMSNormFunction.apply(x, r, w, eps, 0.0, "llama")
              one program per row, BLOCK_SIZE = next_pow2(H) (the file's "TODO: add _block_..._kernel")
    patched   gpufolio_projects.fused_kernels.ops.add_rmsnorm.add_rmsnorm(x, r, w, eps)
              several rows per program when H is small, warps sized to the row

Both return (y, s): y = rmsnorm(x + r) * w and the new residual s = x + r, in the input dtype. Forward only:
the backward is part of the patch but not of this repro yet (see the note).

Run it: ``python -m gpufolio bench --project oss_pr_notes`` (a GPU box with liger-kernel installed).
Importable without torch: torch, triton and both implementations load inside ``case``.
"""
from __future__ import annotations

from typing import Optional

from gpufolio.api import GBPS, Bench, Case, Unsupported, Variant, Work

SLUG = "liger_fused_add_rmsnorm"
EPS = 1e-6
M_TOKENS = 32768  # rows: 4 sequences of 8192 tokens, or 16 of 2048 — a training step's [B*T, H]


def _liger_missing() -> Optional[str]:
    try:
        import liger_kernel.ops.fused_add_rms_norm  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure is a reason to skip, recorded as such
        return f"liger_kernel is not importable here: {type(e).__name__}: {e}"
    return None


def _ours_missing() -> Optional[str]:
    try:
        import gpufolio_projects.fused_kernels.ops.add_rmsnorm  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"gpufolio_projects.fused_kernels.ops.add_rmsnorm is not importable: {type(e).__name__}: {e}"
    return None


VARIANTS = [
    Variant("upstream", "baseline", "Liger-Kernel fused add+RMSNorm (upstream)", _liger_missing),
    Variant("patched", "candidate", "multi-row kernel (patched)", _ours_missing),
]


def configs(mode: str) -> list[dict]:
    if mode == "dry":  # CPU interpreter: an odd width and a row count that does not fill the last program
        return [{"M": 37, "N": 200, "dtype": "float32"}, {"M": 64, "N": 128, "dtype": "float32"}]
    widths = [1024, 2048, 4096, 8192] if mode == "quick" else [1024, 2048, 3072, 4096, 5120, 8192]
    return [{"M": M_TOKENS, "N": n, "dtype": "bfloat16"} for n in widths]


def _make_inputs(M: int, N: int, dtype, device):
    import torch

    def make(gen) -> dict:
        x = torch.randn((M, N), generator=gen, device=device, dtype=torch.float32)
        r = torch.randn((M, N), generator=gen, device=device, dtype=torch.float32)
        # weights near 1 as trained norms are, but not all 1: a kernel that ignores w must fail
        w = 1.0 + 0.1 * torch.randn((N,), generator=gen, device=device, dtype=torch.float32)
        return {"x": x.to(dtype), "r": r.to(dtype), "w": w.to(dtype)}

    return make


def _reference(inputs: dict):
    """fp64: s = x + r; y = s / sqrt(mean(s^2) + eps) * w. Returns (y, s) like both variants."""
    import torch

    s = inputs["x"].double() + inputs["r"].double()
    y = s * torch.rsqrt(s.square().mean(dim=-1, keepdim=True) + EPS) * inputs["w"].double()
    return y, s


def _upstream_fn(inputs: dict):
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction

    # offset 0.0 and casting_mode "llama" are LigerFusedAddRMSNorm's defaults; in_place only matters in backward
    return LigerFusedAddRMSNormFunction.apply(inputs["x"], inputs["r"], inputs["w"], EPS, 0.0, "llama", False)


def _patched_fn(inputs: dict):
    from gpufolio_projects.fused_kernels.ops.add_rmsnorm import add_rmsnorm

    return add_rmsnorm(inputs["x"], inputs["r"], inputs["w"], EPS)


def case(variant: str, params: dict, device) -> Case:
    import torch

    from gpufolio.check import tolerance_for

    M, N, dtype = int(params["M"]), int(params["N"]), getattr(torch, params["dtype"])
    if variant == "upstream" and device.type != "cuda":
        raise Unsupported("Liger-Kernel's Triton kernels need a GPU (not run under the CPU interpreter)")
    fn = {"upstream": _upstream_fn, "patched": _patched_fn}[variant]
    elem = torch.finfo(dtype).bits // 8
    tol = tolerance_for(params["dtype"])
    return Case(
        fn=fn,
        make_inputs=_make_inputs(M, N, dtype, device),
        reference=_reference,
        tolerance={0: tol, 1: tol},
        # I/O: read x, r (M*N each) and w (N) + write y, s (M*N each). Liger also writes a per-row fp32 rstd
        # for its backward (4*M bytes, < 0.1% here): not counted, the fewest bytes the op needs are.
        work=Work(bytes=float(elem * (4 * M * N + N))),
    )


BENCHES = [
    Bench(
        project="oss_pr_notes",
        name=SLUG,
        metric=GBPS,
        variants=VARIANTS,
        configs=configs,
        case=case,
        description="Fused residual-add + RMSNorm forward, [M, N] rows: Liger-Kernel's kernel (upstream) "
                    "against the multi-row kernel proposed for it (patched), same run, same inputs.",
        headline_params={"M": M_TOKENS, "N": 4096, "dtype": "bfloat16"},
        headline_baseline="upstream",
        x_param="N",
    )
]
