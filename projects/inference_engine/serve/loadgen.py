"""A load generator for the server: a real HTTP client (httpx), loopback only, bounded in requests and time.

    python -m gpufolio_projects.inference_engine.serve.loadgen --url http://127.0.0.1:8000 --rates 1,2,4,8

For each rate in the sweep: ``--requests`` streaming completions with Poisson arrivals (exponential gaps at that
many requests per second), prompts of uniform random length in ``--input-len LO:HI`` with token ids uniform over the
vocabulary, outputs of uniform random length in ``--output-len LO:HI`` (``ignore_eos``: exactly that many), greedy.
A rate stops at ``--max-duration`` seconds: requests still open are cancelled and counted as not completed.

Per request: TTFT (send to the first token), TPOT ((last token - first token) / (tokens - 1)) and end-to-end
latency. Per rate: their p50/p90/p99 in ms, achieved requests/s and output tokens/s over the rate's span (first
send to last finish), and goodput: completed requests per second that met both SLOs (``--slo-ttft-ms``,
``--slo-tpot-ms``).
"""
from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import urlparse

import httpx

from ..latency_stats import SLO, good_fraction, latency_summary


def run_sync(coro):
    """``asyncio.run(coro)``, also from a thread whose event loop is already running (a notebook, or a test
    process where a browser driver left one), by giving the coroutine a thread and a loop of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="loadgen") as pool:
        return pool.submit(asyncio.run, coro).result()


@dataclass
class Workload:
    num_requests: int
    input_len: tuple[int, int]
    output_len: tuple[int, int]
    vocab_size: int
    seed: int = 0

    def requests(self, rate: float) -> list[tuple[float, list[int], int]]:
        """(arrival s, prompt, output length) per request, the same for a given seed and rate."""
        rng = random.Random(f"{self.seed}-{rate}")
        t, out = 0.0, []
        for _ in range(self.num_requests):
            t += rng.expovariate(rate)
            prompt = [rng.randrange(self.vocab_size) for _ in range(rng.randint(*self.input_len))]
            out.append((t, prompt, rng.randint(*self.output_len)))
        return out


@dataclass
class Result:
    sent: float
    first: Optional[float] = None
    last: Optional[float] = None
    num_tokens: int = 0
    status: Optional[int] = None
    completed: bool = False
    token_ids: list[int] = field(default_factory=list)

    @property
    def ttft(self) -> float:
        return self.first - self.sent

    @property
    def tpot(self) -> Optional[float]:
        return (self.last - self.first) / (self.num_tokens - 1) if self.num_tokens > 1 else None

    @property
    def e2e(self) -> float:
        return self.last - self.sent


def check_loopback(url: str) -> None:
    host = urlparse(url).hostname or ""
    try:
        ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"--url {url}: the load generator only targets loopback (127.0.0.0/8, ::1, localhost)")


async def _one(http: httpx.AsyncClient, url: str, model: str, prompt: list[int], n: int, res: Result) -> None:
    body = {"model": model, "prompt": prompt, "max_tokens": n, "temperature": 0, "ignore_eos": True, "stream": True}
    async with http.stream("POST", url + "/v1/completions", json=body) as r:
        res.status = r.status_code
        if r.status_code != 200:
            await r.aread()
            return
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                res.completed = True
                return
            ids = json.loads(line[6:])["choices"][0].get("token_ids") or []
            if ids:
                now = time.perf_counter()
                res.first = res.first or now
                res.last = now
                res.num_tokens += len(ids)
                res.token_ids.extend(ids)


async def run_plan(url: str, model: str, plan: list[tuple[float, list[int], int]], max_duration_s: float
                   ) -> tuple[list[Result], float]:
    """Send each (arrival s, prompt, output length) at its arrival time; -> (results in plan order, span in s).
    Requests whose arrival is past max_duration_s are not sent (and have no result)."""
    results = []
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=httpx.Timeout(max_duration_s), limits=limits) as http:
        start = time.perf_counter()
        tasks = []
        for arrival, prompt, n in plan:
            if arrival > max_duration_s:
                break
            delay = start + arrival - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            res = Result(time.perf_counter())
            results.append(res)
            tasks.append(asyncio.create_task(_one(http, url, model, prompt, n, res)))
        remaining = start + max_duration_s - time.perf_counter()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=max(remaining, 0.0))
            for t in pending:  # bounded in time: what is still open is cancelled (and the server aborts it)
                t.cancel()
            # a transport error or a cancellation leaves its request not completed
            await asyncio.gather(*tasks, return_exceptions=True)
    ends = [r.last for r in results if r.completed and r.last is not None]
    span = (max(ends) - start) if ends else max_duration_s
    return results, span


async def run_rate(url: str, model: str, rate: float, workload: Workload, max_duration_s: float
                   ) -> tuple[list[Result], float]:
    return await run_plan(url, model, workload.requests(rate), max_duration_s)


def summarize(rate: float, results: list[Result], span: float, slo: SLO) -> dict:
    done = [r for r in results if r.completed and r.num_tokens > 0]
    ttft, tpot = [r.ttft for r in done], [r.tpot for r in done]
    out = {"rate": rate, "sent": len(results), "completed": len(done),
           "rejected_429": sum(r.status == 429 for r in results), "span_s": span,
           "req_per_s": len(done) / span, "output_tok_per_s": sum(r.num_tokens for r in done) / span,
           "goodput_req_per_s": good_fraction(slo, ttft, tpot) * len(done) / span}
    return out | {f"{k}_ms": v for k, v in latency_summary(ttft, tpot, [r.e2e for r in done]).items()}


def _range(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition(":")
    lo_i, hi_i = int(lo), int(hi or lo)
    if not 1 <= lo_i <= hi_i:
        raise argparse.ArgumentTypeError(f"{text!r}: LO:HI with 1 <= LO <= HI")
    return lo_i, hi_i


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m gpufolio_projects.inference_engine.serve.loadgen",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000", help="the server (loopback only)")
    ap.add_argument("--rates", default="1,2,4,8", help="requests per second, comma-separated")
    ap.add_argument("--requests", type=int, default=64, help="requests per rate")
    ap.add_argument("--max-duration", type=float, default=120.0, help="seconds per rate at most")
    ap.add_argument("--input-len", type=_range, default=(100, 1024), help="prompt tokens, uniform in LO:HI")
    ap.add_argument("--output-len", type=_range, default=(16, 128), help="output tokens, uniform in LO:HI")
    ap.add_argument("--vocab-size", type=int, help="token ids drawn below this (default: from /v1/models)")
    ap.add_argument("--slo-ttft-ms", type=float, default=500.0, help="goodput's TTFT bound")
    ap.add_argument("--slo-tpot-ms", type=float, default=50.0, help="goodput's TPOT bound")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write one JSON object per rate to this file")
    return ap


async def sweep(args) -> list[dict]:
    async with httpx.AsyncClient(timeout=30) as http:
        card = (await http.get(args.url + "/v1/models")).json()["data"][0]
    vocab = args.vocab_size or card.get("vocab_size")
    if not vocab:
        raise ValueError("--vocab-size: the server does not say its vocabulary size; give it")
    workload = Workload(args.requests, args.input_len, args.output_len, vocab, args.seed)
    rows = []
    for rate in args.rates:
        results, span = await run_rate(args.url, card["id"], rate, workload, args.max_duration)
        rows.append(summarize(rate, results, span, args.slo))
        r = rows[-1]
        print(f"rate {rate:g}/s: {r['completed']}/{r['sent']} done, {r['output_tok_per_s']:.1f} tok/s, "
              f"TTFT p50/p99 {r['ttft_p50_ms']:.1f}/{r['ttft_p99_ms']:.1f} ms, TPOT p50/p99 "
              f"{r['tpot_p50_ms']:.2f}/{r['tpot_p99_ms']:.2f} ms, goodput {r['goodput_req_per_s']:.2f} req/s",
              flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        check_loopback(args.url)
        args.rates = [float(x) for x in args.rates.split(",")]
        if not args.rates or min(args.rates) <= 0 or args.requests < 1 or args.max_duration <= 0:
            raise ValueError("--rates must be positive numbers, --requests and --max-duration positive")
        args.slo = SLO(args.slo_ttft_ms, args.slo_tpot_ms)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        rows = run_sync(sweep(args))
    except (httpx.HTTPError, ValueError) as e:
        print(f"error: {args.url}: {e}", file=sys.stderr)
        return 2
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
