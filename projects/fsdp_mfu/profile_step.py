"""Where a training step's time goes, for several settings in one process: wall time per step, peak memory
against the prediction, and GPU kernel time bucketed by kind (torch.profiler).

    python -m gpufolio_projects.fsdp_mfu.profile_step --out OUTDIR/profile \\
        --settings single_compile@8 fsdp2_compile@8 fsdp2_compile+noreshard+fold_clip@16

The setting ``gemms`` times cuBLAS alone on the model's matmul shapes (forward, dX, dW; fused projections too).
Any other setting is ``variant[+option...]@B[!]``: a bench variant (bench.VARIANTS), options from OPTIONS, the per-rank
batch; a trailing ``!`` also profiles it (as do the first ``--profile-first`` settings): kernel buckets, and the
Chrome trace with ``--trace``. Each setting appends one JSON line to ``profile.jsonl`` as soon as it is measured
(a killed run keeps what it finished) and prints one line.

Buckets, by kernel name (first match wins): attention (flash / cuDNN / FMHA), GEMM (cuBLAS / CUTLASS / nvjet),
Triton (Inductor's fused pointwise and reductions: norms, RoPE, SiLU·mul, residual adds, cross-entropy),
comm_copy (NCCL, FSDP2's copy-in / copy-out, casts, cat/split), optimizer (fused AdamW and the foreach kernels
of gradient clipping), other (eager embedding, ...). "idle" is the step's wall time not covered by a kernel:
launch gaps, host work, synchronisation.

This is evidence for the README's "what leaves MFU on the table"; the recorded numbers come from the bench.
"""
from __future__ import annotations

import argparse
import gc
import gzip
import json
import re
import shutil
import statistics
import time
from pathlib import Path

import torch

BUCKETS = [  # first match wins
    ("attention", re.compile(r"flash|fmha|cudnn|sdpa|attention", re.I)),
    ("gemm", re.compile(r"gemm|nvjet|cutlass|sm90_xmma|cublas|ampere_|sm80_", re.I)),
    ("triton", re.compile(r"^triton_", re.I)),  # before the rest: Inductor names kernels after the ops they fuse
    ("comm_copy", re.compile(r"nccl|all_gather|reduce_scatter|copy|memcpy|memset|cat|split|chunk", re.I)),
    ("optimizer", re.compile(r"adam|multi_tensor|foreach|lpnorm|norm_kernel", re.I)),
]

# Setting options: name -> TrainConfig fields they set.
OPTIONS: dict[str, dict] = {
    "noreshard": {"reshard_after_forward": False},
    "fold_clip": {"fold_clip": True},
    "fused_proj": {"fused_proj": True},
    "flash": {"sdpa_backend": "flash"},
    "auto": {"sdpa_backend": "auto"},
    "fused_kernels": {"fused_kernels": True},
}


def bucket(name: str) -> str:
    for label, rx in BUCKETS:
        if rx.search(name):
            return label
    return "other"


def parse_setting(text: str) -> tuple[str, dict, int]:
    """'fsdp2_compile+fold_clip@16' -> ('fsdp2_compile', {'fold_clip': True}, 16)."""
    head, _, batch = text.rstrip("!").partition("@")
    variant, *opts = head.split("+")
    fields: dict = {}
    for o in opts:
        if o not in OPTIONS:
            raise ValueError(f"unknown option {o!r} in {text!r}; known: {sorted(OPTIONS)}")
        fields.update(OPTIONS[o])
    return variant, fields, int(batch or 8)


def _is_kernel(e) -> bool:
    """A GPU kernel, memcpy or memset — not a user annotation (``Optimizer.step#AdamW.step``,
    ``FSDP::post_backward_reduce``: ranges that the profiler also draws on the GPU timeline, over kernels it
    already counts)."""
    return e.device_type == torch.autograd.DeviceType.CUDA and not getattr(e, "is_user_annotation", False) \
        and not e.key.startswith(ANNOTATION_PREFIXES)


ANNOTATION_PREFIXES = ("FSDP::", "Optimizer.", "ProfilerStep", "## ")


def busy_union_ms(prof, steps: int) -> float:
    """ms per step during which at least one kernel ran: kernels on other streams (FSDP2's copies, NCCL) can
    overlap compute, so the sum of kernel times can exceed the time the GPU was busy."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in prof.events() if _is_kernel(e))
    total, cur_start, cur_end = 0.0, None, None
    for start, end in spans:
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total / 1e3 / steps  # us -> ms


def kernel_buckets(prof, steps: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """ms per step by bucket, and the top kernels of each bucket."""
    kernels: dict[str, float] = {}
    names: dict[str, dict[str, float]] = {}
    for e in prof.key_averages():
        if not _is_kernel(e):
            continue
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
        if t <= 0:
            continue
        b = bucket(e.key)
        ms = t / 1e3 / steps
        kernels[b] = kernels.get(b, 0.0) + ms
        names.setdefault(b, {})[e.key[:140]] = names.get(b, {}).get(e.key[:140], 0.0) + ms
    top = {b: dict(sorted(v.items(), key=lambda kv: -kv[1])[:12]) for b, v in names.items()}
    return kernels, top


def profile_buckets(step, steps: int, sync) -> tuple[dict[str, float], dict[str, dict[str, float]], float]:
    """Run ``step()`` ``steps`` times under torch.profiler (CUDA kernels only): ms per step by bucket, the top
    kernels, and the busy (kernel-union) ms per step. Without CUDA the profiler records CPU ops only, and the
    buckets stay empty."""
    from torch.profiler import ProfilerActivity, profile

    act = ProfilerActivity.CUDA if torch.cuda.is_available() else ProfilerActivity.CPU
    with profile(activities=[act]) as prof:
        for _ in range(steps):
            step()
        sync()
    kernels, top = kernel_buckets(prof, steps)
    return kernels, top, busy_union_ms(prof, steps)


def breakdown_metrics(kernels: dict[str, float], step_ms: float, dense_flops: float,
                      attention_causal_flops: float, busy_ms: float | None = None) -> dict[str, tuple[float, str, bool]]:
    """The bench's extra metrics from a kernel breakdown: each bucket's share of the step; idle = the step's
    time with no kernel running, overlap = kernel time that ran beside other kernels (so the shares + idle -
    overlap = 100); what the GEMM and attention kernels achieve on the work the FLOPs formula counts for them."""
    out = {f"step_{b}_pct": (100 * kernels.get(b, 0.0) / step_ms, "% of step", False)
           for b in ("gemm", "attention", "triton", "optimizer", "comm_copy", "other")}
    total = sum(kernels.values())
    busy = total if busy_ms is None else busy_ms
    out["step_idle_pct"] = (100 * (step_ms - busy) / step_ms, "% of step", False)
    out["step_overlap_pct"] = (100 * (total - busy) / step_ms, "% of step", False)
    if kernels.get("gemm"):
        out["gemm_tflops"] = (dense_flops / (kernels["gemm"] * 1e-3) / 1e12, "TFLOP/s", True)
    if kernels.get("attention"):
        out["attention_causal_tflops"] = (attention_causal_flops / (kernels["attention"] * 1e-3) / 1e12,
                                          "TFLOP/s", True)
    return out


def measure(text: str, a, device, do_profile: bool) -> dict:
    from .bench import VARIANTS
    from .configs import get_config
    from .flops import flops_per_token, peak_flops
    from .memory import predict
    from .trainer import TrainConfig, Trainer

    variant, fields, B = parse_setting(text)
    spec = VARIANTS[variant]
    cfg = get_config(a.model)
    torch._dynamo.reset()
    gc.collect()
    on_gpu = device.type == "cuda"
    if on_gpu:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    tcfg = TrainConfig(**{"mode": spec.mode, "compile": spec.compile and on_gpu, "ac": spec.ac,
                          "reshard_after_forward": spec.reshard_after_forward, "sdpa_backend": a.sdpa,
                          "dtype": "bfloat16" if on_gpu else "float32", **fields})
    t0 = time.perf_counter()
    tr = Trainer(cfg, tcfg, device)
    if tcfg.mode != "single":
        device = tr.dist.device
    seq = torch.randint(0, cfg.vocab_size, (B, a.seq + 1), device=device)
    x, y = seq[:, :-1], seq[:, 1:]
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    for _ in range(a.warmup):  # compile + warm-up
        tr.step(x, y)
    sync()
    warm_s = time.perf_counter() - t0
    times = []
    for _ in range(a.steps):  # the bench's method: host clock, synchronised per step
        t = time.perf_counter()
        tr.step(x, y)
        sync()
        times.append(time.perf_counter() - t)
    step_ms = 1e3 * statistics.median(times)
    fpt = flops_per_token(cfg, a.seq)
    tokens = B * a.seq
    out = {"setting": text, "variant": variant, "options": fields, "model": a.model, "B": B, "T": a.seq,
           "sdpa": tcfg.sdpa_backend, "compile_warmup_s": warm_s, "step_ms": step_ms,
           "step_ms_all": [1e3 * t for t in times], "tok_s": tokens / step_ms * 1e3}
    mem = predict(cfg, B, a.seq, mode=spec.mode, compiled=tcfg.compile, ac=spec.ac, dtype=tcfg.dtype,
                  reshard_after_forward=tcfg.reshard_after_forward, fused_proj=tcfg.fused_proj)
    out["mem_pred_gib"] = mem.peak / 2**30
    if on_gpu:
        peak = peak_flops(torch.cuda.get_device_name(device))
        out["mfu"] = 100 * fpt.model * out["tok_s"] / peak
        out["mfu_causal"] = 100 * fpt.model_causal * out["tok_s"] / peak
        out["mem_peak_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        out["mem_pred_err"] = 100 * (out["mem_pred_gib"] / out["mem_peak_gib"] - 1)
    if do_profile:
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
        with profile(activities=acts) as prof:
            for _ in range(a.profile_steps):
                tr.step(x, y)
            sync()
        kernels, top = kernel_buckets(prof, a.profile_steps)
        busy = busy_union_ms(prof, a.profile_steps)
        out.update(kernel_ms_per_step=kernels, busy_ms=busy, idle_ms=step_ms - busy,
                   overlap_ms=sum(kernels.values()) - busy, top_kernels=top)
        # What the busy buckets achieve on the work the formula counts (causal: the half a kernel does).
        if kernels.get("gemm"):
            out["gemm_tflops"] = fpt.dense * tokens / (kernels["gemm"] * 1e-3) / 1e12
        if kernels.get("attention"):
            out["attention_causal_tflops"] = fpt.attention_causal * tokens / (kernels["attention"] * 1e-3) / 1e12
        if a.trace:
            trace = a.out / f"trace_{text.rstrip('!').replace('@', '_B')}.json"
            prof.export_chrome_trace(str(trace))
            with open(trace, "rb") as f_in, gzip.open(str(trace) + ".gz", "wb") as f_out:
                shutil.copyfileobj(f_in, f_out)
            trace.unlink()
    del tr
    return out


def gemm_shapes(a, device) -> dict:
    """cuBLAS alone on this model's matmul shapes (bf16, M = B·T tokens), forward, dX and dW — what the GEMM
    bucket of a step would take at isolated-kernel speed — plus the fused projections' shapes and 8192³."""
    from gpufolio.timing import time_events

    from .configs import get_config

    cfg = get_config(a.model)
    M = a.gemm_tokens
    d, kv, f, V = cfg.dim, cfg.kv_dim, cfg.ffn_dim, cfg.vocab_size
    linears = {"wq/wo": (d, d), "wk/wv": (d, kv), "w1/w3": (d, f), "w2": (f, d), "head": (d, V),
               "wqkv (fused)": (d, d + 2 * kv), "w13 (fused)": (d, 2 * f)}
    bf = dict(device=device, dtype=torch.bfloat16)
    out: dict = {"setting": "gemms", "tokens": M, "shapes": {}}

    def tflops(fn, flops: float) -> float:
        t = time_events(fn, warmup_ms=25, rep_ms=60, min_reps=5, flush_l2=False)
        return flops / (t.median_ms * 1e-3) / 1e12

    for name, (k, n) in linears.items():
        x, w, dy = torch.randn(M, k, **bf), torch.randn(n, k, **bf), torch.randn(M, n, **bf)
        fl = 2.0 * M * k * n
        out["shapes"][name] = {"K_in": k, "N_out": n,
                               "fwd": tflops(lambda: x @ w.t(), fl),  # x W^T
                               "dX": tflops(lambda: dy @ w, fl),  # dY W
                               "dW": tflops(lambda: dy.t() @ x, fl)}  # dY^T x: reduction over the tokens
        del x, w, dy
    n8 = 8192 if device.type == "cuda" else 64  # (CPU: a smoke test)
    a8 = torch.randn(n8, n8, **bf)
    out["cublas_8192"] = tflops(lambda: a8 @ a8, 2.0 * n8**3)
    # The step's matmuls (split projections) at these speeds: time per step, and the TFLOP/s it implies.
    per_layer = [("wq/wo", 2), ("wk/wv", 2), ("w1/w3", 2), ("w2", 1)]
    ms = 0.0
    for name, count in per_layer + [("head", 1 / cfg.n_layers)]:
        s = out["shapes"][name]
        fl = 2.0 * M * s["K_in"] * s["N_out"]
        ms += cfg.n_layers * count * sum(fl / (s[k] * 1e12) * 1e3 for k in ("fwd", "dX", "dW"))
    out["model_gemm_ms_at_isolated_speed"] = ms
    return out


def summary_line(r: dict) -> str:
    if r.get("setting") == "gemms":
        if "shapes" not in r:
            return f"gemms: {r}"
        rows = "; ".join(f"{k} {v['fwd']:.0f}/{v['dX']:.0f}/{v['dW']:.0f}" for k, v in r["shapes"].items())
        return (f"gemms (TFLOP/s fwd/dX/dW at M={r['tokens']}): {rows}; 8192^3 {r['cublas_8192']:.0f}; "
                f"the step's matmuls at these speeds: {r['model_gemm_ms_at_isolated_speed']:.1f} ms")
    s = (f"{r['setting']}: step {r['step_ms']:.1f} ms, {r['tok_s']:,.0f} tok/s"
         + (f", MFU {r['mfu']:.1f}% (causal {r['mfu_causal']:.1f}%), mem {r['mem_peak_gib']:.2f} GiB "
            f"(pred {r['mem_pred_gib']:.2f}, {r['mem_pred_err']:+.1f}%)" if "mfu" in r else "")
         + f", warm-up {r['compile_warmup_s']:.0f} s")
    if "kernel_ms_per_step" in r:
        s += "\n  kernels (ms/step): " + ", ".join(
            f"{k} {v:.1f}" for k, v in sorted(r["kernel_ms_per_step"].items(), key=lambda kv: -kv[1]))
        s += f", idle {r['idle_ms']:.1f}, overlapping {r['overlap_ms']:.1f}"
        if "gemm_tflops" in r:
            s += f"; GEMM {r['gemm_tflops']:.0f} TFLOP/s"
        if "attention_causal_tflops" in r:
            s += f", attention {r['attention_causal_tflops']:.0f} TFLOP/s (causal work)"
    return s


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--settings", nargs="+", default=["single_compile@8", "fsdp2_compile@8"])
    p.add_argument("--model", default="llama_1b")
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--sdpa", default="cudnn")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--profile-steps", type=int, default=2)
    p.add_argument("--profile-first", type=int, default=2, help="profile the first N settings")
    p.add_argument("--trace", action="store_true", help="also write each profiled setting's Chrome trace")
    p.add_argument("--gemm-tokens", type=int, default=16384, help="M of the 'gemms' setting (B·T)")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # CPU: a smoke test of this script
    for i, text in enumerate(a.settings):
        try:
            if text == "gemms":
                r = gemm_shapes(a, device) if device.type == "cuda" else {"setting": "gemms", "skipped": "no GPU"}
            else:
                r = measure(text, a, device, do_profile=i < a.profile_first or text.endswith("!"))
        except Exception as e:  # noqa: BLE001 - one failing setting must not cost the others their numbers
            r = {"setting": text, "error": f"{type(e).__name__}: {e}"[:2000]}
            print(f"{text}: FAILED {r['error'][:500]}", flush=True)
        else:
            try:
                print(summary_line(r), flush=True)
            except Exception as e:  # noqa: BLE001 - the JSON line below is the result; the print is a courtesy
                print(f"{text}: (summary failed: {e!r})", flush=True)
        with open(a.out / "profile.jsonl", "a") as f:
            f.write(json.dumps(r, default=str) + "\n")
        if device.type == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
