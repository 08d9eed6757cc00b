"""Launch-parameter sweeps and a timing breakdown for the GPU box (tuning only: records come from the harness).

    python -m gpufolio_projects.fused_kernels.lab.tune [copy] [norm] [odd] [odd_compile] [swiglu] [prof] [lce]
                                                     [lce_head]

Each line is one setting and its median time (triton.testing.do_bench, L2 flushed), so the defaults in ops/
are chosen from measurements on the H200 rather than guessed. ``prof`` times add+RMSNorm forward+backward the
way the harness does, with and without CUDA-graph replay, to separate kernel time from host overhead.
"""
# ruff: noqa: B023  (each lambda is run by do_bench before the loop variable moves on)
from __future__ import annotations

import dataclasses
import sys
import time

import torch
import triton
from triton.testing import do_bench

from .. import baselines
from ..ops import add_rmsnorm as arn
from ..ops import linear_cross_entropy as lce
from ..ops import swiglu as sw
from ..ops.copy import triton_copy


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


ODD_WIDTHS = (4096, 4097, 5120, 8191, 8192)  # the split kernels take 4097 and 8191; the others are controls


def _norm_calls(op: str, H: int, T: int):
    """Inputs for one width; returns (fwd_bwd(fn), bytes of fwd, bytes of fwd+bwd) for add_rmsnorm or rmsnorm."""
    x, r, dy, dr = (torch.randn(T, H, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(4))
    w = torch.randn(H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    act = T * H * x.element_size()
    if op == "add_rmsnorm":
        return (lambda fn: torch.autograd.grad(fn(x, r, w), (x, r, w), (dy, dr)),
                lambda fn: fn(x, r, w), 4 * act, 8 * act)
    return (lambda fn: torch.autograd.grad(fn(x, w), (x, w), dy), lambda fn: fn(x, w), 2 * act, 5 * act)


def _ours(op: str, cfg):
    """Our op through its autograd Function, with an explicit launch config for both passes."""
    if op == "add_rmsnorm":
        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, r, w):
                y, s = arn.rmsnorm_forward(x, r, w, 1e-6, cfg)
                ctx.save_for_backward(s, w)
                return y, s

            @staticmethod
            def backward(ctx, dy, dr):
                s, w = ctx.saved_tensors
                ds, dw = arn.rmsnorm_backward(dy, dr, s, w, 1e-6, cfg)
                return ds, ds, dw
    else:
        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                return arn.rmsnorm_forward(x, None, w, 1e-6, cfg)[0]

            @staticmethod
            def backward(ctx, dy):
                x, w = ctx.saved_tensors
                return arn.rmsnorm_backward(dy, None, x, w, 1e-6, cfg)

    return F.apply


def _odd_variants(H: int) -> dict:
    """new = today's default (split kernels where H % 16 != 0); old = the plain kernels, as before the split;
    new_bwd_w*2 = the split backward at twice the default warps (the plain kernels' rule)."""
    new = arn.launch_config(H)
    if not new.split:
        return {"new": new}
    return {"new": new, "new_bwd_w*2": dataclasses.replace(new, bwd_num_warps=min(32, 2 * new.bwd_num_warps)),
            "old": arn.launch_config(H, split=False)}


def _warm_gpu(seconds: float = 1.0) -> None:
    """Clocks idle at 345 MHz and ramp under load: the first width measured would otherwise read low."""
    a = torch.empty(2**28, device="cuda")
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a.mul_(1.0)
    torch.cuda.synchronize()


def _bench_pair(train, infer, fn) -> tuple[float, float]:
    with torch.no_grad():
        fwd = do_bench(lambda: infer(fn), warmup=5, rep=30)
    return fwd, do_bench(lambda: train(fn), warmup=5, rep=30)


def tune_odd(T: int = 16384) -> None:
    """add+RMSNorm and RMSNorm per width: our split kernels (new, and the backward at twice its warps) against
    the plain ones (old), forward and forward+backward through autograd. 4096, 5120, 8192: controls (plain)."""
    _warm_gpu()
    for H in ODD_WIDTHS:
        for op in ("add_rmsnorm", "rmsnorm"):
            train, infer, fwd_bytes, all_bytes = _norm_calls(op, H, T)
            for name, cfg in _odd_variants(H).items():
                fwd, both = _bench_pair(train, infer, _ours(op, cfg))
                print(f"odd {op:11s} {T}x{H:5d} {name:13s} fwd {_gbps(fwd_bytes, fwd)} | fwd_bwd "
                      f"{_gbps(all_bytes, both)}", flush=True)
        torch.cuda.empty_cache()


def tune_odd_compile(T: int = 16384) -> None:
    """RMSNorm at the odd widths (the bench's rmsnorm rows): ours (default config, the op the bench calls)
    against torch.compile, forward and forward+backward, one compile per width and pass."""
    from ..ops.rmsnorm import rmsnorm

    _warm_gpu()
    for H in (4097, 8191):
        train, infer, fwd_bytes, all_bytes = _norm_calls("rmsnorm", H, T)
        for name, fn in (("fused", rmsnorm), ("torch_compile", baselines.compiled("rmsnorm"))):
            fwd, both = _bench_pair(train, infer, fn)
            print(f"odd rmsnorm     {T}x{H:5d} {name:13s} fwd {_gbps(fwd_bytes, fwd)} | fwd_bwd "
                  f"{_gbps(all_bytes, both)}", flush=True)


def tune_swiglu(T: int = 32768, N: int = 8192) -> None:
    """Forward and backward apart per launch setting (elements per program, warps, evict-first loads), then
    forward+backward through autograd: ours per setting against torch.compile, alternating, twice, so drift
    between the two shows as disagreement between the rounds rather than as a margin."""
    g, u, dh = (torch.randn(T, N, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    e = g.element_size()
    settings = ((2048, 8, False), (1024, 4, False), (2048, 8, True), (1024, 4, True), (4096, 16, False))
    for block, warps, evict in settings:
        tag = f"block={block:5d} warps={warps:2d} evict_first={evict:d}"
        ms = do_bench(lambda: sw.swiglu_forward(g, u, block, warps, evict), warmup=10, rep=60)
        print(f"swiglu fwd {tag} {_gbps(3 * T * N * e, ms)}", flush=True)
        ms = do_bench(lambda: sw.swiglu_backward(dh, g, u, block, warps, evict), warmup=10, rep=60)
        print(f"swiglu bwd {tag} {_gbps(5 * T * N * e, ms)}", flush=True)
    gr, ur = (t.clone().requires_grad_() for t in (g, u))

    def ours(block, warps, evict):
        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return sw.swiglu_forward(a, b, block, warps, evict)

            @staticmethod
            def backward(ctx, d):
                return sw.swiglu_backward(d, *ctx.saved_tensors, block, warps, evict)

        return F.apply

    ops = {f"fused {b}/{w}/{int(ev)}": ours(b, w, ev) for b, w, ev in settings[:4]}
    ops["torch_compile"] = baselines.compiled("swiglu")
    for rnd in (1, 2):
        for name, op in ops.items():
            ms = do_bench(lambda: torch.autograd.grad(op(gr, ur), (gr, ur), dh), warmup=20, rep=120)
            print(f"swiglu fwd_bwd round {rnd} {name:18s} {_gbps(8 * T * N * e, ms)}", flush=True)


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


def _lce_inputs(T: int, d: int, V: int):
    """The bench's inputs: bf16, W at std 0.02, 5% of the tokens ignored."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(T, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(V, d, device="cuda", dtype=torch.bfloat16, generator=gen) * 0.02
    y = torch.randint(0, V, (T,), device="cuda", generator=gen)
    y[torch.rand(T, device="cuda", generator=gen) < 0.05] = -100
    return x, w, y


def tune_lce(d: int = 4096, V: int = 128256) -> None:
    """Time and peak extra memory per schedule at T = 2d (the headline) and T = d (all tokens in the head), then
    the head's steps timed apart at T = d and one 256-row chunk's steps (Liger's budget) at T = 2d."""
    # (T, chunk rows, overlap, skip_ignored, head, vocab_chunk)
    settings = [(8192, 256, False, False, False, None), (8192, 256, False, False, True, 1024),
                (8192, 256, False, False, True, 2048), (8192, 256, False, False, True, 4096),
                (8192, 512, True, False, False, None), (8192, 512, True, False, True, None),
                (8192, 1024, True, True, False, None), (8192, 1024, True, True, True, None),
                (8192, 2048, True, True, False, None), (8192, 2048, True, True, True, None),
                (4096, 128, False, False, False, None), (4096, 128, False, False, True, 1024),
                (4096, 128, False, False, True, 2048), (4096, 128, False, False, True, 4096),
                (4096, 2048, True, True, False, None), (4096, 4096, True, True, False, None)]
    inputs = {}
    for T, chunk, overlap, skip, head, vc in settings:
        if T not in inputs:
            inputs.clear()
            torch.cuda.empty_cache()
            inputs[T] = _lce_inputs(T, d, V)
        x, w, y = inputs[T]

        def call():
            return lce.linear_cross_entropy_fwd_bwd(x, w, y, chunk=chunk, overlap=overlap, skip_ignored=skip,
                                                    head=head, vocab_chunk=vc)

        call()  # cuBLAS workspaces (one per stream) exist before any peak is read, as in the harness
        extra = _peak_extra_gib(call)
        ms = do_bench(call, warmup=25, rep=200)
        print(f"lce T={T} chunk={chunk:5d} overlap={overlap:d} skip_ignored={skip:d} head={head:d} "
              f"vocab_chunk={vc or lce.VOCAB_CHUNK:5d} {ms:8.2f} ms {6 * T * V * d / ms / 1e9:6.1f} TFLOP/s  "
              f"peak extra {extra:.4f} GiB", flush=True)
    inputs.clear()
    torch.cuda.empty_cache()
    _lce_head_steps(d, V)
    _lce_chunk_steps(d, V)


def _lce_head_steps(d: int, V: int, T: int = 4096) -> None:
    from ..ops import linear_cross_entropy_head as lh

    x, w, y = _lce_inputs(T, d, V)
    gw = torch.empty(V, d, device="cuda", dtype=torch.bfloat16)
    gx = torch.empty(T, d, device="cuda", dtype=torch.bfloat16)
    lt = gw.view(-1)[: V * T].view(V, T)
    loss = torch.empty(T, device="cuda")
    n_valid = (y != -100).sum()
    vc = lh.VOCAB_CHUNK
    buf = torch.empty(vc, d, device="cuda", dtype=torch.bfloat16)
    torch.mm(w, x.t(), out=lt)
    steps = {"logits^T mm": lambda: torch.mm(w, x.t(), out=lt),
             "logits^T chunked": lambda: [torch.mm(w[v:v + vc], x.t(), out=lt[v:v + vc]) for v in range(0, V, vc)],
             "column CE": lambda: lh._ce_columns(lt, y, n_valid, loss, -100, 0.0),
             "grad_x mm": lambda: torch.mm(lt.t(), w, out=gx),
             "grad_w chunk mms": lambda: [torch.mm(lt[v:v + vc], x, out=buf[: min(vc, V - v)])
                                          for v in range(0, V, vc)],
             "grad_w copies": lambda: [gw[v:v + vc].copy_(buf[: min(vc, V - v)]) for v in range(0, V, vc)]}
    for name, fn in steps.items():
        ms = do_bench(fn, warmup=25, rep=100)
        print(f"lce head T={T} {name:17s} {ms * 1e3:8.1f} us", flush=True)
    # The column CE's launch settings: each line is the whole _ce_columns (statistics, lse, gradient).
    default = (lh.STATS_BLOCK_V, lh.STATS_BLOCK_T, lh.STATS_WARPS, lh.GRAD_BLOCK_V, lh.GRAD_BLOCK_T, lh.GRAD_WARPS)
    for cfg in [(32, 64, 8, 32, 128, 8), (64, 64, 8, 32, 128, 8), (64, 128, 8, 32, 128, 8), (128, 64, 8, 32, 128, 8),
                (32, 128, 4, 32, 128, 8), (64, 64, 8, 64, 128, 8), (64, 64, 8, 16, 256, 8), (64, 64, 8, 32, 128, 4)]:
        (lh.STATS_BLOCK_V, lh.STATS_BLOCK_T, lh.STATS_WARPS, lh.GRAD_BLOCK_V, lh.GRAD_BLOCK_T,
         lh.GRAD_WARPS) = cfg
        torch.mm(w, x.t(), out=lt)
        ms = do_bench(lambda: lh._ce_columns(lt, y, n_valid, loss, -100, 0.0), warmup=25, rep=100)
        print(f"lce head T={T} column CE stats {cfg[:3]} grad {cfg[3:]} {ms * 1e3:8.1f} us", flush=True)
    (lh.STATS_BLOCK_V, lh.STATS_BLOCK_T, lh.STATS_WARPS, lh.GRAD_BLOCK_V, lh.GRAD_BLOCK_T, lh.GRAD_WARPS) = default
    # Where a whole call's time goes, kernel by kernel (the steps above leave out the glue between them).
    from torch.profiler import ProfilerActivity, profile

    def call():
        return lce.linear_cross_entropy_fwd_bwd(x, w, y, head=True)

    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            call()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=18), flush=True)


def _lce_chunk_steps(d: int, V: int, T: int = 8192, C: int = 256) -> None:
    x, w, y = _lce_inputs(T, d, V)
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
             "grad_x mm": lambda: torch.mm(buf, w, out=gx),
             "grad_w addmm": lambda: gw.addmm_(buf.t(), xc)}
    torch.mm(xc, w.t(), out=buf)
    for name, fn in steps.items():
        ms = do_bench(fn, warmup=25, rep=100)
        print(f"lce chunk={C} {name:13s} {ms * 1e3:8.1f} us  x{T // C} chunks = {ms * T / C:6.2f} ms", flush=True)


def main(argv: list[str]) -> None:
    todo = argv or ["copy", "norm", "odd", "swiglu", "prof", "lce"]
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    steps = {"copy": tune_copy, "norm": tune_norm, "odd": tune_odd, "odd_compile": tune_odd_compile,
             "swiglu": tune_swiglu, "prof": tune_prof, "lce": tune_lce,
             "lce_head": lambda: _lce_head_steps(4096, 128256)}
    for name in todo:
        steps[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
