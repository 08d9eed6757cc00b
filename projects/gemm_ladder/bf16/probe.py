"""Exploration sweep, run by gpu.sh: times variants of the persistent kernel (kernels/probe_*.cu) to decide the
next rung. Prints a table to stdout (kept in $OUTDIR/bf16/probe.txt); NOT a source of published numbers: those
come only from the harness's stamped records. Each variant is checked against the fp32 reference first.

    python -m gpufolio_projects.gemm_ladder.bf16.probe --shape 8192 8192 8192 --shape 8192 28672 4096
"""
from __future__ import annotations

import argparse
import statistics
import sys


def _time_ms(fn, reps: int) -> float:
    import torch

    for _ in range(3):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def sweep_shape(ext, M: int, N: int, K: int, grids: list[int], reps: int) -> None:
    """One table block: cuBLAS, every probe variant (at each grid override), cuBLAS again."""
    import torch

    from . import bench

    gen = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    ref = bench._reference({"A": A, "B": B})
    tol = bench.tolerance_for_k(K)
    flops = 2.0 * M * N * K

    def report(name, resident, grid, fn):
        C.fill_(float("nan"))
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a failing variant is a row in the table, not the end
            print(f"{name} | {resident} | {grid} | {M} {N} {K} | error: {e}", flush=True)
            return
        worst = ((C.float() - ref).abs() / (tol.atol + tol.rtol * ref.abs())).nan_to_num(float("inf")).max().item()
        ms = _time_ms(fn, reps)
        print(f"{name} | {resident} | {grid} | {M} {N} {K} | {ms:.4f} | {flops / ms / 1e9:.1f} | {worst:.3g}",
              flush=True)

    report("cublas", "-", "-", lambda: torch.matmul(A, B.t(), out=C))
    for i, name in enumerate(ext.probe_names()):
        # 132 CTAs = one per SM is already the default without clusters
        for g in grids if name.startswith("C2") else [g for g in grids if g != 132]:
            report(name, ext.probe_resident(i), g, lambda i=i, g=g: ext.probe(i, A, B, C, g))
    report("cublas (again)", "-", "-", lambda: torch.matmul(A, B.t(), out=C))


def main(argv: list[str] | None = None) -> int:
    from . import ops

    p = argparse.ArgumentParser()
    p.add_argument("--shape", nargs=3, type=int, action="append", metavar=("M", "N", "K"))
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--grids", default="0,128,132", help="grid overrides (CTAs; 0 = the launcher's own choice)")
    a = p.parse_args(argv)
    ext = ops.load()
    grids = [int(g) for g in a.grids.split(",")]
    print("probe | resident CTAs (occupancy API) | grid override | M N K | median ms | TFLOP/s | max err/bound")
    for M, N, K in a.shape or [[8192, 8192, 8192]]:
        sweep_shape(ext, M, N, K, grids, a.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
