"""Exploration sweep, a lab stage: times variants of the persistent kernel and the ping-pong kernel
(bf16_probe/*.cu, built as their own extension) to decide the next rung. Prints a table to stdout (kept in the
stage's log); NOT a source of published numbers: those come only from the harness's stamped records. Each variant
is checked against the fp32 reference first (a row ending in WRONG is over the bench's bound), and timed with the
harness's event timer (gpufolio.timing: L2 flushed between reps, as the bench is).

    python -m gpufolio_projects.gemm_ladder.lab.bf16_probe --shape 8192 8192 8192 --shape 8192 28672 4096
    python -m gpufolio_projects.gemm_ladder.lab.bf16_probe --shape 8192 8192 8192 --only-listed --variants ^PP --profile

With --profile nothing is timed: each chosen variant (and cuBLAS) runs a few warm-up calls, then one call inside
an NVTX range named "profile", printed as "profiled <name>" in order, which is what `ncu --nvtx --nvtx-include
profile/` and lab/ncu_table.py expect (the ncu_probe stage).
"""
from __future__ import annotations

import argparse
import re
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


def sweep_shape(ext, M: int, N: int, K: int, grids: list[int], rep_ms: float, chosen: list[int],
                rungs: list[str]) -> None:
    """One table block: cuBLAS, every probe variant (at each grid override), cuBLAS again."""
    import torch

    from .. import ladder
    from ..bf16 import bench, ops

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
    for rung in rungs:  # the ladder's own best, so a probe variant is judged against it in the same process
        report(rung, "-", "-", lambda rung=rung: ops.gemm(rung, A, B, out=C))
    for i, name in enumerate(ext.probe_names()):
        if i not in chosen:
            continue
        # 132 CTAs = one per SM is already the default without clusters
        for g in grids if name.startswith("C2") else [g for g in grids if g != 132]:
            report(name, ext.probe_resident(i), g, lambda i=i, g=g: _probe(ext, i, A, B, C, g))
    report("cublas (again)", "-", "-", lambda: torch.matmul(A, B.t(), out=C))


def profile_shape(ext, M: int, N: int, K: int, chosen: list[int], warmup: int = 3) -> None:
    """cuBLAS, then each chosen variant at the launcher's own grid: warm-up calls, then one call in an NVTX
    range "profile" (ncu sees exactly that steady-state kernel)."""
    import torch

    from .bf16_profile import profile_call

    gen = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16)
    B = torch.randn(N, K, device="cuda", generator=gen).to(torch.bfloat16)
    C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    names = ext.probe_names()
    calls = [("cublas", lambda: torch.matmul(A, B.t(), out=C))]
    calls += [(names[i].replace(" ", "_"), lambda i=i: _probe(ext, i, A, B, C, 0)) for i in chosen]
    for label, fn in calls:
        profile_call(fn, warmup)
        print(f"profiled {label} {M}x{N}x{K}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shape", nargs=3, type=int, action="append", metavar=("M", "N", "K"))
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument("--grids", default="0,128,132", help="grid overrides (CTAs; 0 = the launcher's own choice)")
    p.add_argument("--variants", default="", help="a regular expression: only the variants whose name it matches")
    p.add_argument("--only-listed", action="store_true", help=f"leave out the shapes always swept {ALWAYS_SHAPES}")
    p.add_argument("--profile", action="store_true", help="no timing: one call per variant in an NVTX range")
    p.add_argument("--rungs", default="14_multicast_four_stages_tma_store",
                   help="ladder rungs timed beside the variants (comma-separated; empty: none)")
    a = p.parse_args(argv)
    shapes = [tuple(s) for s in a.shape or []]
    if not a.only_listed:
        shapes += [s for s in ALWAYS_SHAPES if s not in shapes]
    if not shapes:
        p.error("no shapes: give --shape, or drop --only-listed")
    ext = load()
    chosen = [i for i, name in enumerate(ext.probe_names()) if re.search(a.variants, name)]
    if not chosen:
        p.error(f"--variants {a.variants!r} matches none of: {', '.join(ext.probe_names())}")
    if a.profile:
        for M, N, K in shapes:
            profile_shape(ext, M, N, K, chosen)
        return 0
    grids = [int(g) for g in a.grids.split(",")]
    print("probe | resident CTAs (occupancy API) | grid override | M N K | median ms | TFLOP/s | max err/bound")
    for M, N, K in shapes:
        sweep_shape(ext, M, N, K, grids, a.rep_ms, chosen, [r for r in a.rungs.split(",") if r])
    return 0


if __name__ == "__main__":
    sys.exit(main())
