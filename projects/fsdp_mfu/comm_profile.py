"""NCCL time and its overlap with compute, from the kernel intervals of a profiled step.

On the GPU timeline each kernel is an interval [start, end). Communication = NCCL's kernels (all-gather,
reduce-scatter, all-reduce); compute = every other kernel (GEMMs, attention, Inductor's, FSDP2's copy-in/out).
Per step:
  nccl_ms       the union of the NCCL intervals: time during which some collective ran
  overlapped_ms the part of it during which a compute kernel also ran (hidden communication)
  exposed_ms    nccl_ms - overlapped_ms: communication the step waits for
An NCCL kernel is resident from launch until its peers arrive, so nccl_ms counts waiting on a slower rank too:
a high exposed share with a low bandwidth share means imbalance, not a slow link.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

NCCL = re.compile(r"nccl", re.I)

Interval = tuple[float, float]


def union(spans: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering the same time as ``spans``."""
    out: list[list[float]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def length(spans: Iterable[Interval]) -> float:
    return sum(e - s for s, e in spans)


def intersection(a: list[Interval], b: list[Interval]) -> float:
    """Total length where two disjoint, sorted interval lists overlap (a two-pointer sweep)."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def comm_overlap(kernels: Iterable[tuple[str, float, float]], steps: int) -> dict[str, float]:
    """``kernels``: (name, start_us, end_us) of every GPU kernel in ``steps`` profiled steps -> ms per step."""
    kernels = list(kernels)
    comm = union((s, e) for name, s, e in kernels if NCCL.search(name))
    compute = union((s, e) for name, s, e in kernels if not NCCL.search(name))
    nccl_us, hidden_us = length(comm), intersection(comm, compute)
    per_step = 1e3 * steps  # us -> ms, per step
    return {"nccl_ms": nccl_us / per_step, "overlapped_ms": hidden_us / per_step,
            "exposed_ms": (nccl_us - hidden_us) / per_step}


def comm_metrics(per_rank: list[dict[str, float]], step_ms: float) -> dict[str, tuple[float, str, bool]]:
    """The record's metrics from each rank's ``comm_overlap``: shares of the (harness-timed) step, mean over
    ranks; the overlap as the share of communication time that ran beside compute."""
    if not per_rank:
        return {}
    mean = {k: sum(r[k] for r in per_rank) / len(per_rank) for k in per_rank[0]}
    out = {"nccl_pct": (100 * mean["nccl_ms"] / step_ms, "% of step", False),
           "exposed_comm_pct": (100 * mean["exposed_ms"] / step_ms, "% of step", False)}
    if mean["nccl_ms"] > 0:
        out["comm_overlap_pct"] = (100 * mean["overlapped_ms"] / mean["nccl_ms"], "% of NCCL time", True)
    return out
