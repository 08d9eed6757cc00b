"""The server in a thread of this process, on a free loopback port: for tests and for the ``online`` bench's
HTTP variant, which load the engine they also inspect.

``http_online`` replays a bench's requests (prompts, output lengths, arrival times) through the HTTP server with
the load generator's client: the same work as ``llm_engine.run_online``, plus HTTP, JSON and SSE.
"""
from __future__ import annotations

import threading
import time

import uvicorn

from ..llm_engine import LLMEngine
from . import loadgen
from .app import build_app

_SERVERS: dict[int, "InProcessServer"] = {}  # id(engine) -> its server, started once per process


class InProcessServer:
    def __init__(self, app, start_timeout_s: float = 30.0):
        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + start_timeout_s
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the in-process server did not start")
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def _allow_open_files(num_streams: int) -> None:
    """Every open stream holds two sockets in this process (the client's and the server's): raise the soft
    open-file limit toward the hard one where it is too low for them (a common soft default, 1024, refuses a
    burst of 512 queued streams)."""
    try:
        import resource
    except ImportError:  # not a Unix
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * num_streams + 256  # + what the process already holds: the model files, the pipes, the GPU driver
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))


def http_online(engine: LLMEngine, prompts: list[list[int]], output_lens: list[int], arrival_s: list[float],
                max_duration_s: float = 600.0) -> list[dict]:
    """Per request, in input order: TTFT, TPOT (None for one token) and end-to-end latency in seconds, as the
    client sees them, and the token ids."""
    _allow_open_files(len(prompts))
    key = id(engine)
    if key not in _SERVERS:
        _SERVERS[key] = InProcessServer(build_app(engine, "bench", max_in_flight=len(prompts) + 1))
    server = _SERVERS[key]
    server.app.state.loop.max_in_flight = max(server.app.state.loop.max_in_flight, len(prompts) + 1)
    plan = sorted(zip(arrival_s, prompts, output_lens, range(len(prompts))))
    results, _ = loadgen.run_sync(loadgen.run_plan(server.url, "bench", [(a, p, n) for a, p, n, _ in plan],
                                              max_duration_s))
    by_index = {i: r for (_, _, _, i), r in zip(plan, results)}
    missing = [i for i in range(len(prompts)) if i not in by_index or not by_index[i].completed]
    if missing:
        raise RuntimeError(f"{len(missing)} of {len(prompts)} requests did not complete over HTTP")
    return [{"ttft": by_index[i].ttft, "tpot": by_index[i].tpot, "e2e": by_index[i].e2e,
             "token_ids": by_index[i].token_ids} for i in range(len(prompts))]
