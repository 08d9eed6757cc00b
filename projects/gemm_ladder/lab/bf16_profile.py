"""One GEMM call inside an NVTX range named "profile", for ncu (a lab stage) and compute-sanitizer.

    python -m gpufolio_projects.gemm_ladder.lab.bf16_profile 09_tma_store_epilogue 8192 8192 8192
    python -m gpufolio_projects.gemm_ladder.lab.bf16_profile 01_mma_sync_ldmatrix,07_grouped_raster,cublas 8192 8192 8192

Several comma-separated variants run in one process (one ncu session, one extension load), each call in its
own "profile" range and in the order given, which stdout lists: `ncu -c <count>` then sees one kernel each.

Warm-up calls run first (clocks ramp, the extension loads, cuBLAS picks its kernel), so profiling with
`ncu --nvtx --nvtx-include profile/ -c 1` sees exactly the one steady-state kernel. With --check it also
compares the output to the fp32 reference and exits 1 on a mismatch (for compute-sanitizer runs).
"""
from __future__ import annotations

import argparse
import sys


def profile_call(call, warmup: int) -> None:
    """``warmup`` calls, then one inside the NVTX range "profile" that ``ncu --nvtx-include profile/`` sees."""
    import torch

    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")
    call()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    import torch

    from .. import ladder
    from ..bf16 import bench, ops

    p = argparse.ArgumentParser()
    p.add_argument("variants", help="one variant, or several comma-separated")
    p.add_argument("M", type=int)
    p.add_argument("N", type=int)
    p.add_argument("K", type=int)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--check", action="store_true")
    a = p.parse_args(argv)

    gen = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(a.M, a.K, device="cuda", generator=gen).to(torch.bfloat16)
    B = torch.randn(a.N, a.K, device="cuda", generator=gen).to(torch.bfloat16)
    C = torch.empty(a.M, a.N, device="cuda", dtype=torch.bfloat16)
    worst_all = 0.0
    for variant in a.variants.split(","):
        if variant == "cublas":
            def call():
                torch.matmul(A, B.t(), out=C)
        else:
            def call(variant=variant):
                ops.gemm(variant, A, B, out=C)
        profile_call(call, a.warmup)
        print(f"profiled {variant} {a.M}x{a.N}x{a.K}", flush=True)
        if a.check:
            ref = bench._reference({"A": A, "B": B})
            tol = ladder.tolerance_for_k(a.K, "bfloat16")
            ratio = ((C.float() - ref).abs() / (tol.atol + tol.rtol * ref.abs())).nan_to_num(float("inf"))
            worst = ratio.max().item()
            worst_all = max(worst_all, worst)
            print(f"{variant} {a.M}x{a.N}x{a.K}: max err/bound {worst:.3g}, bad elements {(ratio > 1).sum().item()}")
    return 0 if worst_all <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
