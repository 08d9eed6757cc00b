"""Repro: Liger-Kernel's fused add + RMSNorm backward, one program per SM (upstream) against several (patched).

    upstream       liger_kernel.ops.fused_add_rms_norm.fused_add_rms_norm_backward(...), as LigerFusedAddRMSNorm
                   calls it (casting mode "llama", offset 0, in_place False): sm_count programs
    patched        the same kernel with launch.PATCH_PROGRAMS_PER_SM programs per SM (the patch)
    patched_x2/_x8 the same with 2 and 8 per SM: how sensitive the choice is, measured in the same run
    fused_kernels  our own add_rmsnorm backward (projects/fused_kernels), for reference: it recomputes rstd
                   from S instead of reading Liger's RSTD, and keeps dW's products in fp32

Inputs are what the forward leaves for the backward: S (the new residual), W, RSTD (fp32, from S), and the two
incoming gradients dY (of the normalised output) and dS_out (of the residual). Outputs: (dX, dW); dR = dX.
Importable without torch.
"""
from __future__ import annotations

from gpufolio.api import GBPS, Bench, Case, Timing, Unsupported, Variant, Work, import_missing

SLUG = "liger_fused_add_rmsnorm_bwd"
EPS = 1e-6
M_TOKENS = 32768
LLAMA = 0  # Liger's _CASTING_MODE_LLAMA


def _liger_missing() -> str | None:
    return import_missing("liger_kernel.ops.fused_add_rms_norm", "liger_kernel")


def _fused_kernels_missing() -> str | None:
    return import_missing("gpufolio_projects.fused_kernels.ops.add_rmsnorm")


VARIANTS = [
    Variant("upstream", "baseline", "Liger-Kernel 0.8.5: one program per SM (upstream)", _liger_missing),
    Variant("patched", "candidate", "Liger-Kernel + programs per SM (patched)", _liger_missing),
    Variant("patched_x2", "candidate", "the same, 2 programs per SM", _liger_missing),
    Variant("patched_x8", "candidate", "the same, 8 programs per SM", _liger_missing),
    Variant("fused_kernels", "candidate", "gpufolio fused_kernels add_rmsnorm backward", _fused_kernels_missing),
]


def configs(mode: str) -> list[dict]:
    if mode == "dry":  # listed for completeness: every variant needs a GPU, so a dry run records skips
        return [{"M": 64, "N": 128, "dtype": "float32"}]
    # 2048: Llama-3.2-1B, 4096: Llama-3-8B. Quick runs the headline width first: a round cut short keeps it.
    widths = [4096, 2048] if mode == "quick" else [1024, 2048, 4096, 8192]
    return [{"M": M_TOKENS, "N": n, "dtype": "bfloat16"} for n in widths]


def _make_inputs(M: int, N: int, dtype, device):
    import torch

    def make(gen) -> dict:
        def randn(*shape):
            return torch.randn(shape, generator=gen, device=device, dtype=torch.float32)

        S = randn(M, N).to(dtype)
        rstd = torch.rsqrt(S.float().square().mean(-1) + EPS)  # what Liger's forward stores (llama mode)
        return {"dY": randn(M, N).to(dtype), "dS_out": randn(M, N).to(dtype), "S": S,
                "W": (1.0 + 0.1 * randn(N)).to(dtype), "RSTD": rstd}

    return make


def _reference(inputs: dict):
    """fp64: n = S * rstd; dX = rstd * (W*dY - n * mean(n * W*dY)) + dS_out; dW = sum over rows of dY * n."""
    S, W, dY = inputs["S"].double(), inputs["W"].double(), inputs["dY"].double()
    rstd = (S.square().mean(-1, keepdim=True) + EPS).rsqrt()
    n = S * rstd
    wdy = W * dY
    dX = rstd * (wdy - n * (n * wdy).mean(-1, keepdim=True)) + inputs["dS_out"].double()
    return dX, (dY * n).sum(0)


def _upstream(inputs: dict):
    from liger_kernel.ops.fused_add_rms_norm import fused_add_rms_norm_backward

    from .launch import liger_settings

    block, warps, stages = liger_settings(inputs["S"].shape[-1])
    dX, _, dW = fused_add_rms_norm_backward(inputs["dY"], inputs["dS_out"], inputs["S"], inputs["W"], inputs["RSTD"],
                                            0.0, LLAMA, block, warps, stages, False)
    return dX, dW


def _patched(programs_per_sm: int):
    def fn(inputs: dict):
        from .launch import backward

        return backward(inputs["dY"], inputs["dS_out"], inputs["S"], inputs["W"], inputs["RSTD"], 0.0, LLAMA,
                        programs_per_sm)

    return fn


def _fused_kernels(inputs: dict):
    from gpufolio_projects.fused_kernels.ops.add_rmsnorm import rmsnorm_backward

    return rmsnorm_backward(inputs["dY"], inputs["dS_out"], inputs["S"], inputs["W"], EPS)


def case(variant: str, params: dict, device) -> Case:
    import torch
    from gpufolio.check import summed_tolerance, tolerance_for

    from .launch import PATCH_PROGRAMS_PER_SM

    if device.type != "cuda":
        raise Unsupported("Liger-Kernel's kernels do not run under the Triton interpreter; a GPU is needed")
    M, N, dtype = int(params["M"]), int(params["N"]), getattr(torch, params["dtype"])
    fn = {"upstream": _upstream, "patched": _patched(PATCH_PROGRAMS_PER_SM), "patched_x2": _patched(2),
          "patched_x8": _patched(8), "fused_kernels": _fused_kernels}[variant]
    elem = torch.finfo(dtype).bits // 8
    tol = tolerance_for(params["dtype"])
    # dW sums M products, each rounded to the input dtype: the harness's tolerance for a sum over M rows (its
    # atol grows like sqrt(M)), the one the fused kernels' dweight is held to.
    dw_tol = summed_tolerance(params["dtype"], M)
    return Case(
        fn=fn,
        make_inputs=_make_inputs(M, N, dtype, device),
        reference=_reference,
        tolerance={0: tol, 1: dw_tol},
        # I/O: read dY, dS_out, S (M*N each) and W (N) + write dX (M*N) and dW (N). Not counted: Liger's
        # RSTD read (4*M bytes) and the fp32 dW partials (programs x N x 4, summed by a second kernel).
        work=Work(bytes=float(elem * (4 * M * N + 2 * N))),
        # A call takes a fraction of a millisecond: 150 ms of reps (hundreds of them, L2 flushed between) give a
        # stable median, and keep the whole bench inside the GPU round's short budget.
        timing=Timing(warmup_ms=30.0, rep_ms=150.0),
    )


BENCHES = [
    Bench(
        project="oss_pr_notes",
        name=SLUG,
        metric=GBPS,
        variants=VARIANTS,
        configs=configs,
        case=case,
        description="Fused residual-add + RMSNorm backward on [M, N] rows: Liger-Kernel's launch (one program "
                    "per SM) against the same kernel with several programs per SM (patched).",
        headline_params={"M": M_TOKENS, "N": 4096, "dtype": "bfloat16"},
        headline_baseline="upstream",
        x_param="N",
        dry_run_supported=False,
    )
]
