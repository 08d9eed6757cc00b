"""The Gluon forward's tile order and persistent hand-out (``kernels/tile_order``), and the lab's model of its
balance (``lab/tile_balance``): pure Python, on CPU."""
import pytest
from gpufolio_projects.flash_attention.kernels import tile_order as to
from gpufolio_projects.flash_attention.lab import tile_balance as tb


def test_full_attention_walks_each_heads_query_blocks_in_turn():
    assert [to.tile_of(t, 3, 2, 1, causal=False) for t in range(6)] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1),
                                                                         (2, 1)]


def test_causal_goes_longest_first_within_each_head_group():
    # 3 query blocks, 5 heads in groups of 2 (the last group has one head).
    order = [to.tile_of(t, 3, 5, 2, causal=True) for t in range(15)]
    assert order[:6] == [(2, 0), (2, 1), (1, 0), (1, 1), (0, 0), (0, 1)]
    assert order[6:12] == [(2, 2), (2, 3), (1, 2), (1, 3), (0, 2), (0, 3)]
    assert order[12:] == [(2, 4), (1, 4), (0, 4)]
    assert sorted(order) == sorted((q, bh) for q in range(3) for bh in range(5))


def test_causal_tiles_see_key_blocks_up_to_their_last_row():
    assert to.tile_costs(384, 2, True, group=2) == [3, 3, 2, 2, 1, 1]
    assert to.tile_costs(300, 1, True, group=1) == [3, 2, 1]  # a ragged last block still counts as one
    assert to.tile_costs(300, 2, False, group=1) == [3] * 6


def test_head_groups_keep_their_kv_within_the_l2_share():
    assert to.group_heads(4096, 128, 64) == 8  # 2 MiB of K/V per head, 16 MiB per group
    assert to.group_heads(16384, 128, 16) == 2
    assert to.group_heads(4096, 64, 4) == 4  # never more than there are
    assert to.group_heads(1 << 20, 128, 8) == 1  # never fewer than one


def test_the_schedule_runs_every_tile_once_and_decodes_as_the_kernel_does():
    n_q, n_bh, group, ctas = 7, 5, 2, 4
    costs = to.tile_costs(7 * 128 - 5, n_bh, True, group)
    tiles = to.lpt_schedule(costs, ctas)
    assert sorted(t for mine in tiles for t in mine) == list(range(n_q * n_bh))
    assert all(mine == sorted(mine) for mine in tiles)  # each CTA keeps the launch order
    flat = to.flat_schedule(tiles, n_q, n_bh, group, True)
    offsets = flat[:ctas + 1]
    assert offsets[0] == ctas + 1 and offsets[-1] == len(flat)
    for c, mine in enumerate(tiles):
        entries = flat[offsets[c]:offsets[c + 1]]
        assert [(e >> 16, e & 0xFFFF) for e in entries] == [to.tile_of(t, n_q, n_bh, group, True) for t in mine]


def test_pack_refuses_what_an_int32_entry_cannot_hold():
    assert to.pack(3, 7) == 3 * 65536 + 7
    with pytest.raises(ValueError, match="65536 batch·heads"):
        to.pack(0, 1 << 16)


def test_the_schedule_balances_better_than_round_robin():
    for seqlen in (1024, 4096, 16384):
        n_bh = 16 * (16384 // seqlen)
        costs = to.tile_costs(seqlen, n_bh, True, to.group_heads(seqlen, 128, n_bh))
        mean = (sum(costs) + len(costs) * to.TILE_OVERHEAD) / 132
        scheduled = tb.busiest(to.lpt_schedule(costs, 132), costs)
        assert mean <= scheduled <= tb.busiest(tb.round_robin(len(costs), 132), costs)
        assert scheduled / mean < 1.03


def test_the_backward_launch_model_ends_near_the_ideal_in_head_groups():
    from gpufolio_projects.flash_attention.lab import tile_balance as tb

    # S = 4096, 64 heads: every CTA's cost (query blocks from its own on, plus one) in either order, the same work.
    head_after_head, groups = tb.bwd_costs(4096, 64, 1), tb.bwd_costs(4096, 64, 4)
    assert sorted(head_after_head) == sorted(groups) and max(groups) == 64 + 1 and min(groups) == 2 + 1
    ideal = sum(groups) / 132
    assert tb.list_schedule_end(head_after_head, 132) / ideal > 1.05
    assert tb.list_schedule_end(groups, 132) / ideal < 1.01
    assert tb.list_schedule_end([3, 3, 3, 1], 2) == 6  # one SM takes 3 then 3, the other 3 then 1
