"""Tile-size sweep behind rungs 09 and 10 (run by gpu.sh on the H200; not a benchmark record).

    python -m gpufolio_projects.gemm_ladder.sgemm.sweep --size 4096 > sweep.txt

Times every sweep config (sweep_*.cu) at one square size with CUDA events (median of reps after warm-up), after
checking each against cuBLAS FP32 on the same inputs. The winners are copied by hand into
09_autotuned_sm90.cu / 10_warptiling.cu, and the output is committed as evidence; the ladder's numbers
themselves come only from the harness (bench.py).
"""
from __future__ import annotations

import argparse
import statistics


def main() -> None:
    import torch
    from gpufolio_projects.gemm_ladder.sgemm import registry

    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    ext = registry.load()
    n = args.size
    gen = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(n, n, device="cuda", generator=gen)
    B = torch.randn(n, n, device="cuda", generator=gen)
    C = torch.empty(n, n, device="cuda")
    ref = A @ B
    flops = 2.0 * n**3

    def time_ms(fn) -> float:
        for _ in range(5):
            fn()
        times = []
        for _ in range(args.reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    rows = [("cublas (torch.matmul, TF32 off)", time_ms(lambda: torch.matmul(A, B, out=C)), 0.0)]
    for i in range(ext.sweep_size()):
        C.fill_(float("nan"))
        registry.sweep(ext, i, A, B, C)
        err = (C - ref).abs().max().item()
        rows.append((ext.sweep_name(i), time_ms(lambda i=i: registry.sweep(ext, i, A, B, C)), err))
    print(f"# sweep at {n}^3 on {torch.cuda.get_device_name()}; max|C - cuBLAS| per config")
    base = rows[0][1]
    for name, ms, err in rows:
        print(f"{name:40s} {ms:8.3f} ms {flops / ms / 1e9:7.2f} TFLOP/s {100 * base / ms:6.1f}% of cuBLAS"
              f"  maxerr {err:.2e}")


if __name__ == "__main__":
    main()
