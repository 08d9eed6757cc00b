"""Where a batch-1 decode step's time goes, measured inside the engine.

GPU time per step = CUDA events around replays of a batch-1 decode graph (the harness's timer in
``gpu_ms_per_step``; ``replay_ms``, back to back, for the lab's scripts): the host only queues the replays, so the
interval is the GPU's own time, launch gaps inside the graph included. Compared with the wall
time per generated token of the bench's ``generate`` call, the difference is host time (scheduling, input
copies, the sync after every k steps) plus the eager prefill. ``KERNEL_PATHS`` are the decode paths the engine
went through; a graph is captured for each into a pool of its own, so the engine's graphs stay valid.

bench.py stamps these next to decode_b1's tok/s; profile_decode.py prints them with a kernel table.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import torch
from gpufolio.timing import time_events

from .sampling_params import SamplingParams
from .sequence import Status

# name -> KernelChoice fields; "fused" is the engine's default at batch <= 16
KERNEL_PATHS = {
    "fused": dict(fused_decode=True, rope_in_attention=True, skinny_max_m=16, pdl=True),
    "fused_no_pdl": dict(fused_decode=True, rope_in_attention=True, skinny_max_m=16, pdl=False),
    "fused_rope_store": dict(fused_decode=True, rope_in_attention=False, skinny_max_m=16, pdl=True),
    "unfused_triton": dict(fused_decode=False, rope_in_attention=True, skinny_max_m=16),
    "unfused_cublas": dict(fused_decode=False, rope_in_attention=True, skinny_max_m=0),
}


@contextmanager
def kernel_path(engine, name: str):
    kernels = engine.model_runner.model.kernels
    saved = {k: getattr(kernels, k) for k in KERNEL_PATHS[name]}
    for k, v in KERNEL_PATHS[name].items():
        setattr(kernels, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(kernels, k, v)


def decode_state(engine, prompt_len: int = 32, seed: int = 0):
    """One sequence prefilled through the engine and loaded into the decode buffers at batch 1.
    Returns (sequence, prefill step in ms)."""
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, engine.config.model_config.vocab_size, (prompt_len,), generator=g).tolist()
    engine.block_manager.reset_prefix_cache()  # a fresh prefill each time, as the bench's generate calls get
    seq = engine.add_request(prompt, SamplingParams(temperature=0.0, max_tokens=1 << 20, ignore_eos=True))
    _sync(engine)
    t0 = time.perf_counter()
    engine.step()  # the prefill
    _sync(engine)
    prefill_ms = (time.perf_counter() - t0) * 1e3
    engine.model_runner._fill_decode_buffers([seq], 1)
    return seq, prefill_ms


def _sync(engine) -> None:
    if engine.model_runner.device.type == "cuda":
        torch.cuda.synchronize()


def release(engine, seq) -> None:
    engine.scheduler.running.remove(seq)
    engine.block_manager.free(seq)
    seq.status = Status.FINISHED


def replay_ms(graph: torch.cuda.CUDAGraph, n: int = 50) -> float:
    for _ in range(3):
        graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n


@torch.inference_mode()
def gpu_ms_per_step(engine, paths=tuple(KERNEL_PATHS), n: int = 50) -> dict[str, float]:
    """{path: GPU ms per batch-1 decode step} plus "prefill_ms" (one 32-token prefill step, wall). Timed by the
    harness (``gpufolio.timing``), as the bench that stamps these times everything else."""
    runner = engine.model_runner
    out: dict[str, float] = {}
    for name in paths:
        with kernel_path(engine, name):
            graph = runner.capture_decode_graph(1, True)  # a pool of its own
        seq, prefill_ms = decode_state(engine)
        # the first prefill may capture its graph: the fastest of the paths' prefills is the steady state
        out["prefill_ms"] = min(prefill_ms, out.get("prefill_ms", prefill_ms))
        try:  # the harness's timer: events around each replay, median; weights stream from HBM either way
            out[name] = time_events(graph.replay, warmup_ms=20, rep_ms=100, min_reps=n, flush_l2=False).median_ms
        finally:
            release(engine, seq)
        del graph
    return out
