"""Repro: Liger-Kernel's fused residual-add + RMSNorm forward, upstream against patched, in one run.

    upstream       liger_kernel.ops.fused_add_rms_norm.fused_add_rms_norm_forward(x, r, w, eps, 0.0, "llama")
                   one program per row, BLOCK_SIZE = next_pow2(H) (the file's "TODO: add _block_..._kernel")
    patched        the same function with the patch applied (``port.py``: the kernel the patch adds, several rows
                   per program for H <= 2048; wider rows call upstream's row kernel, as the patch does)
    fused_kernels  our own add_rmsnorm forward (projects/fused_kernels), which the patch's heuristic comes from;
                   it keeps the sum in fp32 instead of Liger's casting modes — shown for reference

All return (y, s): y = rmsnorm(x + r) * w and the new residual s = x + r, in the input dtype. The forward
functions are called directly (no autograd.Function around them) on all three. Forward only: the patch leaves
the backward unchanged (its RSTD is the row kernel's, checked in test_port.py on the GPU).

Run it: ``python -m gpufolio bench --project oss_pr_notes`` (a GPU box with liger-kernel installed).
Importable without torch: torch, triton and both implementations load inside ``case``.
"""
from __future__ import annotations

from gpufolio.api import GBPS, Bench, Case, Unsupported, Variant, Work, import_missing

SLUG = "liger_fused_add_rmsnorm"
EPS = 1e-6
M_TOKENS = 32768  # rows: 4 sequences of 8192 tokens, or 16 of 2048 — a training step's [B*T, H]


def _liger_missing() -> str | None:
    return import_missing("liger_kernel.ops.fused_add_rms_norm", "liger_kernel")


def _port_missing() -> str | None:
    return import_missing(f"{__package__}.port", "the patch's kernel (repro/port.py)")


def _fused_kernels_missing() -> str | None:
    return import_missing("gpufolio_projects.fused_kernels.ops.add_rmsnorm")


VARIANTS = [
    Variant("upstream", "baseline", "Liger-Kernel 0.8.5 (upstream)", _liger_missing),
    Variant("patched", "candidate", "Liger-Kernel + multi-row forward (patched)", _port_missing),
    Variant("fused_kernels", "candidate", "gpufolio fused_kernels add_rmsnorm", _fused_kernels_missing),
]


def configs(mode: str) -> list[dict]:
    if mode == "dry":  # CPU interpreter: an odd width and a row count that does not fill the last program
        return [{"M": 37, "N": 200, "dtype": "float32"}, {"M": 64, "N": 128, "dtype": "float32"}]
    # 896: Qwen2.5-0.5B's hidden size (odd: 7 * 128); 2048: Llama-3.2-1B; 4096: Llama-3-8B; 8192: Llama-3-70B
    widths = [1024, 2048, 4096] if mode == "quick" else [896, 1024, 2048, 4096, 8192]
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
    from liger_kernel.ops.fused_add_rms_norm import fused_add_rms_norm_forward

    # offset 0.0 and casting_mode "llama" are LigerFusedAddRMSNorm's defaults
    return fused_add_rms_norm_forward(inputs["x"], inputs["r"], inputs["w"], EPS, 0.0, "llama")[:2]


def _patched_fn(inputs: dict):
    from .port import patched_fused_add_rms_norm

    return patched_fused_add_rms_norm(inputs["x"], inputs["r"], inputs["w"], EPS, 0.0, "llama")


def _fused_kernels_fn(inputs: dict):
    from gpufolio_projects.fused_kernels.ops.add_rmsnorm import rmsnorm_forward

    return rmsnorm_forward(inputs["x"], inputs["r"], inputs["w"], EPS)


def _rows_per_program(n_cols: int) -> int:
    from .port import rows_per_program

    return rows_per_program(n_cols)


def case(variant: str, params: dict, device) -> Case:
    import torch
    from gpufolio.check import tolerance_for

    M, N, dtype = int(params["M"]), int(params["N"]), getattr(torch, params["dtype"])
    # Liger's kernels do not run under the CPU interpreter (they call .to() on scalar arguments)
    liger_call = variant == "upstream" or (variant == "patched" and _rows_per_program(N) == 1)
    if liger_call and device.type != "cuda":
        raise Unsupported("Liger-Kernel's row kernel needs a GPU (it does not run under the Triton interpreter)")
    if liger_call and _liger_missing():
        raise Unsupported(_liger_missing())
    fn = {"upstream": _upstream_fn, "patched": _patched_fn, "fused_kernels": _fused_kernels_fn}[variant]
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
        description="Fused residual-add + RMSNorm forward on [M, N] rows: Liger-Kernel's (upstream), the same with "
                    "the proposed multi-row kernel (patched), and gpufolio's fused_kernels op; same run, same inputs.",
        # The patch is for narrow rows; N=2048 is Llama-3.2-1B's width. Wider rows run the same kernel before
        # and after, and the page shows every width.
        headline_params={"M": M_TOKENS, "N": 2048, "dtype": "bfloat16"},
        headline_baseline="upstream",
        x_param="N",
    )
]
