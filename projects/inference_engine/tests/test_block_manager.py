"""Block manager: allocation, freeing, reference counts, prefix-cache hits by chained hashes, LRU eviction."""
import pytest
from gpufolio_projects.inference_engine.block_manager import BlockManager
from gpufolio_projects.inference_engine.sampling_params import SamplingParams
from gpufolio_projects.inference_engine.sequence import Sequence

SP = SamplingParams(temperature=0.0, max_tokens=4)


def _seq(tokens):
    return Sequence(list(tokens), SP)


def _computed(bm, seq):
    """Pretend the step computed every token's K/V, then register full blocks."""
    seq.num_computed_tokens = len(seq)
    bm.commit(seq)


def test_allocate_and_free_return_every_block():
    bm = BlockManager(num_blocks=10, block_size=4)
    s = _seq(range(9))  # 9 tokens: 3 blocks, the last one partial
    assert bm.can_allocate(s)
    bm.allocate(s)
    assert len(s.block_table) == 3 and len(set(s.block_table)) == 3
    assert bm.num_free_blocks == 7
    assert all(bm.blocks[b].ref_count == 1 for b in s.block_table)
    bm.free(s)
    assert bm.num_free_blocks == 10 and s.block_table == []


def test_can_allocate_refuses_when_the_pool_is_short():
    bm = BlockManager(num_blocks=3, block_size=4)
    big = _seq(range(13))  # 4 blocks
    assert not bm.can_allocate(big)
    with pytest.raises(RuntimeError):
        bm.allocate(big)


def test_prefix_hit_shares_blocks_and_counts_references():
    bm = BlockManager(num_blocks=20, block_size=4)
    a = _seq(list(range(100, 110)))  # 10 tokens: blocks [0..3], [4..7] full, [8..9] partial
    bm.allocate(a)
    _computed(bm, a)
    b = _seq(list(range(100, 108)) + [1, 2, 3])  # same first 8 tokens
    bm.allocate(b)
    assert b.block_table[:2] == a.block_table[:2]
    assert b.block_table[2] != a.block_table[2]
    assert b.num_computed_tokens == 8 and b.num_cached_prompt_tokens == 8
    assert [bm.blocks[x].ref_count for x in a.block_table[:2]] == [2, 2]
    bm.free(a)
    assert [bm.blocks[x].ref_count for x in b.block_table[:2]] == [1, 1]  # still held by b
    bm.free(b)
    assert bm.num_free_blocks == 20


def test_a_different_first_block_misses_everything_after_it():
    bm = BlockManager(num_blocks=20, block_size=4)
    a = _seq(list(range(12)) + [99])
    bm.allocate(a)
    _computed(bm, a)
    # same second and third blocks, different first: chained hashes make these misses
    b = _seq([7, 7, 7, 7] + list(range(4, 12)) + [99])
    bm.allocate(b)
    assert b.num_computed_tokens == 0
    assert not set(b.block_table) & set(a.block_table)


def test_the_last_token_is_never_a_hit():
    """A prompt that is entirely cached still computes its last block: its logits are what gets sampled."""
    bm = BlockManager(num_blocks=20, block_size=4)
    a = _seq(range(8))
    bm.allocate(a)
    _computed(bm, a)
    b = _seq(range(8))
    bm.allocate(b)
    assert b.num_computed_tokens == 4  # only the first block: (8 - 1) // 4 = 1 block may hit


def test_freed_blocks_stay_hittable_until_evicted_lru():
    bm = BlockManager(num_blocks=4, block_size=2)
    a = _seq([1, 2, 3, 4, 5])  # 3 blocks, 2 full
    bm.allocate(a)
    _computed(bm, a)
    bm.free(a)
    assert bm.num_free_blocks == 4
    b = _seq([1, 2, 3, 4, 6])
    assert bm.can_allocate(b)
    bm.allocate(b)  # hits the two freed-but-cached blocks
    assert b.num_computed_tokens == 4
    bm.free(b)
    # fill the pool with unrelated tokens: the cached blocks are evicted, oldest freed first
    c = _seq([9] * 8)
    bm.allocate(c)
    assert bm.hash_to_block_id == {}
    bm.free(c)
    d = _seq([1, 2, 3, 4, 5])
    bm.allocate(d)
    assert d.num_computed_tokens == 0


def test_append_slots_grows_the_table_when_a_block_fills():
    bm = BlockManager(num_blocks=5, block_size=4)
    s = _seq(range(4))
    bm.allocate(s)
    assert len(s.block_table) == 1
    assert bm.slots_needed(s, 4) == 0
    assert bm.slots_needed(s, 5) == 1
    bm.append_slots(s, 12)  # multi-step lookahead: 8 more positions
    assert len(s.block_table) == 3 and bm.num_free_blocks == 2
    with pytest.raises(RuntimeError):
        bm.append_slots(s, 40)


def test_reset_prefix_cache_forgets_hashes():
    bm = BlockManager(num_blocks=8, block_size=2)
    a = _seq([1, 2, 3, 4, 5])
    bm.allocate(a)
    _computed(bm, a)
    bm.free(a)
    bm.reset_prefix_cache()
    b = _seq([1, 2, 3, 4, 5])
    bm.allocate(b)
    assert b.num_computed_tokens == 0
