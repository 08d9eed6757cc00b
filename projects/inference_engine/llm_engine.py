"""The engine: ``step()`` is the whole algorithm — schedule, run, postprocess.

    llm = LLM("path/to/hf_llama", device="cuda")
    outs = llm.generate([[1, 2, 3], [4, 5]], SamplingParams(temperature=0.0, max_tokens=32))
    for index, new_tokens, finished in llm.stream(prompts, params): ...
"""
from __future__ import annotations

import time
from typing import Iterator, Optional, Sequence as Seq, Union

from .block_manager import BlockManager
from .config import CacheConfig, EngineConfig, ModelConfig, SchedulerConfig
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

    def add_request(self, prompt_token_ids: list[int], params: SamplingParams) -> Sequence:
        seq = Sequence(prompt_token_ids, params)
        self.scheduler.add(seq)
        return seq

    def step(self) -> list[tuple[Sequence, list[int]]]:
        """One engine step; returns (sequence, tokens it gained) for every sequence that ran."""
        batch = self.scheduler.schedule()
        if batch is None:
            return []
        sampled = self.model_runner.run(batch)
        self.num_tokens_computed["prefill" if batch.is_prefill else "decode"] += batch.total_tokens
        return self.scheduler.postprocess(batch, sampled)

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    def stream(self, prompts: Seq[list[int]], params: Union[SamplingParams, Seq[SamplingParams]]
               ) -> Iterator[tuple[int, list[int], bool]]:
        """Yields (prompt index, new tokens, finished) as steps complete."""
        params_list = [params] * len(prompts) if isinstance(params, SamplingParams) else list(params)
        if len(params_list) != len(prompts):
            raise ValueError("one SamplingParams, or one per prompt")
        index = {self.add_request(p, sp).seq_id: i for i, (p, sp) in enumerate(zip(prompts, params_list))}
        while self.has_unfinished():
            for seq, new in self.step():
                if seq.seq_id in index and (new or seq.is_finished):
                    yield index[seq.seq_id], new, seq.is_finished

    def generate(self, prompts: Seq[list[int]], params: Union[SamplingParams, Seq[SamplingParams]]
                 ) -> list[list[int]]:
        """Completion token ids for each prompt (prompt tokens not included)."""
        outs: list[list[int]] = [[] for _ in prompts]
        for i, new, _ in self.stream(prompts, params):
            outs[i].extend(new)
        return outs


class LLM(LLMEngine):
    """The public surface: ``LLM(model, **EngineConfig fields).generate(prompts, SamplingParams)``."""


def run_online(engine: LLMEngine, prompts: list[list[int]], params: list[SamplingParams],
               arrival_s: list[float]) -> list[dict]:
    """Replay requests arriving at ``arrival_s`` (seconds from start); per request: TTFT and TPOT in seconds
    and the generated token ids.

    TTFT: arrival to the first token back on the host. TPOT: (last token - first token) / (tokens - 1).
    Multi-step decode hands tokens back k at a time; a request's times are those of the host seeing them."""
    start = time.perf_counter()
    pending = sorted(range(len(prompts)), key=lambda i: arrival_s[i])
    nxt = 0
    seqs: dict[int, int] = {}
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    tokens: dict[int, list[int]] = {i: [] for i in range(len(prompts))}
    while nxt < len(pending) or engine.has_unfinished():
        now = time.perf_counter() - start
        while nxt < len(pending) and arrival_s[pending[nxt]] <= now:
            i = pending[nxt]
            seqs[engine.add_request(prompts[i], params[i]).seq_id] = i
            nxt += 1
        if not engine.has_unfinished():
            time.sleep(max(0.0, min(arrival_s[pending[nxt]] - now, 0.01)))
            continue
        out = engine.step()
        t = time.perf_counter() - start
        for seq, new in out:
            i = seqs.get(seq.seq_id)
            if i is None or not new:
                continue
            first.setdefault(i, t)
            last[i] = t
            tokens[i].extend(new)
    return [{"ttft": first[i] - arrival_s[i], "tpot": (last[i] - first[i]) / max(len(tokens[i]) - 1, 1),
             "token_ids": tokens[i]} for i in range(len(prompts))]


__all__ = ["LLM", "LLMEngine", "SamplingParams", "CacheConfig", "SchedulerConfig", "EngineConfig", "ModelConfig",
           "run_online"]
