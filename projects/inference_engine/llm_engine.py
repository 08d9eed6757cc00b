"""The engine: ``step()`` is the whole algorithm — schedule, run, postprocess.

    llm = LLM("path/to/hf_llama", device="cuda")
    outs = llm.generate([[1, 2, 3], [4, 5]], SamplingParams(temperature=0.0, max_tokens=32))
    for index, new_tokens, finished in llm.stream(prompts, params): ...
"""
from __future__ import annotations

import random
import time
from typing import Iterator, Optional, Sequence as Seq, Union

from .block_manager import BlockManager
from .admission import check_batch, check_prompt
from .config import CacheConfig, EngineConfig, ModelConfig, SchedulerConfig
from .errors import RequestError, RequestsFailed, RequestTypeError, RequestValueError, StepError
from .model_runner import ModelRunner
from .sampling_params import SamplingParams
from .scheduler import Scheduler
from .sequence import Sequence


class LLMEngine:
    def __init__(self, model: Union[str, ModelConfig, None] = None, *, config: Optional[EngineConfig] = None,
                 **kwargs):
        """``model``: a Hugging Face directory or a ModelConfig (random weights). kwargs: EngineConfig fields,
        plus ``cache=CacheConfig(...)`` and ``scheduler=SchedulerConfig(...)``."""
        if config is None:
            if isinstance(model, ModelConfig):
                kwargs["model_config"] = model
            else:
                kwargs["model"] = model
            config = EngineConfig(**kwargs)
        self.config = config
        self.model_runner = ModelRunner(config)
        self.block_manager = BlockManager(self.model_runner.num_blocks, config.cache.block_size,
                                          config.cache.enable_prefix_caching)
        self.scheduler = Scheduler(config.scheduler, self.block_manager, config.model_config.eos_token_id,
                                   config.max_model_len)
        self.num_tokens_computed = {"prefill": 0, "decode": 0}
        self.requests: dict[str, Sequence] = {}  # request_id -> its sequence, while unfinished
        self._seed_rng = random.Random(config.seed)  # seeds for requests that bring none

    # -- admission ------------------------------------------------------------------------------------------
    def validate(self, prompt_token_ids, params=None) -> tuple[list[int], SamplingParams]:
        """Check one request without queueing it: (prompt as a list of ints, SamplingParams), or a RequestError
        (a TypeError or ValueError) naming the field."""
        sp = SamplingParams.coerce(params)
        prompt = check_prompt(prompt_token_ids, self.config.model_config.vocab_size)
        self.scheduler.check_lengths(len(prompt), sp.max_tokens)
        return prompt, sp

    def add_request(self, prompt_token_ids, params=None, request_id: Optional[str] = None) -> Sequence:
        """Validate and queue one request; a refused one raises and leaves nothing queued."""
        prompt, sp = self.validate(prompt_token_ids, params)
        if request_id is not None and not isinstance(request_id, str):
            raise RequestTypeError("request_id", f"must be a str or None, got {type(request_id).__name__}")
        if request_id in self.requests:
            raise RequestValueError("request_id", f"{request_id!r} is already running")
        seed = sp.seed if sp.seed is not None else self._seed_rng.getrandbits(63)
        seq = Sequence(prompt, sp, request_id, seed)
        self.scheduler.add(seq)
        self.requests[seq.request_id] = seq
        return seq

    def abort(self, request_id: str) -> bool:
        """Stop a request wherever it is (waiting or running) and free its blocks. False if it is not live.
        Call it from the thread that calls ``step``."""
        seq = self.requests.pop(request_id, None)
        if seq is None:
            return False
        self.scheduler.abort(seq)
        return True

    # -- the algorithm --------------------------------------------------------------------------------------
    def step(self) -> list[tuple[Sequence, list[int]]]:
        """One engine step; returns (sequence, tokens it gained) for every sequence that ran. If the model
        raises, the step's sequences are aborted with a StepError (finish_reason "error") and the engine goes on."""
        batch = self.scheduler.schedule()
        if batch is None:
            return []
        try:
            sampled = self.model_runner.run(batch)
        except Exception as e:  # noqa: BLE001 — contained: only this step's sequences fail
            return self._fail(batch, e)
        self.num_tokens_computed["prefill" if batch.is_prefill else "decode"] += batch.total_tokens
        out = self.scheduler.postprocess(batch, sampled)
        for seq, _ in out:
            if seq.is_finished:
                self.requests.pop(seq.request_id, None)
        return out

    def _fail(self, batch, cause: Exception) -> list[tuple[Sequence, list[int]]]:
        self.model_runner.invalidate_resident()  # the device buffers may hold a half-run step
        for seq in batch.seqs:
            self.scheduler.abort(seq, reason="error")
            err = StepError(f"request {seq.request_id}: the step failed: {type(cause).__name__}: {cause}")
            err.__cause__ = cause
            seq.error = err
            self.requests.pop(seq.request_id, None)
        return [(seq, []) for seq in batch.seqs]

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    # -- batch API ------------------------------------------------------------------------------------------
    def _admit_batch(self, prompts, params) -> tuple[dict[int, Sequence], dict[int, Exception]]:
        """Validate every request first, then queue the valid ones: a refused request never leaves a good one
        queued behind it. A malformed batch as a whole (not a list of prompts, a params list of the wrong
        length, one shared params that is invalid) raises before anything is queued."""
        prompts = check_batch(prompts)
        if isinstance(params, (list, tuple)):
            if len(params) != len(prompts):
                raise RequestValueError("params", f"{len(params)} given for {len(prompts)} prompts: one "
                                                  "SamplingParams, or one per prompt")
            params_list = list(params)
        else:
            params_list = [SamplingParams.coerce(params)] * len(prompts)
        checked, errors = {}, {}
        for i, (p, sp) in enumerate(zip(prompts, params_list)):
            try:
                checked[i] = self.validate(p, sp)
            except RequestError as e:
                errors[i] = e
        return {i: self.add_request(p, sp) for i, (p, sp) in checked.items()}, errors

    def stream(self, prompts: Seq[list[int]], params: Union[SamplingParams, dict, None, Seq[SamplingParams]] = None
               ) -> Iterator[tuple[int, list[int], bool]]:
        """Yields (prompt index, new tokens, finished) as steps complete. Invalid requests are refused up front
        and the rest run; then RequestsFailed names every refused or failed one. Closing the iterator early
        aborts this call's unfinished requests."""
        seqs, errors = self._admit_batch(prompts, params)
        live = {seq.seq_id: i for i, seq in seqs.items()}
        try:
            while live:
                for seq, new in self.step():
                    i = live.get(seq.seq_id)
                    if i is None or not (new or seq.is_finished):
                        continue
                    if seq.is_finished:
                        del live[seq.seq_id]
                        if seq.error is not None:
                            errors[i] = seq.error
                    yield i, new, seq.is_finished
        finally:
            for i in live.values():
                self.abort(seqs[i].request_id)
        if errors:
            raise RequestsFailed(dict(sorted(errors.items())))

    def generate(self, prompts: Seq[list[int]], params: Union[SamplingParams, dict, None, Seq[SamplingParams]] = None
                 ) -> list[list[int]]:
        """Completion token ids for each prompt (prompt tokens not included). If some requests are invalid or
        fail, every other one still completes, then RequestsFailed is raised: its ``errors`` maps prompt index to
        error, its ``outputs`` holds the completions (None where there is an error)."""
        outs: list[list[int]] = [[] for _ in check_batch(prompts)]
        try:
            for i, new, _ in self.stream(prompts, params):
                outs[i].extend(new)
        except RequestsFailed as e:
            e.outputs = [None if i in e.errors else o for i, o in enumerate(outs)]
            raise
        return outs


class LLM(LLMEngine):
    """The public surface: ``LLM(model, **EngineConfig fields).generate(prompts, SamplingParams)``."""


def run_online(engine: LLMEngine, prompts: list[list[int]], params: list[SamplingParams],
               arrival_s: list[float], max_duration_s: float = 600.0) -> list[dict]:
    """Replay requests arriving at ``arrival_s`` (seconds from start); per request: TTFT, TPOT and end-to-end
    latency in seconds and the generated token ids.

    TTFT: arrival to the first token back on the host. TPOT: (last token - first token) / (tokens - 1), None for
    one token. e2e: arrival to the last token. Past ``max_duration_s`` the requests still live are aborted and
    ``TimeoutError`` is raised: a run cut short has no complete outputs to check.
    Multi-step decode hands tokens back k at a time; a request's times are those of the host seeing them."""
    start = time.perf_counter()
    pending = sorted(range(len(prompts)), key=lambda i: arrival_s[i])
    nxt = 0
    seqs: dict[int, int] = {}
    live: dict[int, Sequence] = {}  # seq_id -> the sequence, until it finishes
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    tokens: dict[int, list[int]] = {i: [] for i in range(len(prompts))}
    while nxt < len(pending) or engine.has_unfinished():
        now = time.perf_counter() - start
        while nxt < len(pending) and arrival_s[pending[nxt]] <= now:
            i = pending[nxt]
            seq = engine.add_request(prompts[i], params[i])
            seqs[seq.seq_id], live[seq.seq_id] = i, seq
            nxt += 1
        if now > max_duration_s:
            for seq in live.values():
                engine.abort(seq.request_id)
            raise TimeoutError(f"run_online: {len(live)} requests still live after {max_duration_s:g} s")
        if not engine.has_unfinished():
            time.sleep(max(0.0, min(arrival_s[pending[nxt]] - now, 0.01)))
            continue
        out = engine.step()
        t = time.perf_counter() - start
        for seq, new in out:
            if seq.is_finished:
                live.pop(seq.seq_id, None)
            i = seqs.get(seq.seq_id)
            if i is None or not new:
                continue
            first.setdefault(i, t)
            last[i] = t
            tokens[i].extend(new)
    return [{"ttft": first[i] - arrival_s[i], "e2e": last[i] - arrival_s[i],
             "tpot": (last[i] - first[i]) / (len(tokens[i]) - 1) if len(tokens[i]) > 1 else None,
             "token_ids": tokens[i]} for i in range(len(prompts))]


__all__ = ["LLM", "LLMEngine", "SamplingParams", "RequestError", "RequestsFailed", "StepError", "CacheConfig", "SchedulerConfig", "EngineConfig", "ModelConfig",
           "run_online"]
