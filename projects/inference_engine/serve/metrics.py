"""The server's Prometheus metrics, in a registry of its own (two servers in one process never collide).

Gauges are set by the engine loop after every step; latencies are observed as requests finish:

    engine_requests_running / engine_requests_waiting    sequences the scheduler holds
    engine_kv_cache_usage                                 fraction of KV blocks in use
    engine_generation_tokens_per_second                   over the last WINDOW_S seconds
    engine_{prompt,generation}_tokens_total, engine_requests_total{finish_reason}
    engine_time_to_first_token_seconds, engine_time_per_output_token_seconds, engine_e2e_request_latency_seconds
"""
from __future__ import annotations

import collections
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

WINDOW_S = 10.0
# seconds: CPU test models sit at the low end, a loaded GPU server's p99 at the high end
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.running = Gauge("engine_requests_running", "Sequences running (holding KV blocks)", registry=r)
        self.waiting = Gauge("engine_requests_waiting", "Requests queued or preempted, waiting for blocks",
                             registry=r)
        self.kv_usage = Gauge("engine_kv_cache_usage", "Fraction of the KV pool's blocks in use", registry=r)
        self.tokens_per_s = Gauge("engine_generation_tokens_per_second",
                                  f"Generated tokens per second over the last {WINDOW_S:g} s", registry=r)
        self.prompt_tokens = Counter("engine_prompt_tokens", "Prompt tokens admitted", registry=r)
        self.generation_tokens = Counter("engine_generation_tokens", "Tokens generated", registry=r)
        self.requests = Counter("engine_requests", "Requests finished, by reason", ["finish_reason"], registry=r)
        self.ttft = Histogram("engine_time_to_first_token_seconds", "Arrival to the first token",
                              buckets=_LATENCY_BUCKETS, registry=r)
        self.tpot = Histogram("engine_time_per_output_token_seconds",
                              "(last token - first token) / (tokens - 1), per request", buckets=_LATENCY_BUCKETS,
                              registry=r)
        self.e2e = Histogram("engine_e2e_request_latency_seconds", "Arrival to the last token",
                             buckets=_LATENCY_BUCKETS, registry=r)
        self._recent: collections.deque[tuple[float, int]] = collections.deque()  # (time, tokens) per step
        self.tokens_per_s.set_function(self._tokens_per_s)  # computed at scrape time: an idle server reads 0

    def _forget_old(self) -> None:
        cutoff = time.monotonic() - WINDOW_S
        while self._recent and self._recent[0][0] < cutoff:
            self._recent.popleft()

    def _tokens_per_s(self) -> float:
        self._forget_old()
        return sum(n for _, n in self._recent) / WINDOW_S

    def record_step(self, num_tokens: int, running: int, waiting: int, kv_usage: float) -> None:
        self._forget_old()
        self._recent.append((time.monotonic(), num_tokens))
        self.generation_tokens.inc(num_tokens)
        self.running.set(running)
        self.waiting.set(waiting)
        self.kv_usage.set(kv_usage)

    def record_finish(self, reason: str, ttft: float | None, tpot: float | None, e2e: float) -> None:
        self.requests.labels(finish_reason=reason).inc()
        if ttft is not None:
            self.ttft.observe(ttft)
        if tpot is not None:
            self.tpot.observe(tpot)
        self.e2e.observe(e2e)

    def render(self) -> bytes:
        return generate_latest(self.registry)
