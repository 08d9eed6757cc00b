"""Where the time goes, on the GPU (diagnostics for the worklog; the site's numbers come from bench.py):

1. batch-1 decode, eager, one step's kernels by CUDA time (torch.profiler; launch gaps excluded);
2. ms per decode step with CUDA graphs at batch 1 / 64 / 256, Triton skinny GEMMs against cuBLAS at batch 1;
3. the offline workload's steps: prefill and decode wall time, tokens per step.

    python -m gpufolio_projects.inference_engine.profile_decode --out DIR     (writes DIR/ie_profile.txt)
"""
from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import torch

    from . import bench
    from .sampling_params import SamplingParams

    dev = torch.device("cuda")
    params = {"model": "llama3.2-1b", "dtype": "bfloat16"}
    eng = bench._engine(params, dev)
    runner = eng.model_runner
    kernels = runner.model.kernels
    out_path = os.path.join(args.out, "ie_profile.txt")
    os.makedirs(args.out, exist_ok=True)
    g = torch.Generator().manual_seed(0)

    def log(text: str) -> None:
        print(text, flush=True)
        with open(out_path, "a") as f:
            f.write(text + "\n")

    def prompts(b, n):
        return [torch.randint(0, 128256, (n,), generator=g).tolist() for _ in range(b)]

    def sp(n):
        return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)

    # step timing: wrap the runner so every step is synchronised and timed on its own
    steps: list[tuple[bool, int, int, float]] = []  # (prefill, seqs, tokens, seconds)
    orig_run = runner.run

    def timed_run(batch):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = orig_run(batch)
        torch.cuda.synchronize()
        steps.append((batch.is_prefill, len(batch.seqs), batch.total_tokens, time.perf_counter() - t0))
        return out

    runner.run = timed_run

    def decode_ms(b, n=65):
        steps.clear()
        eng.generate(prompts(b, 128), sp(n))
        dec = [(k, t) for p, _, k, t in steps if not p]
        pre = sum(t for p, _, _, t in steps if p)
        n_steps = sum(k for k, _ in dec) / b
        total = sum(t for _, t in dec)
        return total / n_steps * 1e3, pre * 1e3

    # 2. graphs
    for b in (1, 64, 256):
        decode_ms(b, 17)  # warm
        ms, pre = decode_ms(b)
        log(f"graphs B={b}: {ms:.3f} ms per decode step ({b / ms * 1e3:.0f} tok/s in decode); prefill of "
            f"{b}x128 tokens {pre:.1f} ms")
    for m in (0, 16):
        kernels.skinny_max_m = m
        runner.graphs.clear()
        runner._capture(1, True)
        decode_ms(1, 17)
        ms, pre = decode_ms(1)
        log(f"graphs B=1 skinny_max_m={m} ({'cuBLAS' if m == 0 else 'Triton skinny GEMM'}): {ms:.3f} ms/step; "
            f"bytes/step 2.47 GB -> {2.473e9 / (ms * 1e-3) / 1e9:.0f} GB/s")
    kernels.skinny_max_m = runner.config.skinny_max_m
    runner.graphs.clear()
    runner._capture(1, True)

    # 3. offline workload, step by step
    in_lens, out_lens = bench._workload(dict(num_requests=256, min_len=100, max_len=1024, output_cap=256, seed=0))
    ps = [torch.randint(0, 128256, (n,), generator=g).tolist() for n in in_lens]
    eng.block_manager.reset_prefix_cache()
    steps.clear()
    t0 = time.perf_counter()
    eng.generate(ps, [sp(n) for n in out_lens])
    wall = time.perf_counter() - t0
    pre = [s for s in steps if s[0]]
    dec = [s for s in steps if not s[0]]
    log(f"offline 256 req (cap 256): wall {wall:.2f} s; prefill {len(pre)} steps {sum(s[3] for s in pre):.2f} s "
        f"({sum(s[2] for s in pre)} tok); decode {len(dec)} chunks {sum(s[3] for s in dec):.2f} s "
        f"({sum(s[2] for s in dec)} tok); host outside steps {wall - sum(s[3] for s in steps):.2f} s")
    for s in pre[:3]:
        log(f"  prefill step: {s[1]} seqs, {s[2]} tokens, {s[3] * 1e3:.1f} ms")
    log(f"  prefill attention backend: {runner.model.prefill_attention.backend}")

    # 1. eager kernel table (last: profiler start-up is slow)
    runner.use_graphs = False
    eng.generate(prompts(1, 32), sp(3))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        eng.generate(prompts(1, 32), sp(5))  # 1 prefill + 4 decode steps
    runner.use_graphs = True
    log("eager batch 1, 1 prefill (32 tokens) + 4 decode steps, by CUDA time:")
    log(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30))


if __name__ == "__main__":
    main()
