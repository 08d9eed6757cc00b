"""One request as the engine tracks it: its tokens, how many of them have K/V in the cache, its blocks."""
from __future__ import annotations

import enum
import itertools
from typing import Optional

from .sampling_params import SamplingParams

_ids = itertools.count()


class Status(enum.Enum):
    WAITING = "waiting"    # no blocks: never scheduled, or preempted (its K/V will be recomputed)
    RUNNING = "running"    # holds blocks: prefilling or decoding
    FINISHED = "finished"


class Sequence:
    """token_ids = prompt + generated. K/V exist in the cache for token_ids[:num_computed_tokens].

    A running sequence is *prefilling* while num_computed_tokens < len - 1: the next step computes (a chunk
    of) the rest. A decoding one has num_computed_tokens == len - 1: the last token is the next input and
    its K/V is written during that step.
    """

    def __init__(self, token_ids: list[int], params: SamplingParams, request_id: Optional[str] = None,
                 sample_seed: int = 0):
        if not token_ids:
            raise ValueError("a prompt needs at least one token")
        self.seq_id = next(_ids)
        self.request_id = request_id if request_id is not None else f"seq-{self.seq_id}"
        self.sample_seed = sample_seed  # the counter-based sampler's key (params.seed, or drawn by the engine)
        self.finish_reason: Optional[str] = None  # "stop" (EOS), "length", "abort", "error"
        self.error: Optional[Exception] = None  # set with finish_reason "error"
        self.token_ids = list(token_ids)
        self.num_prompt_tokens = len(token_ids)
        self.params = params
        self.status = Status.WAITING
        self.num_computed_tokens = 0
        self.num_cached_prompt_tokens = 0  # prefix-cache hits at the last admission (for stats)
        # block_table: [logical_block] -> physical_block
        self.block_table: list[int] = []
        self.num_hashed_blocks = 0  # leading blocks whose hash is registered (full and computed)
        self.last_block_hash: int | None = None  # chained hash of block num_hashed_blocks - 1
        self.num_preemptions = 0

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def num_completion_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def completion_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens:]

    @property
    def is_prefilling(self) -> bool:
        # num_computed == len - 1 is a decode: computing the one pending token and sampling is the same work
        # whether that token came from the prompt or from the sampler.
        return self.num_computed_tokens < len(self.token_ids) - 1

    @property
    def is_finished(self) -> bool:
        return self.status == Status.FINISHED

    def block_tokens(self, i: int, block_size: int) -> list[int]:
        return self.token_ids[i * block_size:(i + 1) * block_size]
