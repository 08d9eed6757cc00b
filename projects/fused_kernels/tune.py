"""Launch-parameter sweeps and a timing breakdown for the GPU box (tuning only: records come from the harness).

    python -m gpufolio_projects.fused_kernels.tune [copy] [norm] [swiglu] [prof] [lce]

Each line is one setting and its median time (triton.testing.do_bench, L2 flushed), so the defaults in ops/
are chosen from measurements on the H200 rather than guessed. ``prof`` times add+RMSNorm forward+backward the
way the harness does, with and without CUDA-graph replay, to separate kernel time from host overhead.
"""
# ruff: noqa: B023  (each lambda is run by do_bench before the loop variable moves on)
from __future__ import annotations

import sys
import time

import torch
import triton
from triton.testing import do_bench

from . import baselines
from .ops import add_rmsnorm as arn
from .ops import linear_cross_entropy as lce
from .ops import swiglu as sw
from .ops.copy import triton_copy


def _gbps(nbytes: float, ms: float) -> str:
    return f"{nbytes / ms / 1e6:8.1f} GB/s  {ms * 1e3:9.1f} us"


def tune_copy() -> None:
    src = torch.randn(2**28, device="cuda")  # 1 GiB of fp32
    dst = torch.empty_like(src)
    nbytes = 2 * src.numel() * src.element_size()
    print(f"copy 1GiB fp32 torch copy_              {_gbps(nbytes, do_bench(lambda: dst.copy_(src)))}", flush=True)
    for block, warps, evict in ((4096, 8, True), (4096, 8, False), (4096, 4, False), (8192, 8, False),
                                (8192, 4, False), (16384, 8, False), (2048, 4, False)):
        ms = do_bench(lambda: triton_copy(src, dst, block, warps, evict))
        print(f"copy 1GiB fp32 block={block:5d} warps={warps} evict_first={evict:d} {_gbps(nbytes, ms)}", flush=True)


def tune_norm(T: int = 32768, H: int = 4096) -> None:
    x, r, dy, dr = (torch.randn(T, H, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    w = torch.randn(H, device="cuda", dtype=torch.bfloat16)
    e = x.element_size()
    base = arn.launch_config(H)
    for warps, rows, evict in ((8, 1, True), (8, 1, False), (16, 1, False), (4, 1, False), (8, 2, False)):
        cfg = arn.LaunchConfig(base.block_n, rows, warps, evict_first=evict)
        ms = do_bench(lambda: arn.rmsnorm_forward(x, r, w, 1e-6, cfg))
        print(f"add_rmsnorm fwd {T}x{H} warps={warps:2d} rows={rows} evict_first={evict:d} "
              f"{_gbps(4 * T * H * e, ms)}", flush=True)
    for warps, per_sm, prefetch, evict in ((16, 1, True, True), (16, 1, True, False), (32, 1, True, False),
                                           (16, 2, True, False), (8, 2, False, False)):
        cfg = arn.LaunchConfig(base.block_n, 1, base.num_warps, warps, per_sm, 1, prefetch, evict)
        ms = do_bench(lambda: arn.rmsnorm_backward(dy, dr, r, w, 1e-6, cfg))
        print(f"add_rmsnorm bwd {T}x{H} warps={warps:2d} progs/SM={per_sm} prefetch={prefetch:d} "
              f"evict_first={evict:d} {_gbps(4 * T * H * e, ms)}", flush=True)


def tune_swiglu(T: int = 32768, N: int = 8192) -> None:
    g, u, dh = (torch.randn(T, N, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    e = g.element_size()
    for block, warps, evict in ((4096, 8, True), (4096, 8, False), (8192, 8, False), (4096, 4, False)):
        ms = do_bench(lambda: sw.swiglu_forward(g, u, block, warps, evict))
        print(f"swiglu fwd block={block} warps={warps} evict_first={evict:d} {_gbps(3 * T * N * e, ms)}", flush=True)
        ms = do_bench(lambda: sw.swiglu_backward(dh, g, u, block, warps, evict))
        print(f"swiglu bwd block={block} warps={warps} evict_first={evict:d} {_gbps(5 * T * N * e, ms)}", flush=True)


def tune_prof(T: int = 32768, H: int = 4096) -> None:
    """add+RMSNorm forward+backward per variant: harness timing (events, L2 flush) with and without CUDA-graph
    replay, and the host time to enqueue one call. Graph replay removes host overhead; if the plain number is
    well below it, the call is host-bound, not bandwidth-bound."""
    from gpufolio.timing import time_events

    x, r, w = (torch.randn(*s, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for s in ((T, H), (T, H), (H,)))
    dy, dr = (torch.randn(T, H, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    nbytes = 8 * T * H * 2
    ops = {"fused": arn.add_rmsnorm, "eager": baselines.eager_add_rmsnorm,
           "torch_compile": baselines.compiled("add_rmsnorm")}
    if baselines.liger_missing() is None:
        ops["liger"] = baselines.liger("add_rmsnorm")
    for name, op in ops.items():
        def call():
            y, s = op(x, r, w)
            return torch.autograd.grad((y, s), (x, r, w), (dy, dr))

        for _ in range(3):
            call()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            call()
        host_us = (time.perf_counter() - t0) / 20 * 1e6
        torch.cuda.synchronize()
        plain = time_events(call, warmup_ms=50, rep_ms=200).median_ms
        graph = time_events(call, warmup_ms=50, rep_ms=200, cuda_graph=True).median_ms
        print(f"prof add_rmsnorm fwd_bwd {name:13s} plain {_gbps(nbytes, plain)} | graph {_gbps(nbytes, graph)} | "
              f"host enqueue {host_us:7.1f} us/call", flush=True)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            y, s = arn.add_rmsnorm(x, r, w)
            torch.autograd.grad((y, s), (x, r, w), (dy, dr))
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=12), flush=True)


def tune_lce(T: int = 8192, d: int = 4096, V: int = 128256) -> None:
    x = torch.randn(T, d, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(V, d, device="cuda", dtype=torch.bfloat16) * 0.02
    y = torch.randint(0, V, (T,), device="cuda")
    lce.linear_cross_entropy_fwd_bwd(x, w, y, chunk=256)  # cuBLAS workspace allocated before any peak is read
    for chunk, ce_warps in ((2048, 8), (2048, 16), (2048, 4), (4096, 8)):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = lce.linear_cross_entropy_fwd_bwd(x, w, y, chunk=chunk, ce_warps=ce_warps)
        torch.cuda.synchronize()
        extra = (torch.cuda.max_memory_allocated() - before) / 2**30
        del out
        ms = do_bench(lambda: lce.linear_cross_entropy_fwd_bwd(x, w, y, chunk=chunk, ce_warps=ce_warps),
                      warmup=50, rep=300)
        tf = 6 * T * V * d / ms / 1e9
        print(f"lce chunk={chunk:5d} ce_warps={ce_warps:2d} {ms:8.2f} ms {tf:6.1f} TFLOP/s  peak extra {extra:.3f} GiB",
              flush=True)


def main(argv: list[str]) -> None:
    todo = argv or ["copy", "norm", "swiglu", "prof", "lce"]
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    steps = {"copy": tune_copy, "norm": tune_norm, "swiglu": tune_swiglu, "prof": tune_prof, "lce": tune_lce}
    for name in todo:
        steps[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
