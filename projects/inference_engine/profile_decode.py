"""Where the decode time goes, on the GPU (diagnostics for the README's analysis; its numbers come from bench.py):

    offline  the offline workload (cap 256) step by step: prefill steps, decode chunks, host time; prefill
             attention as one varlen launch per layer against per sequence (first: it needs every graph bucket)
    step     B=1: GPU ms per decode step (decode_probe: CUDA events around back-to-back graph replays) for each
             decode path in decode_probe.KERNEL_PATHS; then wall ms per
             token of the bench's generate call, split into prefill, decode chunks and host time between them
    kernels  B=1: torch.profiler over graph replays of each path: kernels per step, summed kernel time
    gemv     each decode weight shape at M=1: fused GEMV vs cuBLAS vs the skinny GEMM (GB/s, L2 defeated by
             cycling through the 16 layers' weights), plus a few tile configs of the fused GEMV

    python -m gpufolio_projects.inference_engine.profile_decode --out DIR [--stages offline,step,kernels,gemv]
(appends to DIR/ie_profile.txt)
"""
from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--stages", default="offline,step,kernels,gemv")
    args = ap.parse_args()
    import torch

    from . import bench

    os.makedirs(args.out, exist_ok=True)
    out_path = os.path.join(args.out, "ie_profile.txt")

    def log(text: str) -> None:
        print(text, flush=True)
        with open(out_path, "a") as f:
            f.write(text + "\n")

    dev = torch.device("cuda")
    t0 = time.perf_counter()
    eng = bench._engine({"model": "llama3.2-1b", "dtype": "bfloat16"}, dev)
    log(f"engine ready in {time.perf_counter() - t0:.1f}s")
    prof = _Profiler(eng, log)
    for stage in args.stages.split(","):
        t0 = time.perf_counter()
        try:
            getattr(prof, stage)()
        except Exception:  # noqa: BLE001 — one failing stage must not cost the others
            import traceback

            log(traceback.format_exc())
        log(f"[stage {stage}: {time.perf_counter() - t0:.1f}s]")


class _Profiler:
    def __init__(self, eng, log):
        import torch

        self.torch, self.eng, self.log = torch, eng, log
        self.runner = eng.model_runner
        self.g = torch.Generator().manual_seed(0)
        self.weight_bytes = 2 * eng.config.model_config.num_params()

    def _prompt(self, n):
        return self.torch.randint(0, 128256, (n,), generator=self.g).tolist()

    def _sp(self, n):
        from .sampling_params import SamplingParams

        return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)

    # -- stages --------------------------------------------------------------------------------------------
    def step(self) -> None:
        torch, log = self.torch, self.log
        from .decode_probe import gpu_ms_per_step

        for path, ms in gpu_ms_per_step(self.eng).items():
            log(f"B=1 {path:17s}: {ms:.3f} ms" + ("" if path == "prefill_ms" else
                f" GPU per decode step = {self.weight_bytes / ms / 1e6:.0f} GB/s of weights"))
        # the bench's call: generate(32-token prompt, 128 new tokens), with the steps timed one by one
        steps: list[tuple[bool, int, float]] = []
        orig = self.runner.run

        def timed(batch):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = orig(batch)
            torch.cuda.synchronize()
            steps.append((batch.is_prefill, batch.num_steps, time.perf_counter() - t0))
            return out

        for k in (8, 32):
            self._set_steps(k)
            prompt = self._prompt(32)
            self.eng.generate([prompt], self._sp(128))  # warm
            t0 = time.perf_counter()
            self.eng.generate([prompt], self._sp(128))
            torch.cuda.synchronize()
            plain = time.perf_counter() - t0
            self.runner.run = timed
            steps.clear()
            t0 = time.perf_counter()
            self.eng.generate([prompt], self._sp(128))
            wall = time.perf_counter() - t0
            self.runner.run = orig
            pre = sum(t for p, _, t in steps if p)
            dec = sum(t for p, _, t in steps if not p)
            n_chunks = sum(1 for p, _, _ in steps if not p)
            log(f"generate 32+128, k={k}: wall {plain * 1e3:.1f} ms = {plain / 128 * 1e3:.3f} ms/token "
                f"({128 / plain:.0f} tok/s); instrumented: prefill {pre * 1e3:.2f} ms, {n_chunks} decode chunks "
                f"{dec * 1e3:.1f} ms ({dec / 127 * 1e3:.3f} ms/token incl. per-chunk host prep), engine host "
                f"outside run() {(wall - pre - dec) * 1e3:.1f} ms")
        self._set_steps(8)

    def _set_steps(self, k: int) -> None:
        self.eng.scheduler.config.num_decode_steps = k
        r = self.runner
        if r.step_tokens.shape[0] < k:
            r.step_tokens = self.torch.zeros(k, r.max_batch, dtype=self.torch.int64, device=r.device)

    def kernels(self) -> None:
        torch, log = self.torch, self.log
        from torch.profiler import ProfilerActivity, profile

        from .decode_probe import decode_state, kernel_path, release

        for path in ("fused", "unfused_triton"):
            with kernel_path(self.eng, path):
                graph = self.runner.capture_decode_graph(1, True)
                seq, _ = decode_state(self.eng)
                graph.replay()
                torch.cuda.synchronize()
                n = 10
                for how in ("graph", "eager"):  # eager too, in case the profiler does not see inside graphs
                    with torch.inference_mode(), profile(activities=[ProfilerActivity.CUDA]) as p:
                        for _ in range(n):
                            graph.replay() if how == "graph" else self.runner._decode_body(1, True)
                        torch.cuda.synchronize()
                    events = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                    total_us = sum(e.time_range.elapsed_us() for e in events)
                    log(f"B=1 {path} ({how}): {len(events) / n:.0f} kernels per step, summed kernel time "
                        f"{total_us / n / 1e3:.3f} ms per step")
                    log(p.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=60))
                release(self.eng, seq)
            del graph

    def gemv(self) -> None:
        torch, log = self.torch, self.log
        import torch.nn.functional as F

        from .triton_gemv import fused_linear
        from .triton_ops import skinny_linear

        model = self.runner.model
        layers = model.layers
        shapes = {
            "qkv (norm)": ([ly.self_attn.qkv_proj.weight for ly in layers], dict(norm=True)),
            "o (residual)": ([ly.self_attn.o_proj.weight for ly in layers], dict(residual=True)),
            "gate_up (norm+silu)": ([ly.mlp.gate_up_proj.weight for ly in layers], dict(norm=True, silu=True)),
            "down (residual)": ([ly.mlp.down_proj.weight for ly in layers], dict(residual=True)),
            "lm_head (norm, fp32)": ([model.lm_head.weight], dict(norm=True, fp32=True)),
        }
        configs = {"default": None, "reduce": dict(USE_DOT=False, BLOCK_N=16, BLOCK_K=256),
                   "bn32": dict(BLOCK_N=32)}

        def timeit(fn, ws, reps=3):
            for w in ws:
                fn(w)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(reps):
                for w in ws:
                    fn(w)
            b.record()
            torch.cuda.synchronize()
            return a.elapsed_time(b) * 1e3 / (reps * len(ws))  # µs per call

        nw = model.norm.weight
        for name, (ws, mode) in shapes.items():
            N, K = ws[0].shape
            x = torch.randn(1, K, device="cuda", dtype=ws[0].dtype)
            n_out = N // 2 if mode.get("silu") else N
            res = torch.randn(1, n_out, device="cuda", dtype=ws[0].dtype)
            mb = ws[0].numel() * 2 / 1e6
            row = []
            for cname, cfg in configs.items():
                def f(w, cfg=cfg):
                    return fused_linear(x, w, norm_weight=nw if mode.get("norm") else None,
                                        residual=res if mode.get("residual") else None, silu_mul=mode.get("silu", False),
                                        out_dtype=torch.float32 if mode.get("fp32") else None, config=cfg)
                try:
                    us = timeit(f, ws)
                    row.append(f"{cname} {us:.1f}us {mb / us * 1e3:.0f}GB/s")
                except Exception as e:  # noqa: BLE001 — a config that does not compile is a result too
                    row.append(f"{cname} failed ({type(e).__name__})")
            us_cublas = timeit(lambda w: F.linear(x, w), ws)
            us_skinny = timeit(lambda w: skinny_linear(x, w), ws)
            log(f"{name:22s} [{N}x{K}, {mb:.1f} MB]: cuBLAS {us_cublas:.1f}us {mb / us_cublas * 1e3:.0f}GB/s; "
                f"skinny {us_skinny:.1f}us {mb / us_skinny * 1e3:.0f}GB/s; fused: " + "; ".join(row))

    def offline(self) -> None:
        torch, log = self.torch, self.log
        from . import bench

        in_lens, out_lens = bench._workload(dict(num_requests=256, min_len=100, max_len=1024, output_cap=256,
                                                 seed=0))
        ps = [self._prompt(n) for n in in_lens]
        steps = []
        orig = self.runner.run

        def timed(batch):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = orig(batch)
            torch.cuda.synchronize()
            steps.append((batch.is_prefill, len(batch.seqs), batch.total_tokens, time.perf_counter() - t0))
            return out

        pa = self.runner.model.prefill_attention
        self.eng.generate(ps[:48], [self._sp(n) for n in out_lens[:48]])  # compiles the prefill kernels
        for varlen in (True, False):
            pa.varlen = varlen
            steps.clear()
            self.eng.block_manager.reset_prefix_cache()
            self.runner.run = timed
            t0 = time.perf_counter()
            self.eng.generate(ps, [self._sp(n) for n in out_lens])
            wall = time.perf_counter() - t0
            self.runner.run = orig
            pre = [s for s in steps if s[0]]
            dec = [s for s in steps if not s[0]]
            log(f"offline 256 req (cap 256), prefill attention {pa.backend}: wall {wall:.2f} s; prefill {len(pre)} "
                f"steps {sum(s[3] for s in pre):.2f} s ({sum(s[2] for s in pre)} tok); decode {len(dec)} chunks "
                f"{sum(s[3] for s in dec):.2f} s ({sum(s[2] for s in dec)} tok); host outside run() "
                f"{wall - sum(s[3] for s in steps):.2f} s; varlen error: {pa.varlen_error}")
            for s in pre[:2]:
                log(f"  prefill step: {s[1]} seqs, {s[2]} tokens, {s[3] * 1e3:.1f} ms")
            for s in dec[:: max(1, len(dec) // 5)]:
                log(f"  decode chunk: {s[1]} seqs, {s[2]} tokens, {s[3] * 1e3:.1f} ms")
        pa.varlen = True


if __name__ == "__main__":
    main()
