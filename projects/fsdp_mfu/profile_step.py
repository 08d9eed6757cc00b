"""Where a training step's time goes: a torch.profiler trace of a few steps, GPU kernel time bucketed by kind.

    python -m gpufolio_projects.fsdp_mfu.profile_step --variant fsdp2_compile --out OUTDIR/profile

Writes ``profile.json`` (per-bucket GPU time per step, the share of the step, idle time) and the Chrome trace
``trace.json.gz``. Buckets, by kernel name: GEMM (cuBLAS / CUTLASS / nvjet), attention (flash / cuDNN / FMHA),
Triton (Inductor's fused pointwise and reductions: norms, RoPE, SiLU·mul, cross-entropy), optimizer (fused AdamW,
the norm for clipping), communication and copies (NCCL, FSDP2's copy-in/copy-out, casts), other. "idle" is the
step's wall time not covered by any kernel: launch gaps, host work, synchronisation.

This is evidence for the README's "what leaves MFU on the table"; the numbers themselves come from the bench.
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import time
from pathlib import Path

import torch

BUCKETS = [  # first match wins
    ("attention", re.compile(r"flash|fmha|cudnn|sdpa|attention", re.I)),
    ("gemm", re.compile(r"gemm|nvjet|cutlass|sm90_xmma|cublas|ampere_|sm80_", re.I)),
    ("triton", re.compile(r"^triton_", re.I)),  # before the rest: Inductor names kernels after the ops they fuse
    ("optimizer", re.compile(r"adam|multi_tensor|foreach|lpnorm|norm_kernel", re.I)),
    ("comm_copy", re.compile(r"nccl|all_gather|reduce_scatter|copy|memcpy|memset|cat|split|chunk", re.I)),
]


def bucket(name: str) -> str:
    for label, rx in BUCKETS:
        if rx.search(name):
            return label
    return "other"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", default="fsdp2_compile")
    p.add_argument("--model", default="llama_1b")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--sdpa", default="auto")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    from torch.profiler import ProfilerActivity, profile

    from .bench import VARIANTS
    from .configs import get_config
    from .trainer import TrainConfig, Trainer

    spec = VARIANTS[a.variant]
    cfg = get_config(a.model)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # CPU: a smoke test of this script
    tr = Trainer(cfg, TrainConfig(mode=spec.mode, compile=spec.compile and device.type == "cuda", ac=spec.ac,
                                  reshard_after_forward=spec.reshard_after_forward, sdpa_backend=a.sdpa),
                 device)
    seq = torch.randint(0, cfg.vocab_size, (a.batch, a.seq + 1), device=device)
    x, y = seq[:, :-1], seq[:, 1:]
    for _ in range(4):  # compile + warm-up
        tr.step(x, y)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(a.steps):
            tr.step(x, y)
        sync()
        wall = (time.perf_counter() - t0) / a.steps
    a.out.mkdir(parents=True, exist_ok=True)
    kernels: dict[str, float] = {}
    names: dict[str, dict[str, float]] = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
        if t <= 0 or e.key.startswith(("ProfilerStep", "cudaDeviceSynchronize")) or e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        b = bucket(e.key)
        kernels[b] = kernels.get(b, 0.0) + t / 1e3 / a.steps  # ms per step
        names.setdefault(b, {})[e.key[:120]] = names.get(b, {}).get(e.key[:120], 0.0) + t / 1e3 / a.steps
    busy = sum(kernels.values())
    out = {"variant": a.variant, "model": a.model, "B": a.batch, "T": a.seq, "sdpa": a.sdpa,
           "step_wall_ms": wall * 1e3, "kernel_ms_per_step": kernels, "busy_ms": busy,
           "idle_ms": wall * 1e3 - busy,
           "top_kernels": {b: dict(sorted(v.items(), key=lambda kv: -kv[1])[:8]) for b, v in names.items()}}
    (a.out / f"profile_{a.variant}.json").write_text(json.dumps(out, indent=1) + "\n")
    trace = a.out / f"trace_{a.variant}.json"
    prof.export_chrome_trace(str(trace))
    with open(trace, "rb") as f_in, gzip.open(str(trace) + ".gz", "wb") as f_out:
        shutil.copyfileobj(f_in, f_out)
    trace.unlink()
    print(f"{a.variant}: step {wall * 1e3:.1f} ms; " + ", ".join(f"{k} {v:.1f}" for k, v in
                                                             sorted(kernels.items(), key=lambda kv: -kv[1]))
          + f", idle {wall * 1e3 - busy:.1f} (ms/step)")


if __name__ == "__main__":
    main()
