"""Launch each rung once (and cuBLAS once), for ncu to profile:

    ncu --clock-control none -k regex:'sgemm|gemm|xmma|cutlass' --section SpeedOfLight --section Occupancy \
        python -m gpufolio_projects.gemm_ladder.lab.sgemm_profile --size 4096

Rungs whose timing budget (registry.max_gflop) is below the size run at the largest square inside it.
"""
from __future__ import annotations

import argparse


def main() -> None:
    import torch
    from gpufolio_projects.gemm_ladder import ladder
    from gpufolio_projects.gemm_ladder.sgemm import registry

    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--rungs", default="", help="comma-separated rung names (default: all)")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    ext = registry.load()
    wanted = set(args.rungs.split(",")) if args.rungs else None
    for rung in registry.RUNGS:
        if wanted and rung.name not in wanted:
            continue
        n = args.size
        while rung.max_gflop is not None and 2 * n**3 / 1e9 > rung.max_gflop:
            n //= 2
        A, B = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        C = torch.empty(n, n, device="cuda")
        ladder.launch(ext, rung, A, B, C)
        torch.cuda.synchronize()
        print(f"{rung.name}: {n}^3", flush=True)
    n = args.size
    A, B = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    torch.matmul(A, B)
    torch.cuda.synchronize()
    print(f"cublas: {n}^3", flush=True)


if __name__ == "__main__":
    main()
