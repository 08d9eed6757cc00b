"""Continuous batching: which sequences run in the next step, and what their results change.

Each step is a prefill step or a decode step (never mixed):

- **prefill** first: sequences still mid-prompt (chunked prefill) continue, then waiting sequences are admitted
  in arrival order while the step's token budget lasts and their blocks fit. A prompt longer than the budget is
  computed in chunks over several steps. Admission never preempts: a sequence that does not fit waits for
  blocks to be freed.
- otherwise **decode**: every running sequence advances by ``num_steps`` tokens (multi-step decode: the
  device runs the steps back to back, the host syncs once). If the pool cannot give every sequence its slots,
  ``num_steps`` drops to 1, then the newest sequences are preempted — their blocks freed, their K/V to be
  recomputed when they are readmitted. Running out of blocks is never an OOM.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional

from .block_manager import BlockManager
from .config import SchedulerConfig
from .errors import RequestValueError
from .sequence import Sequence, Status


@dataclass
class ScheduledBatch:
    seqs: list[Sequence]
    is_prefill: bool
    # prefill: tokens computed for each sequence this step, from its num_computed_tokens on; decode: 1 each
    num_tokens: list[int]
    num_steps: int = 1  # decode steps run back to back (1 for prefill)

    @property
    def total_tokens(self) -> int:
        return sum(self.num_tokens) * self.num_steps


class Scheduler:
    def __init__(self, config: SchedulerConfig, block_manager: BlockManager, eos_token_id: Optional[int],
                 max_model_len: int):
        self.config = config
        self.block_manager = block_manager
        self.eos_token_id = eos_token_id
        self.max_model_len = max_model_len
        self.waiting: deque[Sequence] = deque()
        self.running: deque[Sequence] = deque()
        self.num_preemptions = 0

    def check_lengths(self, num_prompt_tokens: int, max_tokens: int) -> None:
        """Refuse a request that could never finish: no room under max_model_len, or more K/V than the whole
        pool holds (it would wait for blocks forever)."""
        if num_prompt_tokens >= self.max_model_len:
            raise RequestValueError("prompt", f"{num_prompt_tokens} tokens leave no room for output under "
                                              f"max_model_len={self.max_model_len}")
        # K/V slots a lone run needs: the prompt, then one per generated token but the last
        need = max(num_prompt_tokens, min(num_prompt_tokens + max_tokens, self.max_model_len) - 1)
        bm = self.block_manager
        if bm.blocks_for(need) > bm.num_blocks:
            param = "prompt" if bm.blocks_for(num_prompt_tokens) > bm.num_blocks else "max_tokens"
            raise RequestValueError(param, f"{num_prompt_tokens} prompt tokens + {max_tokens} to generate need "
                                           f"{bm.blocks_for(need)} KV blocks; the pool holds {bm.num_blocks}")

    def add(self, seq: Sequence) -> None:
        self.check_lengths(seq.num_prompt_tokens, seq.params.max_tokens)
        self.waiting.append(seq)

    def abort(self, seq: Sequence, reason: str = "abort") -> None:
        """Drop a waiting or running sequence, free its blocks, and finish it with ``reason``."""
        if seq.is_finished:
            return
        queue = self.running if seq.status == Status.RUNNING else self.waiting
        try:
            queue.remove(seq)
        except ValueError:
            pass  # not queued yet (a step failed before the sequence was added)
        if seq.block_table:
            self.block_manager.free(seq)
        seq.status = Status.FINISHED
        seq.finish_reason = reason

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    # -- schedule ---------------------------------------------------------------------------------------
    def schedule(self) -> Optional[ScheduledBatch]:
        return self._schedule_prefill() or self._schedule_decode()

    def _schedule_prefill(self) -> Optional[ScheduledBatch]:
        budget = self.config.max_num_batched_tokens
        seqs, chunks = [], []
        for seq in self.running:  # prompts cut by the budget in an earlier step
            if seq.is_prefilling and budget > 0:
                n = min(len(seq) - seq.num_computed_tokens, budget)
                seqs.append(seq)
                chunks.append(n)
                budget -= n
        bm = self.block_manager
        while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
            seq = self.waiting[0]
            if not bm.can_allocate(seq):
                break
            bm.allocate(seq)
            self.waiting.popleft()
            seq.status = Status.RUNNING
            self.running.append(seq)
            n = min(len(seq) - seq.num_computed_tokens, budget)
            seqs.append(seq)
            chunks.append(n)
            budget -= n
        return ScheduledBatch(seqs, True, chunks) if seqs else None

    def _schedule_decode(self) -> Optional[ScheduledBatch]:
        if not self.running:
            return None
        bm = self.block_manager
        k = min(self.config.num_decode_steps, max(self._remaining(s) for s in self.running))
        while True:
            # k steps write the K/V of positions len-1 ... len-2+k; a sequence reserves slots only up to its
            # own stop — its writes past that land in the scratch block (its table is padded with it)
            ahead = [self._lookahead(s, k) for s in self.running]
            if sum(bm.slots_needed(s, a) for s, a in zip(self.running, ahead)) <= bm.num_free_blocks:
                break
            if k > 1:
                k = 1
            elif len(self.running) > 1:
                self._preempt(self.running.pop())
            else:
                raise RuntimeError("one sequence needs more blocks than the pool holds (max_model_len too large)")
        for s, a in zip(self.running, ahead):
            bm.append_slots(s, a)
        seqs = list(self.running)
        return ScheduledBatch(seqs, False, [1] * len(seqs), k)

    def _lookahead(self, seq: Sequence, k: int) -> int:
        return len(seq) - 1 + min(k, self._remaining(seq))

    def _remaining(self, seq: Sequence) -> int:
        return min(seq.params.max_tokens - seq.num_completion_tokens, self.max_model_len - len(seq))

    def _preempt(self, seq: Sequence) -> None:
        self.block_manager.free(seq)
        seq.status = Status.WAITING
        seq.num_preemptions += 1
        self.num_preemptions += 1
        self.waiting.appendleft(seq)

    # -- postprocess ------------------------------------------------------------------------------------
    def postprocess(self, batch: ScheduledBatch, sampled: list[list[int]]) -> list[tuple[Sequence, list[int]]]:
        """Append sampled tokens (a decode step's extra tokens past a stop are dropped); free what finished.
        ``sampled[i]`` is empty for a prefill chunk that did not reach the end of its prompt."""
        out = []
        finished = False
        for seq, n, tokens in zip(batch.seqs, batch.num_tokens, sampled):
            new = self._accept(seq, tokens)
            # a decode step wrote the K/V of each pending token it consumed: one per token accepted
            seq.num_computed_tokens += n if batch.is_prefill else len(new)
            self.block_manager.commit(seq)
            if seq.is_finished:
                self.block_manager.free(seq)
                finished = True
            out.append((seq, new))
        if finished:
            self.running = deque(s for s in self.running if not s.is_finished)
        return out

    def _accept(self, seq: Sequence, tokens: list[int]) -> list[int]:
        """Append ``tokens`` up to and including the first stop (EOS unless ignored, max_tokens, max_model_len);
        mark the sequence finished if one was reached. Returns the tokens kept. One slice per sequence, not a
        check per token: at batch 256 with 16 tokens a chunk the per-token loop cost milliseconds of GPU idle."""
        if not tokens:
            return tokens
        n_len = min(seq.params.max_tokens - seq.num_completion_tokens, self.max_model_len - len(seq))
        cut = max(1, min(len(tokens), n_len))  # the first token is always kept, as a step's output
        stop = cut == n_len
        if self.eos_token_id is not None and not seq.params.ignore_eos and self.eos_token_id in tokens[:cut]:
            cut, stop = tokens.index(self.eos_token_id) + 1, True
        new = tokens[:cut]
        seq.token_ids.extend(new)
        if stop or n_len <= 1:
            seq.status = Status.FINISHED
            seq.finish_reason = "stop" if self.eos_token_id is not None and new[-1] == self.eos_token_id \
                and not seq.params.ignore_eos else "length"
        return new
