"""One asyncio task owns the engine: requests join it through an asyncio queue, tokens leave through one queue
per request.

The task applies every queued command (add, abort) between steps, then runs ``engine.step()`` in a worker thread
so the event loop keeps serving HTTP while the device works. Nothing else touches the engine's state: admission
checks (``engine.validate``) only read its configuration, so they run in the handler and a bad request gets its
4xx before it is queued. The number of requests in the system is bounded (``max_in_flight``): past it a request
is refused with ``Overloaded`` (HTTP 429), never queued without limit.
"""
from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from dataclasses import dataclass, field
from typing import Optional

from ..llm_engine import LLMEngine
from ..sampling_params import SamplingParams
from .metrics import ServerMetrics


class Overloaded(Exception):
    """The queue is full: retry later (HTTP 429)."""


class EngineDead(Exception):
    """The engine loop stopped (HTTP 503)."""


@dataclass
class Delta:
    token_ids: list[int]
    finished: bool = False
    finish_reason: Optional[str] = None  # "stop", "length", "abort", "error"
    error: Optional[str] = None


@dataclass
class _Request:
    request_id: str
    num_prompt_tokens: int
    arrival: float
    out: asyncio.Queue = field(default_factory=asyncio.Queue)
    first: Optional[float] = None
    last: Optional[float] = None
    num_tokens: int = 0


class EngineLoop:
    def __init__(self, engine: LLMEngine, max_in_flight: int, metrics: Optional[ServerMetrics] = None):
        self.engine = engine
        self.max_in_flight = max_in_flight
        self.metrics = metrics or ServerMetrics()
        self._inbox: asyncio.Queue = asyncio.Queue()
        self._live: dict[str, _Request] = {}  # submitted and not finished
        self._ids = itertools.count()
        self._prefix = f"req-{secrets.token_hex(4)}-"  # unique across loops that share an engine (tests, bench)
        self._task: Optional[asyncio.Task] = None
        self.dead: Optional[str] = None  # why the loop stopped

    # -- lifecycle ------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    # -- the handlers' side ---------------------------------------------------------------------------------
    def submit(self, prompt: list[int], params: SamplingParams) -> tuple[str, asyncio.Queue]:
        """Queue a request already checked by ``engine.validate``; returns its id and the queue its Deltas
        arrive on."""
        if self.dead is not None:
            raise EngineDead(self.dead)
        if len(self._live) >= self.max_in_flight:
            raise Overloaded(f"{len(self._live)} requests in flight, the limit is {self.max_in_flight}")
        req = _Request(f"{self._prefix}{next(self._ids)}", len(prompt), time.perf_counter())
        self._live[req.request_id] = req
        self._inbox.put_nowait(("add", req.request_id, prompt, params))
        return req.request_id, req.out

    def abort(self, request_id: str) -> None:
        """Stop a request (its client went away); a finished one is left alone."""
        if request_id in self._live:
            self._inbox.put_nowait(("abort", request_id, None, None))

    @property
    def num_in_flight(self) -> int:
        return len(self._live)

    # -- the loop -------------------------------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            while True:
                # Steps run only for this loop's own requests: while it has none it leaves the engine alone
                # (a bench may drive the same engine directly in between).
                if not self._live or not self.engine.has_unfinished():
                    self._apply(await self._inbox.get())  # idle: sleep until a request arrives
                while not self._inbox.empty():
                    self._apply(self._inbox.get_nowait())
                if self._live and self.engine.has_unfinished():
                    out = await asyncio.to_thread(self.engine.step)
                    self._deliver(out)
        except asyncio.CancelledError:
            self._close("the server is shutting down")
            raise
        except Exception as e:  # noqa: BLE001 — the engine is unusable: every waiting client gets an answer
            self._close(f"engine loop stopped: {type(e).__name__}: {e}")

    def _apply(self, cmd: tuple) -> None:
        kind, request_id, prompt, params = cmd
        req = self._live.get(request_id)
        if req is None:
            return
        if kind == "add":
            try:
                self.engine.add_request(prompt, params, request_id=request_id)
            except Exception as e:  # noqa: BLE001 — validated already; whatever this is, it ends this request
                self._finish(req, Delta([], True, "error", f"{type(e).__name__}: {e}"))
                return
            self.metrics.prompt_tokens.inc(len(prompt))
        elif self.engine.abort(request_id):
            self._finish(req, Delta([], True, "abort"))

    def _deliver(self, out) -> None:
        now = time.perf_counter()
        num_tokens = 0
        for seq, new in out:
            req = self._live.get(seq.request_id)
            if req is None or not (new or seq.is_finished):
                continue
            if new:
                num_tokens += len(new)
                req.num_tokens += len(new)
                req.first = req.first or now
                req.last = now
            if seq.is_finished:
                self._finish(req, Delta(new, True, seq.finish_reason, None if seq.error is None else str(seq.error)))
            else:
                req.out.put_nowait(Delta(new))
        bm = self.engine.block_manager
        sched = self.engine.scheduler
        self.metrics.record_step(num_tokens, len(sched.running), len(sched.waiting),
                                 1.0 - bm.num_free_blocks / bm.num_blocks)

    def _finish(self, req: _Request, delta: Delta) -> None:
        del self._live[req.request_id]
        req.out.put_nowait(delta)
        now = time.perf_counter()
        ttft = None if req.first is None else req.first - req.arrival
        tpot = (req.last - req.first) / (req.num_tokens - 1) if req.num_tokens > 1 else None
        self.metrics.record_finish(delta.finish_reason or "error", ttft, tpot, now - req.arrival)

    def _close(self, why: str) -> None:
        # the engine is not touched: on shutdown a step may still be running in its worker thread
        self.dead = why
        for req in list(self._live.values()):
            self._finish(req, Delta([], True, "error", why))
