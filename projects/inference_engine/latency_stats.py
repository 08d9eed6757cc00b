"""Serving latency over a set of finished requests: TTFT, TPOT and end-to-end percentiles, and which requests
met a latency SLO. One definition for the ``online`` bench and the load generator (numpy only: no torch, no
HTTP client).

    TTFT  arrival (or send) to the first token back
    TPOT  (last token - first token) / (tokens - 1); a one-token request has none and meets any TPOT bound
    e2e   arrival (or send) to the last token
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

PERCENTILES = (50, 90, 99)
LATENCIES = ("ttft", "tpot", "e2e")


@dataclass(frozen=True)
class SLO:
    """A request is good when its TTFT is at most ``ttft_ms`` and its TPOT at most ``tpot_ms``."""

    ttft_ms: float
    tpot_ms: float

    def __post_init__(self) -> None:
        if not (self.ttft_ms > 0 and self.tpot_ms > 0):
            raise ValueError(f"SLO bounds must be positive, got ttft_ms={self.ttft_ms}, tpot_ms={self.tpot_ms}")

    def met(self, ttft_s: float, tpot_s: float | None) -> bool:
        return ttft_s * 1e3 <= self.ttft_ms and (tpot_s is None or tpot_s * 1e3 <= self.tpot_ms)


def percentiles_ms(name: str, values_s: Sequence[float]) -> dict[str, float]:
    """{"<name>_p50": ms, "<name>_p90": ms, "<name>_p99": ms}; NaN when there are no values."""
    xs = np.asarray(values_s, dtype=float) * 1e3
    return {f"{name}_p{q}": float(np.percentile(xs, q)) if xs.size else float("nan") for q in PERCENTILES}


def latency_summary(ttft_s: Sequence[float], tpot_s: Sequence[float | None], e2e_s: Sequence[float]
                    ) -> dict[str, float]:
    """Every LATENCIES x PERCENTILES entry in ms, pooled over the requests given (one-token requests add no TPOT)."""
    out = percentiles_ms("ttft", ttft_s)
    out |= percentiles_ms("tpot", [t for t in tpot_s if t is not None])
    return out | percentiles_ms("e2e", e2e_s)


def good_fraction(slo: SLO, ttft_s: Sequence[float], tpot_s: Sequence[float | None]) -> float:
    """The share of the requests that met ``slo`` (0 when there are none)."""
    good = sum(slo.met(a, b) for a, b in zip(ttft_s, tpot_s, strict=True))
    return good / len(ttft_s) if len(ttft_s) else 0.0
