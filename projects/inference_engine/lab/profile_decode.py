"""Where the decode time goes, on the GPU (diagnostics for the README's analysis; its numbers come from bench.py):

    offline  the bench's quick offline workload step by step at 8 and 16 decode steps per chunk: prefill
             steps, decode chunks, host time
    step     B=1: GPU ms per decode step (decode_probe: CUDA events around back-to-back graph replays) for each
             decode path in decode_probe.KERNEL_PATHS; then wall ms per
             token of the bench's generate call, split into prefill, decode chunks and host time between them
    kernels  B=1: torch.profiler over graph replays of each path: kernels per step, summed kernel time
    kernels_b256  the offline bench's full batch (256 × 512-token prompts): GPU ms per step, kernel table
    gemv     the launch-config sweep of tune_gemv.py: each decode weight shape at M = 1, every candidate
             config against cuBLAS doing the same work unfused; writes DIR/gemv_configs.json and installs it for
             the stages after it (run it first)
    prefill  one 32-token prefill (generate with max_tokens=1): wall times, then torch.profiler's CPU and CUDA
             tables, to see where its milliseconds go

    python -m gpufolio_projects.inference_engine.lab.profile_decode --out DIR [--stages gemv,step,prefill,kernels,offline]
(appends to DIR/ie_profile.txt)
"""
from __future__ import annotations

import argparse
import os
import time
from contextlib import contextmanager


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--stages", default="gemv,step,prefill,kernels,offline")
    args = ap.parse_args()
    import torch

    from .. import bench

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
    prof = _Profiler(eng, log, args.out)
    for stage in args.stages.split(","):
        t0 = time.perf_counter()
        try:
            getattr(prof, stage)()
        except Exception:  # noqa: BLE001 — one failing stage must not cost the others
            import traceback

            log(traceback.format_exc())
        log(f"[stage {stage}: {time.perf_counter() - t0:.1f}s]")


class _Profiler:
    def __init__(self, eng, log, out_dir):
        import torch

        self.torch, self.eng, self.log, self.out_dir = torch, eng, log, out_dir
        self.runner = eng.model_runner
        self.g = torch.Generator().manual_seed(0)
        self.weight_bytes = 2 * eng.config.model_config.num_params()

    def _prompt(self, n):
        return self.torch.randint(0, 128256, (n,), generator=self.g).tolist()

    def _sp(self, n):
        from ..sampling_params import SamplingParams

        return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)

    # -- stages --------------------------------------------------------------------------------------------
    def step(self) -> None:
        torch, log = self.torch, self.log
        from ..decode_probe import gpu_ms_per_step

        for path, ms in gpu_ms_per_step(self.eng).items():
            log(f"B=1 {path:17s}: {ms:.3f} ms" + ("" if path == "prefill_ms" else
                f" GPU per decode step = {self.weight_bytes / ms / 1e6:.0f} GB/s of weights"))
        # the bench's call: generate(32-token prompt, 128 new tokens), with the steps timed one by one
        for k in (8, 32):
            self._set_steps(k)
            prompt = self._prompt(32)
            self.eng.generate([prompt], self._sp(128))  # warm
            self.eng.block_manager.reset_prefix_cache()  # as the bench does: no hit on its own earlier call
            t0 = time.perf_counter()
            self.eng.generate([prompt], self._sp(128))
            torch.cuda.synchronize()
            plain = time.perf_counter() - t0
            self.eng.block_manager.reset_prefix_cache()
            with self._timed_steps() as steps:
                t0 = time.perf_counter()
                self.eng.generate([prompt], self._sp(128))
                wall = time.perf_counter() - t0
            pre = sum(s[3] for s in steps if s[0])
            dec = sum(s[3] for s in steps if not s[0])
            n_chunks = sum(1 for s in steps if not s[0])
            log(f"generate 32+128, k={k}: wall {plain * 1e3:.1f} ms = {plain / 128 * 1e3:.3f} ms/token "
                f"({128 / plain:.0f} tok/s); instrumented: prefill {pre * 1e3:.2f} ms, {n_chunks} decode chunks "
                f"{dec * 1e3:.1f} ms ({dec / 127 * 1e3:.3f} ms/token incl. per-chunk host prep), engine host "
                f"outside run() {(wall - pre - dec) * 1e3:.1f} ms")
        self._set_steps(8)

    @contextmanager
    def _timed_steps(self):
        """Within the block, every ModelRunner.run is synchronised and timed: yields the list it fills with
        (is_prefill, sequences, tokens, seconds)."""
        torch, runner, steps = self.torch, self.runner, []
        orig = runner.run

        def timed(batch):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = orig(batch)
            torch.cuda.synchronize()
            steps.append((batch.is_prefill, len(batch.seqs), batch.total_tokens, time.perf_counter() - t0))
            return out

        runner.run = timed
        try:
            yield steps
        finally:
            runner.run = orig

    def _set_steps(self, k: int) -> None:
        self.eng.scheduler.config.num_decode_steps = k
        r = self.runner
        if r.step_tokens.shape[0] < k:
            r.step_tokens = self.torch.zeros(k, r.max_batch, dtype=self.torch.int64, device=r.device)

    def kernels(self) -> None:
        torch, log = self.torch, self.log
        from torch.profiler import ProfilerActivity, profile

        from ..decode_probe import decode_state, kernel_path, release

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

    def kernels_b256(self) -> None:
        """The offline bench's full decode batch: 256 sequences of 512 prompt tokens, one graph replay profiled."""
        torch, log = self.torch, self.log
        from torch.profiler import ProfilerActivity, profile

        from ..decode_probe import release, replay_ms

        eng, B = self.eng, 256
        eng.block_manager.reset_prefix_cache()
        seqs = [eng.add_request(self._prompt(512), self._sp(1 << 20)) for _ in range(B)]
        while any(s.is_prefilling for s in seqs):
            eng.step()
        self.runner._fill_decode_buffers(seqs, B)
        graph = self.runner.capture_decode_graph(B, True)
        self.runner._fill_decode_buffers(seqs, B)
        log(f"B={B} ctx~513: {replay_ms(graph, 5):.3f} ms GPU per decode step (graph replays)")
        with torch.inference_mode(), profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(3):
                self.runner._decode_body(B, True)
            torch.cuda.synchronize()
        log(p.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=60))
        for s in seqs:
            release(eng, s)
        del graph

    def gemv(self) -> None:
        from .tune_gemv import sweep

        sweep(self.torch, self.runner.model, self.log, os.path.join(self.out_dir, "gemv_configs.json"))
        # the engine's graphs hold the old configs' launches: drop them all and let run_decode capture again,
        # into a fresh pool (capturing into a pool whose graphs were freed trips the caching allocator)
        self.runner.graphs.clear()
        self.runner.graph_pool = self.torch.cuda.graph_pool_handle()

    def prefill(self) -> None:
        torch, log = self.torch, self.log
        from torch.profiler import ProfilerActivity, profile

        prompt = self._prompt(32)

        def once():
            self.eng.block_manager.reset_prefix_cache()
            self.eng.generate([prompt], self._sp(1))

        once()
        walls = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            once()
            torch.cuda.synchronize()
            walls.append((time.perf_counter() - t0) * 1e3)
        with self._timed_steps() as steps:
            once()
        log(f"prefill 32 tokens via generate(max_tokens=1): wall {sorted(walls)[2]:.2f} ms median of 5 "
            f"({', '.join(f'{w:.1f}' for w in walls)}); ModelRunner.run alone {steps[0][3] * 1e3:.2f} ms")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            once()
            torch.cuda.synchronize()
        log(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=70))
        log(p.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=70))

    def offline(self) -> None:
        """The bench's quick offline workload (256 requests, outputs capped at 512), step by step, at 8 and 16
        decode steps per chunk: where the wall time goes (prefill, decode chunks, host between them)."""
        log = self.log
        from .. import bench

        params = bench._offline_configs("quick")[0]
        in_lens, out_lens = bench._workload(params)
        ps = [self._prompt(n) for n in in_lens]
        pa = self.runner.model.prefill_attention
        self.eng.generate(ps[:48], [self._sp(n) for n in out_lens[:48]])  # compiles the prefill kernels
        for k in (8, 16):
            self._set_steps(k)
            self.eng.block_manager.reset_prefix_cache()
            with self._timed_steps() as steps:
                t0 = time.perf_counter()
                self.eng.generate(ps, [self._sp(n) for n in out_lens])
                wall = time.perf_counter() - t0
            pre = [s for s in steps if s[0]]
            dec = [s for s in steps if not s[0]]
            log(f"offline {len(ps)} req (cap {params['output_cap']}), k={k}, prefill attention {pa.backend}: "
                f"wall {wall:.2f} s = {sum(out_lens) / wall:.0f} tok/s; prefill {len(pre)} steps "
                f"{sum(s[3] for s in pre):.2f} s ({sum(s[2] for s in pre)} tok); decode {len(dec)} chunks "
                f"{sum(s[3] for s in dec):.2f} s ({sum(s[2] for s in dec)} tok); host outside run() "
                f"{wall - sum(s[3] for s in steps):.2f} s")
            for s in dec[:: max(1, len(dec) // 6)]:
                log(f"  decode chunk: {s[1]} seqs, {s[2]} tokens, {s[3] * 1e3:.1f} ms")
        self._set_steps(8)

if __name__ == "__main__":
    main()
