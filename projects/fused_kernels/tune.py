"""Launch-parameter sweeps for the GPU box (tuning only: the records come from the harness, not from here).

    python -m gpufolio_projects.fused_kernels.tune [copy] [norm] [swiglu] [lce]

Prints one line per setting with triton.testing.do_bench's median, so that the defaults in ops/ are chosen
from measurements on the H200 rather than guessed.
"""
# ruff: noqa: B023  (each lambda is run by do_bench before the loop variable moves on)
from __future__ import annotations

import sys

import torch
import triton
from triton.testing import do_bench

from .ops import add_rmsnorm as arn
from .ops import linear_cross_entropy as lce
from .ops import swiglu as sw
from .ops.copy import triton_copy


def _gbps(nbytes: float, ms: float) -> str:
    return f"{nbytes / ms / 1e6:8.1f} GB/s  {ms * 1e3:9.1f} us"


def tune_copy() -> None:
    for dtype in (torch.float32, torch.bfloat16):
        src = torch.randn(2**30 // torch.empty((), dtype=dtype).element_size(), device="cuda", dtype=dtype)
        dst = torch.empty_like(src)
        nbytes = 2 * src.numel() * src.element_size()
        print(f"copy 1GiB {dtype} torch   {_gbps(nbytes, do_bench(lambda: dst.copy_(src)))}", flush=True)
        for block in (2048, 4096, 8192, 16384):
            for warps in (4, 8, 16):
                ms = do_bench(lambda: triton_copy(src, dst, block, warps))
                print(f"copy 1GiB {dtype} block={block:5d} warps={warps:2d} {_gbps(nbytes, ms)}", flush=True)


def tune_norm(T: int = 32768, H: int = 4096) -> None:
    x, r, dy, dr = (torch.randn(T, H, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    w = torch.randn(H, device="cuda", dtype=torch.bfloat16)
    e = x.element_size()
    base = arn.launch_config(H)
    for warps, rows in ((4, 1), (8, 1), (16, 1), (8, 2)):
        cfg = arn.LaunchConfig(base.block_n, rows, warps)  # forward only: backward fields unused
        ms = do_bench(lambda: arn.rmsnorm_forward(x, r, w, 1e-6, cfg))
        print(f"add_rmsnorm fwd {T}x{H} warps={warps:2d} rows={rows} {_gbps(4 * T * H * e, ms)}", flush=True)
    grid = [(8, 2, False)] + [(16, n, p) for n in (1, 2, 4) for p in (False, True)] + \
        [(32, n, p) for n in (1, 2) for p in (False, True)]
    for warps, per_sm, prefetch in grid:
        cfg = arn.LaunchConfig(base.block_n, 1, base.num_warps, warps, per_sm, 1, prefetch)
        ms = do_bench(lambda: arn.rmsnorm_backward(dy, dr, r, w, 1e-6, cfg))
        print(f"add_rmsnorm bwd {T}x{H} warps={warps:2d} progs/SM={per_sm} prefetch={prefetch:d} "
              f"{_gbps(4 * T * H * e, ms)}", flush=True)
    cfg = arn.LaunchConfig(base.block_n, 1, base.num_warps, 16, 2, 3)
    ms = do_bench(lambda: arn.rmsnorm_backward(dy, dr, r, w, 1e-6, cfg))
    print(f"add_rmsnorm bwd {T}x{H} warps=16 progs/SM=2 num_stages=3 {_gbps(4 * T * H * e, ms)}", flush=True)


def tune_swiglu(T: int = 32768, N: int = 8192) -> None:
    g, u, dh = (torch.randn(T, N, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    e = g.element_size()
    print(f"swiglu fwd {_gbps(3 * T * N * e, do_bench(lambda: sw.swiglu_forward(g, u)))}", flush=True)
    print(f"swiglu bwd {_gbps(5 * T * N * e, do_bench(lambda: sw.swiglu_backward(dh, g, u)))}", flush=True)


def tune_lce(T: int = 8192, d: int = 4096, V: int = 128256) -> None:
    x = torch.randn(T, d, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(V, d, device="cuda", dtype=torch.bfloat16) * 0.02
    y = torch.randint(0, V, (T,), device="cuda")
    for chunk in (256, 512, 1024, 2048):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = lce.linear_cross_entropy_fwd_bwd(x, w, y, chunk=chunk)
        torch.cuda.synchronize()
        extra = (torch.cuda.max_memory_allocated() - before) / 2**30
        del out
        ms = do_bench(lambda: lce.linear_cross_entropy_fwd_bwd(x, w, y, chunk=chunk), warmup=50, rep=300)
        tf = 6 * T * V * d / ms / 1e9
        print(f"lce chunk={chunk:5d} {ms:8.2f} ms {tf:6.1f} TFLOP/s  peak extra {extra:.3f} GiB", flush=True)
    # where the time goes at the default chunk: the three GEMMs and the CE kernel, each alone
    c = lce.chunk_rows(T, V, d, 2)
    buf = torch.empty(c, V, device="cuda", dtype=torch.bfloat16)
    gx = torch.empty(c, d, device="cuda", dtype=torch.bfloat16)
    gw = torch.empty_like(w)
    n_valid = torch.tensor(T, device="cuda")
    loss = torch.empty(c, device="cuda")
    parts = {
        "logits mm": lambda: torch.mm(x[:c], w.t(), out=buf),
        "grad_x mm": lambda: torch.mm(buf, w, out=gx),
        "grad_w addmm": lambda: gw.addmm_(buf.t(), x[:c]),
        "ce kernel": lambda: lce._ce_grad_kernel[(c,)](buf, y[:c], loss, n_valid, V, -100, 0.0,
                                                       HAS_SMOOTHING=False, BLOCK=lce.BLOCK_V, num_warps=8),
    }
    for name, f in parts.items():
        ms = do_bench(f)
        print(f"lce chunk={c} {name:13s} {ms * 1e3:9.1f} us  x{triton.cdiv(T, c)} chunks", flush=True)


def main(argv: list[str]) -> None:
    todo = argv or ["copy", "norm", "swiglu", "lce"]
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    for name in todo:
        {"copy": tune_copy, "norm": tune_norm, "swiglu": tune_swiglu, "lce": tune_lce}[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
