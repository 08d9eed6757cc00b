"""Tile-size sweep behind rungs 09 and 10 (a lab stage on the H200; not a benchmark record).

    python -m gpufolio_projects.gemm_ladder.lab.sgemm_sweep --size 4096 > sweep.txt

Times every sweep config (sgemm_sweep/*.cu, built as their own extension) at one square size with the harness's
event timer (gpufolio.timing), after checking each against cuBLAS FP32 on the same inputs. The winners are copied by hand into
09_autotuned_sm90.cu / 10_warptiling.cu, and the output is committed as evidence; the ladder's numbers
themselves come only from the harness (bench.py).
"""
from __future__ import annotations

import argparse

EXTENSION = "gpufolio_sgemm_sweep"
# Relative to projects/gemm_ladder/ (what build.load_extension expects).
SOURCES = tuple(f"lab/sgemm_sweep/{f}" for f in ("sweep_block.cu", "sweep_warp.cu", "sweep_cp_async.cu",
                                                  "bindings.cpp"))


def load():
    """The sweep's extension (built on first use, then cached), apart from the ladder's."""
    from ..build import load_extension

    return load_extension(EXTENSION, SOURCES)


def sweep(ext, i: int, A, B, C) -> None:
    """C = A @ B with sweep config ``i``; RuntimeError with the binding's reason if it refused or failed."""
    why = ext.sweep(i, A, B, C)
    if why:
        raise RuntimeError(why)


def main() -> None:
    import torch
    from gpufolio.timing import time_events

    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--rep-ms", type=float, default=200.0)
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    ext = load()
    n = args.size
    gen = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(n, n, device="cuda", generator=gen)
    B = torch.randn(n, n, device="cuda", generator=gen)
    C = torch.empty(n, n, device="cuda")
    ref = A @ B
    flops = 2.0 * n**3

    def time_ms(fn) -> float:
        return time_events(fn, warmup_ms=50.0, rep_ms=args.rep_ms).median_ms

    rows = [("cublas (torch.matmul, TF32 off)", time_ms(lambda: torch.matmul(A, B, out=C)), 0.0)]
    for i in range(ext.sweep_size()):
        C.fill_(float("nan"))
        sweep(ext, i, A, B, C)
        err = (C - ref).abs().max().item()
        rows.append((ext.sweep_name(i), time_ms(lambda i=i: sweep(ext, i, A, B, C)), err))
    print(f"# sweep at {n}^3 on {torch.cuda.get_device_name()}; max|C - cuBLAS| per config")
    base = rows[0][1]
    for name, ms, err in rows:
        print(f"{name:40s} {ms:8.3f} ms {flops / ms / 1e9:7.2f} TFLOP/s {100 * base / ms:6.1f}% of cuBLAS"
              f"  maxerr {err:.2e}")


if __name__ == "__main__":
    main()
