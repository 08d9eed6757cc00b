"""sgemm: every FP32 rung against cuBLAS (torch.matmul, TF32 off) on the same inputs, in TFLOP/s.

Problem: C[M,N] = A[M,K] @ B[K,N], all row-major fp32. Importable without torch (the site reads the metadata).
The harness times and checks; this file only declares the work.
"""
from __future__ import annotations

from gpufolio.api import Case, Timing, Unsupported, Variant, Work

from .. import ladder
from . import registry

BENCH = "sgemm"
BASELINE = ladder.CUBLAS

SQUARES = (128, 256, 512, 1024, 2048, 4096, 8192)
# LLM projections (tokens x out x in) at 2k tokens of a Llama-3-8B-sized layer (d=4096, MLP 14336):
# attention output, MLP up, MLP down; a 128-token batch (few row tiles: the grid under-fills 132 SMs);
# and an odd shape where every tile edge is ragged.
LLM_SHAPES = (
    ("llm_attn_out", 2048, 4096, 4096),
    ("llm_mlp_up", 2048, 14336, 4096),
    ("llm_mlp_down", 2048, 4096, 14336),
    ("llm_small_batch", 128, 4096, 4096),
    ("odd", 4000, 3000, 1000),
)
# Quick: a grid too small for 132 SMs, the headline, and the 128-token batch where split-K should pay.
QUICK = ((1024, 1024, 1024, "square"), (4096, 4096, 4096, "square"), (128, 4096, 4096, "llm_small_batch"))

def _params(M: int, N: int, K: int, family: str) -> dict:
    return {"M": M, "N": N, "K": K, "dtype": "float32", "family": family}


def configs(mode: str) -> list[dict]:
    if mode == "dry":
        return []  # dry_run_supported=False: CUDA kernels, nothing to run on a CPU
    if mode == "quick":
        return [_params(*q) for q in QUICK]
    return [_params(s, s, s, "square") for s in SQUARES] + [_params(M, N, K, f) for f, M, N, K in LLM_SHAPES]


def _make_inputs(M: int, N: int, K: int, device):
    def make(gen) -> dict:
        import torch

        A = torch.randn((M, K), generator=gen, device=device, dtype=torch.float32)
        B = torch.randn((K, N), generator=gen, device=device, dtype=torch.float32)
        C = torch.empty((M, N), device=device, dtype=torch.float32)  # the harness fills it with NaN
        return {"A": A, "B": B, "C": C}

    return make


def _reference(inputs: dict):
    return inputs["A"].double() @ inputs["B"].double()


def _strict_fp32() -> None:
    """cuBLAS in true FP32: TF32 tensor cores would round the inputs to 10 mantissa bits and run ~7x faster."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def case(variant: str, params: dict, device) -> Case:
    M, N, K = int(params["M"]), int(params["N"]), int(params["K"])
    if params.get("dtype", "float32") != "float32":
        raise Unsupported(f"sgemm is fp32 only, got {params['dtype']}")
    if getattr(device, "type", str(device)) != "cuda":
        raise Unsupported("the SGEMM rungs are CUDA kernels: they need a GPU")
    if variant == BASELINE:
        _strict_fp32()

        def fn(x: dict):
            import torch

            return torch.matmul(x["A"], x["B"], out=x["C"])
    else:
        rung = registry.by_name(variant)
        rung.check_shape(M, N, K)
        rung.check_budget(M, N, K)
        fn = ladder.timed_call(registry.load(), rung)

    return Case(
        fn=fn,
        make_inputs=_make_inputs(M, N, K, device),
        reference=_reference,
        tolerance=ladder.tolerance_for_k(K, "float32"),  # against fp64
        outputs_in_inputs=("C",),
        # FLOPs: one multiply and one add per (m, n, k). Bytes: read A and B once, write C once (4 B each).
        work=Work(flops=2.0 * M * N * K, bytes=4.0 * (M * K + K * N + M * N)),
        # Shorter than the harness default: ~12 variants x 12 shapes must fit the 8-minute project budget,
        # and a 4096^3 call takes ~3 ms, so 300 ms still gives ~100 reps.
        timing=Timing(warmup_ms=50.0, rep_ms=300.0),
    )


SGEMM_BENCH = ladder.bench(
    BENCH,
    variants=[Variant(r.name, "candidate", r.label) for r in registry.RUNGS]
    + [Variant(BASELINE, "baseline", "cuBLAS FP32 (torch.matmul, TF32 off)")],
    configs=configs,
    case=case,
    description="FP32 SGEMM C = A @ B (row-major), CUDA rungs from naive to warp tiling, vs cuBLAS with TF32 off.",
    headline_params={"M": 4096, "N": 4096, "K": 4096},
)
