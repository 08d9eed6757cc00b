"""The OpenAI-compatible HTTP API on one engine (FastAPI; run by uvicorn, see __main__.py).

    POST /v1/completions, /v1/chat/completions   (stream=true: server-sent events, then "data: [DONE]")
    GET  /v1/models, /health, /metrics

Bad input is a 400 whose OpenAI error body names the field in ``param`` (the engine's admission checks); an
unknown model is a 404; a full queue a 429; a stopped engine a 503. A client that disconnects aborts its request.
"""
from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from typing import Optional

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from ..errors import RequestError
from ..llm_engine import LLMEngine
from . import protocol as p
from .engine_loop import Delta, EngineDead, EngineLoop, Overloaded
from .metrics import ServerMetrics

DISCONNECT_POLL_S = 0.25  # how often a request waiting for tokens checks that its client is still there


def _text_delta(tokenizer: p.Tokenizer, ids: list[int], sent: str, finished: bool) -> tuple[str, str]:
    """(new text to send, all text sent so far). A token can end inside a multi-byte character, which decodes
    to U+FFFD until the next token completes it: that tail is held back until then."""
    text = tokenizer.decode(ids)
    if text.endswith("\ufffd") and not finished:
        return "", sent
    i = 0  # text normally extends what was sent; if decoding changed an earlier character (a tokenizer that
    # merges across tokens), only what follows the common prefix can still be sent
    while i < min(len(sent), len(text)) and sent[i] == text[i]:
        i += 1
    return text[i:], text


def build_app(engine: LLMEngine, model_name: str, tokenizer: Optional[p.Tokenizer] = None,
              max_in_flight: Optional[int] = None) -> FastAPI:
    """``max_in_flight``: requests in the system at once (running + waiting); default twice max_num_seqs."""
    tokenizer = tokenizer or p.Tokenizer()
    metrics = ServerMetrics()
    limit = max_in_flight or 2 * engine.config.scheduler.max_num_seqs

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.loop = EngineLoop(engine, limit, metrics)
        app.state.loop.start()
        yield
        await app.state.loop.stop()

    app = FastAPI(title="gpufolio inference engine", lifespan=lifespan)

    @app.exception_handler(p.HTTPError)
    async def _http_error(_, e: p.HTTPError):
        return JSONResponse(p.error_body(str(e), e.type, e.param), status_code=e.status)

    @app.exception_handler(RequestError)
    async def _request_error(_, e: RequestError):
        return JSONResponse(p.error_body(str(e), "invalid_request_error", e.param), status_code=400)

    @app.exception_handler(Overloaded)
    async def _overloaded(_, e: Overloaded):
        return JSONResponse(p.error_body(f"server busy: {e}; retry later", "rate_limit_error"), status_code=429,
                            headers={"Retry-After": "1"})

    @app.exception_handler(EngineDead)
    async def _dead(_, e: EngineDead):
        return JSONResponse(p.error_body(f"engine unavailable: {e}", "server_error"), status_code=503)

    def _check_model(body: dict) -> None:
        model = body.get("model")
        if model is not None and model != model_name:
            raise p.HTTPError(404, f"model: {model!r} does not exist (this server has {model_name!r})", "model",
                              "model_not_found")

    async def _admit(request: Request, chat: bool):
        body = p.parse_json(await request.body())
        _check_model(body)
        if chat:
            prompt, fields = p.parse_chat(body, tokenizer, engine.config.max_model_len)
        else:
            prompt, fields = p.parse_completion(body, tokenizer)
        prompt, params = engine.validate(prompt, fields)  # RequestError -> 400 naming the field
        rid, out = request.app.state.loop.submit(prompt, params)
        return body, prompt, rid, out

    async def _respond(request: Request, chat: bool):
        """Both OpenAI endpoints: admit, then stream as server-sent events or answer with one body."""
        body, prompt, rid, out = await _admit(request, chat=chat)
        if body.get("stream"):
            return _stream(request, body, rid, out, len(prompt), chat=chat)
        ids, reason = await _collect(request, rid, out)
        make_body = p.chat_body if chat else p.completion_body
        return make_body(rid, model_name, ids, tokenizer.decode(ids), reason, len(prompt))

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await _respond(request, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await _respond(request, chat=True)

    async def _next(request: Request, out: asyncio.Queue) -> Optional[Delta]:
        """The request's next Delta, or None once its client has gone."""
        get = asyncio.ensure_future(out.get())
        while True:
            done, _ = await asyncio.wait({get}, timeout=DISCONNECT_POLL_S)
            if done:
                return get.result()
            if await request.is_disconnected():
                get.cancel()
                return None

    async def _collect(request: Request, rid: str, out: asyncio.Queue) -> tuple[list[int], str]:
        ids: list[int] = []
        while True:
            d = await _next(request, out)
            if d is None:
                request.app.state.loop.abort(rid)
                raise p.HTTPError(499, "client closed the request")  # nobody reads this
            ids.extend(d.token_ids)
            if d.finished:
                if d.finish_reason == "error":
                    raise p.HTTPError(500, f"request failed: {d.error}", None, "server_error")
                return ids, d.finish_reason

    def _stream(request: Request, body: dict, rid: str, out: asyncio.Queue, num_prompt: int, chat: bool):
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events():
            ids: list[int] = []
            text = ""
            finished = False
            try:
                if chat:
                    yield p.sse(p.chat_chunk(rid, model_name, [], {"role": "assistant", "content": ""}, None))
                while not finished:
                    d = await _next(request, out)
                    if d is None:
                        return
                    finished = d.finished
                    if d.finish_reason == "error":
                        yield p.sse(p.error_body(f"request failed: {d.error}", "server_error"))
                        return
                    ids.extend(d.token_ids)
                    delta, text = _text_delta(tokenizer, ids, text, finished)
                    reason = d.finish_reason if finished else None
                    if chat:
                        yield p.sse(p.chat_chunk(rid, model_name, d.token_ids, {"content": delta}, reason))
                    else:
                        yield p.sse(p.completion_body(rid, model_name, d.token_ids, delta, reason, num_prompt,
                                                      chunk=True))
                if include_usage:
                    obj = "chat.completion.chunk" if chat else "text_completion"
                    yield p.sse(p.usage_chunk(rid, model_name, obj, num_prompt, len(ids)))
                yield p.sse("[DONE]")
            finally:
                if not finished:  # the client went away (or the response was cancelled): stop computing for it
                    request.app.state.loop.abort(rid)

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": model_name, "object": "model", "created": int(time.time()),
                                            "owned_by": "gpufolio", "max_model_len": engine.config.max_model_len,
                                            "vocab_size": engine.config.model_config.vocab_size}]}

    @app.get("/health")
    async def health(request: Request):
        loop: EngineLoop = request.app.state.loop
        if loop.dead is not None:
            raise EngineDead(loop.dead)
        return {"status": "ok", "in_flight": loop.num_in_flight}

    @app.get("/metrics")
    async def prometheus():
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return app
