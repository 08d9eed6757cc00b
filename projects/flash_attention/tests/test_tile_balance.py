"""The tile hand-out model (``lab/tile_balance``): its tile list matches the kernel's causal lengths, and handing
each tile to the first free CTA is never worse than the round-robin."""
from gpufolio_projects.flash_attention.lab import tile_balance as tb


def test_causal_tiles_walk_each_query_blocks_keys_longest_first():
    # S = 384: three query blocks per head, seeing 3, 2 and 1 key blocks; two heads, the longest of both first.
    assert tb.causal_tiles(384, n_bh=2) == [3, 3, 2, 2, 1, 1]
    assert tb.causal_tiles(300, n_bh=1) == [3, 2, 1]  # a ragged last block still counts as one


def test_first_free_is_never_worse_than_round_robin():
    for seqlen in (1024, 4096, 16384):
        work = tb.causal_tiles(seqlen, n_bh=16 * (16384 // seqlen))
        assert tb.first_free(work, 132) <= tb.round_robin(work, 132)
        assert tb.first_free(work, 132) >= sum(work) / 132
