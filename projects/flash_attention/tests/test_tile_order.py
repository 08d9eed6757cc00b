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
    flat = to.flat_schedule(to.whole_tiles(tiles, costs), n_q, n_bh, group, True)
    offsets = flat[:ctas + 1]
    assert offsets[0] == ctas + 1 and offsets[-1] == len(flat)
    for c, mine in enumerate(tiles):
        words = flat[offsets[c]:offsets[c + 1]]
        entries = [words[i:i + to.ENTRY_WORDS] for i in range(0, len(words), to.ENTRY_WORDS)]
        assert [(e[0] >> 16, e[0] & 0xFFFF) for e in entries] == [to.tile_of(t, n_q, n_bh, group, True) for t in mine]
        assert [e[1:] for e in entries] == [[0, costs[t], 0, 0] for t in mine]


def _covered(units: list[list[to.Unit]]) -> dict[int, list[tuple[int, int]]]:
    """Each tile's key-block ranges over all CTAs, sorted."""
    seen: dict[int, list[tuple[int, int]]] = {}
    for mine in units:
        for u in mine:
            if u.kv_hi > u.kv_lo:
                seen.setdefault(u.tile, []).append((u.kv_lo, u.kv_hi))
    return {t: sorted(r) for t, r in seen.items()}


@pytest.mark.parametrize("n_tiles,n_blocks,ctas", [(2048, 32, 132), (2048, 8, 132), (1136, 8, 132), (2048, 128, 132),
                                                   (40, 9, 7)])
def test_the_split_tail_walks_every_key_block_once_and_combines_each_split_tile_once(n_tiles, n_blocks, ctas):
    units, slots = to.split_tail(n_tiles, n_blocks, ctas)
    covered = _covered(units)
    assert sorted(covered) == list(range(n_tiles))
    for ranges in covered.values():  # contiguous, no gap, no overlap
        assert ranges[0][0] == 0 and ranges[-1][1] == n_blocks
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    pieces = [u for mine in units for u in mine if u.slots == 1]
    combines = [(c, u) for c, mine in enumerate(units) for u in mine if u.kv_lo == u.kv_hi]
    assert sorted(u.slot for u in pieces) == list(range(slots))
    for c, comb in combines:
        mine = sorted(u.slot for u in pieces if u.tile == comb.tile)
        assert mine == list(range(comb.slot, comb.slot + comb.slots))
        # The combining CTA holds the tile's last piece and is its highest-numbered: it waits only on CTAs
        # started before it, each of which runs its pieces first.
        holders = [h for h, m in enumerate(units) for u in m if u.tile == comb.tile and u.slots == 1]
        assert c == max(holders)
    assert len(combines) == len({u.tile for u in pieces})
    for mine in units:
        assert mine, "every CTA has work (the kernel reads its list's last entry)"
        kinds = ["piece" if u.slots == 1 else "combine" if u.kv_lo == u.kv_hi else "whole" for u in mine]
        assert kinds == sorted(kinds, key=["piece", "whole", "combine"].index)  # pieces first, a combine last
        assert kinds.count("combine") <= 1


def test_the_split_tail_shortens_the_busiest_cta():
    def busiest(units):
        return max(sum(u.kv_hi - u.kv_lo + to.TILE_OVERHEAD for u in mine if u.kv_hi > u.kv_lo) for mine in units)
    for seqlen in (1024, 4096, 16384):
        n = seqlen // 128
        n_tiles = 16 * 16384 // 128  # batch·S = 16k tokens, 16 heads: 2048 tiles
        whole = to.whole_tiles(to.lpt_schedule([n] * n_tiles, 132), [n] * n_tiles)
        split, _ = to.units_schedule([n] * n_tiles, 132, split=True)
        assert busiest(split) < busiest(whole)
        assert busiest(split) / ((n + to.TILE_OVERHEAD) * n_tiles / 132) < 1.02


def test_the_split_tail_cuts_nothing_where_it_would_not_help():
    assert to.split_tail(264, 32, 132) is None  # whole waves
    assert to.split_tail(576, 3, 132) is None  # 48 tiles left, but runs of 4 blocks reach only 36 CTAs
    costs = to.tile_costs(4096, 64, True, 8)  # causal: tiles differ in length, the whole-tile hand-out stays
    units, slots = to.units_schedule(costs, 132, split=True)
    assert slots == 0 and all(u.slots == 0 and u.kv_lo == 0 for mine in units for u in mine)


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
