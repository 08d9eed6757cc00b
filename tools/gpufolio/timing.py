"""Timing: CUDA events per rep for kernels, host clock with device sync for end-to-end work.

Both return the same statistics (median with p20/p80/min/max/n). The rep count comes from a short estimate:
``rep_ms`` of work, but never fewer than ``min_reps`` (a 200 ms kernel is still timed 10 times).
Between event-timed reps the L2 is flushed by writing a buffer larger than it (the H200's L2 is 60 MB), so
inputs are not served from cache; the flush itself sits outside the timed region.

``prepare(i, n)`` runs before timed rep ``i`` of ``n``, outside the timed region: the worker refreshes the
inputs in place there (new values, same storage) and readies the check of the last rep.

With events timing, a device-side wait (``torch.cuda._sleep``) sits between the flush and each rep's start
event, so the whole call is queued before the GPU reaches it. Otherwise the GPU idles after the start event
while the host is still queueing, and the host's cost is timed as the kernel's: a Python launcher that builds
tensor descriptors, or autograd's backward, can take longer to queue than a small kernel takes to run, more so
on a slow or busy host. The wait is sized from the call itself: 1.5x the longest host time to queue it, measured
after warm-up, and never under ~50 us (the time ``prepare`` and the flush need). The stats keep that host time
(``host_ms``) and the wait (``gap_ms``), so a record shows how close to host-bound its call was.
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

L2_FLUSH_BYTES = 256 * 2**20
# The device-side wait in front of each timed call: at least MIN_GAP_MS, HOST_MARGIN times the longest host time
# to queue the call, at most MAX_GAP_MS (past that the call is host-bound whatever the wait, and the bench would
# spend most of its time waiting).
MIN_GAP_MS = 0.05
HOST_MARGIN = 1.5
MAX_GAP_MS = 5.0
HOST_SAMPLES = 5

Prepare = Callable[[int, int], None]


@dataclass(frozen=True)
class Stats:
    median_ms: float
    p20_ms: float
    p80_ms: float
    min_ms: float
    max_ms: float
    n: int
    method: str
    host_ms: float | None = None  # events timing: the longest host time to queue one call (HOST_SAMPLES tries)
    gap_ms: float | None = None  # events timing: the device-side wait in front of each timed call

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def _quantile(sorted_vals: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on a sorted list."""
    pos = (len(sorted_vals) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def summarize(samples_ms: list[float], method: str) -> Stats:
    if not samples_ms:
        raise ValueError("no timing samples")
    bad = [s for s in samples_ms if not (math.isfinite(s) and s > 0)]
    if bad:
        raise ValueError(f"non-positive or non-finite timing samples: {bad[:3]}")
    s = sorted(samples_ms)
    return Stats(statistics.median(s), _quantile(s, 0.2), _quantile(s, 0.8), s[0], s[-1], len(s), method)


def rep_counts(estimate_ms: float, warmup_ms: float, rep_ms: float, warmup_min: int, min_reps: int,
               max_reps: int) -> tuple[int, int]:
    """How many warm-up and timed reps for a call that takes about ``estimate_ms``."""
    est = max(estimate_ms, 1e-3)
    n_warm = max(warmup_min, min(int(warmup_ms / est), 1000))
    n_rep = max(min_reps, min(int(rep_ms / est), max_reps))
    return n_warm, n_rep


def time_wall(fn: Callable[[], object], *, warmup_ms: float = 100, rep_ms: float = 1000, min_reps: int = 10,
              max_reps: int = 1000, warmup_min: int = 1, sync: Callable[[], None] | None = None,
              clock: Callable[[], float] = time.perf_counter, prepare: Prepare | None = None) -> Stats:
    """Host clock around each call, with ``sync`` (the device's synchronize) before reading the clock."""
    if sync is None:
        sync = _cuda_sync_or_noop()

    def one() -> float:
        sync()
        t0 = clock()
        fn()
        sync()
        return (clock() - t0) * 1e3

    estimate = one()  # the first call also warms up
    n_warm, n_rep = rep_counts(estimate, warmup_ms, rep_ms, warmup_min, min_reps, max_reps)
    for _ in range(max(n_warm - 1, 0)):
        one()
    samples = []
    for i in range(n_rep):
        if prepare is not None:
            prepare(i, n_rep)
        samples.append(one())
    return summarize(samples, "wall")


def host_queue_ms(call: Callable[[], object], sync: Callable[[], None], n: int = HOST_SAMPLES,
                  clock: Callable[[], float] = time.perf_counter) -> float:
    """The longest of ``n`` host times to queue ``call``, each from an idle device (synchronised first, so a full
    launch queue never holds the host back and its wait is not counted)."""
    worst = 0.0
    for _ in range(n):
        sync()
        t0 = clock()
        call()
        worst = max(worst, clock() - t0)
    sync()
    return worst * 1e3


def gap_for(host_ms: float) -> float:
    """The device-side wait (ms) in front of a timed call that takes ``host_ms`` to queue."""
    return min(max(MIN_GAP_MS, HOST_MARGIN * host_ms), MAX_GAP_MS)


def _sleep_cycles_per_ms() -> float:
    """``torch.cuda._sleep`` spins for clock cycles: how many make a millisecond at the clock the GPU runs now."""
    import torch

    cycles = 1_000_000
    torch.cuda._sleep(cycles)  # first, to raise the clock from idle
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    return cycles / max(start.elapsed_time(end), 1e-6)


def _cuda_sync_or_noop() -> Callable[[], None]:
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.synchronize
    except ImportError:
        pass
    return lambda: None


def time_events(fn: Callable[[], object], *, warmup_ms: float = 100, rep_ms: float = 500, min_reps: int = 10,
                max_reps: int = 1000, warmup_min: int = 3, flush_l2: bool = True,
                cuda_graph: bool = False, prepare: Prepare | None = None) -> Stats:
    """CUDA events around each rep; optional CUDA-graph replay of ``fn`` (launch gaps removed)."""
    import torch

    call = fn
    if cuda_graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside capture: allocator and autotuning settle first
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        call = graph.replay

    flush_buf = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush_l2 else None

    def flush() -> None:
        if flush_buf is not None:
            flush_buf.zero_()

    # Estimate from a few calls after the first (which may compile or autotune).
    call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(3):
        call()
    end.record()
    torch.cuda.synchronize()
    estimate = start.elapsed_time(end) / 3
    n_warm, n_rep = rep_counts(estimate, warmup_ms, rep_ms, warmup_min, min_reps, max_reps)
    for _ in range(n_warm):
        call()
    host_ms = host_queue_ms(call, torch.cuda.synchronize)
    gap_ms = gap_for(host_ms)
    can_sleep = hasattr(torch.cuda, "_sleep")
    gap_cycles = int(gap_ms * _sleep_cycles_per_ms()) if can_sleep else 0
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    for i in range(n_rep):
        if prepare is not None:
            prepare(i, n_rep)
        flush()
        if can_sleep:
            torch.cuda._sleep(gap_cycles)
        starts[i].record()
        call()
        ends[i].record()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    stats = summarize(samples, "cuda_graph_events" if cuda_graph else "cuda_events")
    return replace(stats, host_ms=round(host_ms, 4), gap_ms=round(gap_ms, 4) if can_sleep else 0.0)
