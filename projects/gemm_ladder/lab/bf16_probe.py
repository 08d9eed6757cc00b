"""Exploration sweep, a lab stage: times variants of the persistent kernel and the ping-pong kernel
(bf16_probe/*.cu, built as their own extension) to decide the next rung. Prints a table to stdout (kept in the
stage's log); NOT a source of published numbers: those come only from the harness's stamped records. Each variant
is checked against the fp32 reference first (a row ending in WRONG is over the bench's bound), and timed with the
harness's event timer (gpufolio.timing: L2 flushed between reps, as the bench is).

    python -m gpufolio_projects.gemm_ladder.lab.bf16_probe --shape 8192 8192 8192 --shape 8192 28672 4096
"""
from __future__ import annotations

import argparse
import sys

EXTENSION = "gpufolio_bf16_probe"
# Relative to projects/gemm_ladder/ (what build.load_extension expects).
SOURCES = tuple(f"lab/bf16_probe/{f}" for f in ("probe_a.cu", "probe_b.cu", "probe_c.cu", "bindings.cpp"))
# Swept after the --shape list, whatever it holds: the ping-pong kernel (probe_c.cu) is judged against cuBLAS at
# the two square sizes, and the ragged one (M, N tails inside a tile, K tail inside a 64-wide slice) checks every
# variant's edges.
ALWAYS_SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096), (4099, 4104, 776))


def load():
    """The probe's extension (built on first use, then cached), apart from the ladder's."""
    from ..build import SM90A_FLAGS, load_extension

    return load_extension(EXTENSION, SOURCES, SM90A_FLAGS)


def _time_ms(fn, rep_ms: float) -> float:
    from gpufolio.timing import time_events

    return time_events(fn, warmup_ms=25.0, rep_ms=rep_ms).median_ms


def _probe(ext, i: int, A, B, C, grid: int) -> None:
    why = ext.probe(i, A, B, C, grid)
    if why:
        raise RuntimeError(why)


def sweep_shape(ext, M: int, N: int, K: int, grids: list[int], rep_ms: float) -> None:
    """One table block: cuBLAS, every probe variant (at each grid override), cuBLAS again."""
    import torch

    from .. import ladder
    from ..bf16 import bench

    gen = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    ref = bench._reference({"A": A, "B": B})
    tol = ladder.tolerance_for_k(K, "bfloat16")
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
        ms = _time_ms(fn, rep_ms)
        verdict = "" if worst <= 1.0 else " WRONG"  # over the bench's bound somewhere (or NaN: never written)
        print(f"{name} | {resident} | {grid} | {M} {N} {K} | {ms:.4f} | {flops / ms / 1e9:.1f} | "
              f"{worst:.3g}{verdict}", flush=True)

    report("cublas", "-", "-", lambda: torch.matmul(A, B.t(), out=C))
    for i, name in enumerate(ext.probe_names()):
        # 132 CTAs = one per SM is already the default without clusters
        for g in grids if name.startswith("C2") else [g for g in grids if g != 132]:
            report(name, ext.probe_resident(i), g, lambda i=i, g=g: _probe(ext, i, A, B, C, g))
    report("cublas (again)", "-", "-", lambda: torch.matmul(A, B.t(), out=C))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shape", nargs=3, type=int, action="append", metavar=("M", "N", "K"))
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument("--grids", default="0,128,132", help="grid overrides (CTAs; 0 = the launcher's own choice)")
    a = p.parse_args(argv)
    ext = load()
    grids = [int(g) for g in a.grids.split(",")]
    print("probe | resident CTAs (occupancy API) | grid override | M N K | median ms | TFLOP/s | max err/bound")
    shapes = [tuple(s) for s in a.shape or []]
    shapes += [s for s in ALWAYS_SHAPES if s not in shapes]
    for M, N, K in shapes:
        sweep_shape(ext, M, N, K, grids, a.rep_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
