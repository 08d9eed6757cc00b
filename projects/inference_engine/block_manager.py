"""The paged KV cache's bookkeeping: which physical block holds which tokens, who shares it, what it caches.

A block holds the K/V of ``block_size`` consecutive tokens of one sequence. Blocks are reference-counted so
that sequences with a common prefix share them (prefix caching): a *full* block whose K/V has been computed is
registered under a chained hash — hash(previous block's hash, this block's tokens) — so the hash names the
whole prefix up to the block's end, and a new sequence whose first k blocks hash alike reuses them.

A block whose count drops to 0 goes back to ``free_block_ids`` but keeps its hash: until it is handed out
again it can still be hit. The free list is in freeing order, so the least recently freed block is evicted
first (LRU).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Optional

from .sequence import Sequence


class Block:
    __slots__ = ("block_id", "ref_count", "hash", "token_ids")

    def __init__(self, block_id: int):
        self.block_id = block_id
        self.ref_count = 0
        self.hash: Optional[int] = None
        self.token_ids: tuple[int, ...] = ()


def chain_hash(prev: Optional[int], token_ids: tuple[int, ...]) -> int:
    # Python hashes ints and tuples of ints without per-process salt, so equal prefixes hash alike.
    return hash((0 if prev is None else prev, token_ids))


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True):
        if num_blocks < 1:
            raise ValueError("num_blocks must be positive")
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.free_block_ids: OrderedDict[int, None] = OrderedDict((i, None) for i in range(num_blocks))
        self.hash_to_block_id: dict[int, int] = {}
        self.num_prefix_hit_tokens = 0  # counted over the engine's life, for stats

    # -- counting ---------------------------------------------------------------------------------------
    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_free_blocks(self) -> int:
        return len(self.free_block_ids)

    def blocks_for(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    # -- prefix matching --------------------------------------------------------------------------------
    def _match_prefix(self, seq: Sequence) -> list[int]:
        """Physical blocks holding seq's leading full blocks. At most (len - 1) // block_size of them: the last
        token is always computed, because its logits are what the step samples from."""
        if not self.enable_prefix_caching:
            return []
        hits: list[int] = []
        h = None
        for i in range((len(seq) - 1) // self.block_size):
            tokens = tuple(seq.block_tokens(i, self.block_size))
            h = chain_hash(h, tokens)
            block_id = self.hash_to_block_id.get(h)
            if block_id is None or self.blocks[block_id].token_ids != tokens:
                break  # chained: after one miss every later block misses too
            hits.append(block_id)
        return hits

    def can_allocate(self, seq: Sequence) -> bool:
        hits = self._match_prefix(seq)
        reused_free = sum(1 for b in hits if self.blocks[b].ref_count == 0)
        return self.blocks_for(len(seq)) - len(hits) + reused_free <= self.num_free_blocks

    # -- allocate / grow / free -------------------------------------------------------------------------
    def _take_free_block(self) -> int:
        block_id, _ = self.free_block_ids.popitem(last=False)
        block = self.blocks[block_id]
        if block.hash is not None and self.hash_to_block_id.get(block.hash) == block_id:
            del self.hash_to_block_id[block.hash]  # evicted from the prefix cache
        block.hash, block.token_ids, block.ref_count = None, (), 1
        return block_id

    def allocate(self, seq: Sequence) -> None:
        """Give a waiting sequence blocks for all its tokens, reusing cached prefix blocks."""
        if seq.block_table:
            raise RuntimeError(f"sequence {seq.seq_id} already holds blocks")
        if not self.can_allocate(seq):
            raise RuntimeError("not enough free blocks; call can_allocate first")
        hits = self._match_prefix(seq)
        for block_id in hits:
            block = self.blocks[block_id]
            if block.ref_count == 0:
                del self.free_block_ids[block_id]
            block.ref_count += 1
        seq.block_table = hits + [self._take_free_block() for _ in range(self.blocks_for(len(seq)) - len(hits))]
        seq.num_computed_tokens = len(hits) * self.block_size
        seq.num_cached_prompt_tokens = seq.num_computed_tokens
        seq.num_hashed_blocks = len(hits)
        seq.last_block_hash = self.blocks[hits[-1]].hash if hits else None
        self.num_prefix_hit_tokens += seq.num_computed_tokens

    def slots_needed(self, seq: Sequence, num_tokens: int) -> int:
        """New blocks seq needs so that positions [0, num_tokens) have a slot."""
        return max(0, self.blocks_for(num_tokens) - len(seq.block_table))

    def append_slots(self, seq: Sequence, num_tokens: int) -> None:
        need = self.slots_needed(seq, num_tokens)
        if need > self.num_free_blocks:
            raise RuntimeError("not enough free blocks; check slots_needed first")
        seq.block_table.extend(self._take_free_block() for _ in range(need))

    def free(self, seq: Sequence) -> None:
        # Tail first: the free list evicts from its front, so a prefix's head blocks (shared most) live longest.
        for block_id in reversed(seq.block_table):
            block = self.blocks[block_id]
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_block_ids[block_id] = None
        seq.block_table = []
        seq.num_computed_tokens = 0
        seq.num_hashed_blocks = 0
        seq.last_block_hash = None

    def reset_prefix_cache(self) -> None:
        """Forget every registered hash (benchmarks: a repeated workload must not hit its own earlier run).
        Only registered blocks are touched: a loop over the whole pool (~10^5 blocks) costs milliseconds, and
        the decode bench calls this inside its timed call. A block whose hash is not registered can never be hit."""
        for block_id in self.hash_to_block_id.values():
            self.blocks[block_id].hash, self.blocks[block_id].token_ids = None, ()
        self.hash_to_block_id.clear()

    # -- prefix-cache registration ----------------------------------------------------------------------
    def commit(self, seq: Sequence) -> None:
        """Register every full block whose K/V is now computed, so later sequences can hit it."""
        if not self.enable_prefix_caching:
            return
        bs = self.block_size
        while (seq.num_hashed_blocks + 1) * bs <= seq.num_computed_tokens:
            i = seq.num_hashed_blocks
            tokens = tuple(seq.block_tokens(i, bs))
            h = chain_hash(seq.last_block_hash, tokens)
            block = self.blocks[seq.block_table[i]]
            if block.hash is None:  # a hit block is registered already
                block.hash, block.token_ids = h, tokens
                self.hash_to_block_id.setdefault(h, block.block_id)
            seq.last_block_hash = h
            seq.num_hashed_blocks += 1
