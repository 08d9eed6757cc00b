"""Where a training step's time goes, for several settings in one process: wall time per step, peak memory
against the prediction, and GPU kernel time bucketed by kind (torch.profiler).

    python -m gpufolio_projects.fsdp_mfu.profile_step --out OUTDIR/profile \\
        --settings single_compile@8 fsdp2_compile@8 fsdp2_compile+noreshard+fold_clip@16

The setting ``gemms`` times cuBLAS alone on the model's matmul shapes (forward, dX, dW; fused projections too).
Any other setting is ``variant[+option...]@B[!]``: a bench variant (bench.VARIANTS), options from OPTIONS, the per-rank
batch; a trailing ``!`` also profiles it (as do the first ``--profile-first`` settings): kernel buckets, and the
Chrome trace with ``--trace``. Each setting appends one JSON line to ``profile.jsonl`` as soon as it is measured
(a killed run keeps what it finished) and prints one line.

A setting is the bench's case (bench.build_step: the same trainer, inputs, FLOPs, memory prediction and metrics),
timed by the harness's host-clock timer; the buckets are kernel_buckets.py's, as in every bench record.

This is evidence for the README's "what leaves MFU on the table"; the recorded numbers come from the bench.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import time
from pathlib import Path

import torch
from gpufolio.timing import time_wall

from .bench import MFU, build_step, ranks_here
from .kernel_buckets import breakdown_metrics, busy_union_ms, kernel_buckets

# Setting options: name -> TrainConfig fields they set.
OPTIONS: dict[str, dict] = {
    "noreshard": {"reshard_after_forward": False},
    "fold_clip": {"fold_clip": True},
    "fused_proj": {"fused_proj": True},
    "flash": {"sdpa_backend": "flash"},
    "auto": {"sdpa_backend": "auto"},
    "fused_kernels": {"fused_kernels": True},
}


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


def measure(text: str, a, device, do_profile: bool) -> dict:
    """One setting: the bench's step for its variant, options and batch, timed, and profiled if asked."""
    variant, fields, B = parse_setting(text)
    on_gpu = device.type == "cuda"
    params = {"model": a.model, "B": B, "T": a.seq, "dtype": "bfloat16" if on_gpu else "float32", "sdpa": a.sdpa,
              "world_size": ranks_here()}
    if not on_gpu:  # a smoke test of this script: eager, as the bench's dry run
        fields = {**fields, "compile": False}
    t0 = time.perf_counter()
    step = build_step(variant, params, device, **fields)
    inputs = step.make_inputs(torch.Generator(device=step.device).manual_seed(0))
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    step.run(inputs)  # compiles
    sync()
    warm_s = time.perf_counter() - t0
    stats = time_wall(lambda: step.run(inputs), warmup_ms=0, rep_ms=0, warmup_min=max(a.warmup - 1, 1),
                      min_reps=a.steps, max_reps=a.steps, sync=sync)
    tcfg = step.trainer.cfg
    out = {"setting": text, "variant": variant, "options": fields, "model": a.model, "B": B, "T": a.seq,
           "sdpa": tcfg.sdpa_backend, "compile_warmup_s": warm_s, "step_ms": stats.median_ms,
           "timing": stats.as_dict()}
    if on_gpu:
        out["mfu"] = MFU.value(step.work, stats.median_ms * 1e-3)
    out.update({k: v[0] for k, v in step.metrics(stats.median_ms * 1e-3).items()})
    if do_profile:
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
        with profile(activities=acts) as prof:
            for _ in range(a.profile_steps):
                step.run(inputs)
            sync()
        kernels, top = kernel_buckets(prof, a.profile_steps)
        busy = busy_union_ms(prof, a.profile_steps)
        out.update(kernel_ms_per_step=kernels, busy_ms=busy, idle_ms=stats.median_ms - busy,
                   overlap_ms=sum(kernels.values()) - busy, top_kernels=top)
        # The bench record's shares, and what the GEMM and attention buckets achieve on the work the formula counts
        tokens = B * a.seq
        shares = breakdown_metrics(kernels, stats.median_ms, step.fpt.dense * tokens,
                                   step.fpt.attention_causal * tokens, busy)
        out.update({k: v[0] for k, v in shares.items()})
        if a.trace:
            trace = a.out / f"trace_{text.rstrip('!').replace('@', '_B')}.json"
            prof.export_chrome_trace(str(trace))
            with open(trace, "rb") as f_in, gzip.open(str(trace) + ".gz", "wb") as f_out:
                shutil.copyfileobj(f_in, f_out)
            trace.unlink()
    return out  # the step (its trainer and compiled graphs) goes with this frame


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
        # tensors bound as defaults: each lambda reads this iteration's, which the del below frees
        out["shapes"][name] = {"K_in": k, "N_out": n,
                               "fwd": tflops(lambda x=x, w=w: x @ w.t(), fl),  # x W^T
                               "dX": tflops(lambda dy=dy, w=w: dy @ w, fl),  # dY W
                               "dW": tflops(lambda dy=dy, x=x: dy.t() @ x, fl)}  # dY^T x: reduction over the tokens
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
