"""bf16_gemm: every BF16 rung against cuBLAS (torch.matmul) on the same inputs, in TFLOP/s.

Problem: C[M,N] = A[M,K] @ B[N,K]^T, bf16 in and out, fp32 accumulation. The cuBLAS baseline computes the same
thing as ``torch.matmul(A, B.t())`` (a "TN" GEMM, cuBLAS's native layout for this). Importable without torch.

Correctness: against an fp32 matmul of the same bf16 inputs on the GPU (TF32 off), with the ladders' tolerance
(``ladder.tolerance_for_k``).
"""
from __future__ import annotations

from gpufolio.api import Case, Unsupported, Variant, Work

from .. import ladder
from . import registry

BENCH = "bf16_gemm"
BASELINE = ladder.CUBLAS

SQUARES = (512, 1024, 2048, 4096, 8192)
# LLM projections (tokens x out x in): Llama-3-70B-like MLP up (8192x28672x4096) and down (8192x4096x14336)
# at 8k tokens, and a 16-token decode-like skinny GEMM where one 128-row tile is mostly padding.
LLM_SHAPES = ((8192, 28672, 4096), (8192, 4096, 14336), (16, 4096, 4096))


def _params(M: int, N: int, K: int) -> dict:
    return {"M": M, "N": N, "K": K, "dtype": "bfloat16"}


def configs(mode: str) -> list[dict]:
    if mode == "dry":
        return []  # dry_run_supported=False: these kernels need an H100/H200
    if mode == "quick":
        return [_params(s, s, s) for s in (4096, 8192)] + [_params(*LLM_SHAPES[0])]  # the two targets + an MLP
    return [_params(s, s, s) for s in SQUARES] + [_params(*shape) for shape in LLM_SHAPES]


def _make_inputs(M: int, N: int, K: int, device):
    def make(gen) -> dict:
        import torch

        A = torch.randn((M, K), generator=gen, device=device, dtype=torch.float32).to(torch.bfloat16)
        B = torch.randn((N, K), generator=gen, device=device, dtype=torch.float32).to(torch.bfloat16)
        C = torch.empty((M, N), device=device, dtype=torch.bfloat16)
        return {"A": A, "B": B, "C": C}

    return make


def _reference(inputs: dict):
    import torch

    # The reference must be true fp32: a TF32 matmul (10-bit mantissa inputs) would be LESS exact than the
    # bf16 kernels' products. The flag is process-wide, so it is restored right after this one call.
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.matmul(inputs["A"].float(), inputs["B"].float().t())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def case(variant: str, params: dict, device) -> Case:
    M, N, K = int(params["M"]), int(params["N"]), int(params["K"])
    if params.get("dtype", "bfloat16") != "bfloat16":
        raise Unsupported(f"dtype {params['dtype']}: this bench is bf16 only")
    if variant == BASELINE:
        def fn(inputs: dict):
            import torch

            return torch.matmul(inputs["A"], inputs["B"].t(), out=inputs["C"])
    else:
        rung = registry.by_name(variant)
        registry.check_shape(M, N, K)  # refuse before anything is allocated or launched
        from . import ops

        fn = ladder.timed_call(ops.load(), rung)  # build (or load) here, outside the timed call

    return Case(
        fn=fn,
        make_inputs=_make_inputs(M, N, K, device),
        reference=_reference,
        tolerance=ladder.tolerance_for_k(K, "bfloat16"),
        outputs_in_inputs=("C",),
        # FLOPs: one multiply and one add per (m, n, k).  I/O: read A and B once, write C once (bf16).
        work=Work(flops=2.0 * M * N * K, bytes=2.0 * (M * K + N * K + M * N)),
        reference_name="fp32 (TF32 off)",
    )


def _variants() -> list[Variant]:
    out = [Variant(BASELINE, "baseline", "cuBLAS (torch.matmul bf16)")]
    for r in registry.RUNGS:
        out.append(Variant(r.name, "candidate", r.label, available=lambda r=r: registry.device_reason(r)))
    return out


BF16_BENCH = ladder.bench(
    BENCH,
    variants=_variants(),
    configs=configs,
    case=case,
    description="C = A @ B^T in bf16 (fp32 accumulate): mma.sync -> TMA + wgmma -> warp-specialised, vs cuBLAS",
    headline_params={"M": 8192, "N": 8192, "K": 8192},
)

BENCHES = [BF16_BENCH]
