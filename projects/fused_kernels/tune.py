"""Launch-parameter sweeps and a timing breakdown for the GPU box (tuning only: records come from the harness).

    python -m gpufolio_projects.fused_kernels.tune [copy] [norm] [odd] [swiglu] [prof] [lce]

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


def tune_odd(T: int = 16384) -> None:
    """add+RMSNorm and RMSNorm at odd widths against their power-of-two neighbours, defaults only."""
    for H in (4096, 4097, 8191, 8192):
        x, r, dy, dr = (torch.randn(T, H, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        w = torch.randn(H, device="cuda", dtype=torch.bfloat16)
        e = x.element_size()
        for name, res, dres, n_fwd, n_bwd in (("add_rmsnorm", r, dr, 4, 4), ("rmsnorm", None, None, 2, 3)):
            fwd = do_bench(lambda: arn.rmsnorm_forward(x, res, w, 1e-6), warmup=25, rep=100)
            bwd = do_bench(lambda: arn.rmsnorm_backward(dy, dres, x, w, 1e-6), warmup=25, rep=100)
            print(f"{name:11s} {T}x{H:5d} fwd {_gbps(n_fwd * T * H * e, fwd)} | bwd {_gbps(n_bwd * T * H * e, bwd)}",
                  flush=True)


def tune_swiglu(T: int = 32768, N: int = 8192) -> None:
    """Forward and backward apart, per launch setting; then ours against torch.compile's kernels, profiled."""
    g, u, dh = (torch.randn(T, N, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    e = g.element_size()
    # (elements per program, warps); round 1 of session 2 also tried streaming stores and a persistent grid
    for block, warps in ((2048, 8), (1024, 4), (4096, 8), (2048, 4), (8192, 16)):
        tag = f"block={block:5d} warps={warps:2d}"
        ms = do_bench(lambda: sw.swiglu_forward(g, u, block, warps), warmup=25, rep=150)
        print(f"swiglu fwd {tag} {_gbps(3 * T * N * e, ms)}", flush=True)
        ms = do_bench(lambda: sw.swiglu_backward(dh, g, u, block, warps), warmup=25, rep=150)
        print(f"swiglu bwd {tag} {_gbps(5 * T * N * e, ms)}", flush=True)
    gr, ur = (t.clone().requires_grad_() for t in (g, u))
    ops = {"fused": sw.swiglu, "torch_compile": baselines.compiled("swiglu")}
    for name, op in ops.items():
        def call():
            return torch.autograd.grad(op(gr, ur), (gr, ur), dh)

        ms = do_bench(call, warmup=50, rep=300)
        print(f"swiglu fwd_bwd {name:13s} {_gbps(8 * T * N * e, ms)}", flush=True)
    from torch.profiler import ProfilerActivity, profile

    for name, op in ops.items():
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                torch.autograd.grad(op(gr, ur), (gr, ur), dh)
            torch.cuda.synchronize()
        print(f"--- profile swiglu fwd_bwd {name}", flush=True)
        print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=6), flush=True)


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


def _peak_extra_gib(fn) -> float:
    """What the harness records: peak allocated during one call beyond what was live before (outputs kept)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    extra = (torch.cuda.max_memory_allocated() - before) / 2**30
    del out
    return extra


def tune_lce(T: int = 8192, d: int = 4096, V: int = 128256) -> None:
    """Time and peak extra memory per chunk size and schedule (the bench's inputs: 5% ignored tokens), then one
    chunk's steps timed apart at 256 rows (Liger's budget) to see where a chunk's time goes."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(T, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(V, d, device="cuda", dtype=torch.bfloat16, generator=gen) * 0.02
    y = torch.randint(0, V, (T,), device="cuda", generator=gen)
    y[torch.rand(T, device="cuda", generator=gen) < 0.05] = -100
    flops = 6 * T * V * d
    settings = [(256, False, False, 8), (256, True, False, 8), (256, True, False, 16), (240, False, True, 8),
                (240, True, True, 8), (512, False, False, 8), (512, True, False, 8), (496, True, True, 8),
                (1024, True, False, 8), (1024, True, True, 8), (2048, False, False, 8), (2048, True, False, 8),
                (2048, True, True, 8)]
    for chunk, overlap, skip, ce_warps in settings:
        def call():
            return lce.linear_cross_entropy_fwd_bwd(x, w, y, chunk=chunk, overlap=overlap, skip_ignored=skip,
                                                    ce_warps=ce_warps)

        call()  # cuBLAS workspaces (one per stream) exist before any peak is read, as in the harness
        extra = _peak_extra_gib(call)
        ms = do_bench(call, warmup=25, rep=200)
        print(f"lce chunk={chunk:5d} overlap={overlap:d} skip_ignored={skip:d} ce_warps={ce_warps:2d} {ms:8.2f} ms "
              f"{flops / ms / 1e9:6.1f} TFLOP/s  peak extra {extra:.4f} GiB", flush=True)
    C = 256
    buf = torch.empty(C, V, device="cuda", dtype=torch.bfloat16)
    gx = torch.empty(C, d, device="cuda", dtype=torch.bfloat16)
    gw = torch.zeros(V, d, device="cuda", dtype=torch.bfloat16)
    xc = x[:C]
    n_valid = torch.tensor(T, device="cuda")
    loss = torch.empty(C, device="cuda")
    steps = {"logits mm": lambda: torch.mm(xc, w.t(), out=buf),
             "ce kernel w8": lambda: lce._ce_grad_kernel[(C,)](buf, y[:C], y, loss, n_valid, V, -100, 0.0,
                                                                HAS_IDX=False, HAS_SMOOTHING=False,
                                                                BLOCK=lce.BLOCK_V, num_warps=8),
             "ce kernel w16": lambda: lce._ce_grad_kernel[(C,)](buf, y[:C], y, loss, n_valid, V, -100, 0.0,
                                                                 HAS_IDX=False, HAS_SMOOTHING=False,
                                                                 BLOCK=lce.BLOCK_V, num_warps=16),
             "grad_x mm": lambda: torch.mm(buf, w, out=gx),
             "grad_w addmm": lambda: gw.addmm_(buf.t(), xc)}
    torch.mm(xc, w.t(), out=buf)
    for name, fn in steps.items():
        ms = do_bench(fn, warmup=25, rep=100)
        print(f"lce chunk={C} {name:13s} {ms * 1e3:8.1f} us  x{T // C} chunks = {ms * T / C:6.2f} ms", flush=True)
    side = torch.cuda.Stream()
    main = torch.cuda.current_stream()

    def both():
        side.wait_stream(main)
        with torch.cuda.stream(side):
            gw.addmm_(buf.t(), xc)
        torch.mm(buf, w, out=gx)
        main.wait_stream(side)

    ms = do_bench(both, warmup=25, rep=100)
    print(f"lce chunk={C} grad_x || grad_w {ms * 1e3:8.1f} us (two streams)", flush=True)


def main(argv: list[str]) -> None:
    todo = argv or ["copy", "norm", "odd", "swiglu", "prof", "lce"]
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    steps = {"copy": tune_copy, "norm": tune_norm, "odd": tune_odd, "swiglu": tune_swiglu, "prof": tune_prof, "lce": tune_lce}
    for name in todo:
        steps[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
