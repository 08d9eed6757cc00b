"""How evenly the persistent Gluon forward's tile hand-out spreads causal work over the SMs, on CPU.

A causal tile (128 query rows of one head) walks as many 128-key blocks as its last row sees, so tiles differ in
length up to S / 128 to one. Compared, per sequence length at batch·S = 16k tokens and 16 heads, D = 128, the
busiest CTA's key blocks against the average (the time the last SM keeps the kernel running while the others
idle):

- round-robin: tile t to CTA t mod grid, tiles longest first across every head (the first persistent kernel);
- schedule: ``kernels/tile_order`` — heads in L2-sized groups, longest first within a group, each tile to the
  CTA with the least work so far (the kernel's hand-out now).

A model of the hand-out only (every key block costs the same, a tile one block more; no launch gaps).

``--bwd``: the causal Gluon backward's plain grid, one CTA per 128 keys of a head seeing the query blocks of 64
rows from its own on, each CTA to the SM that frees first in launch order (what the hardware does), a CTA's
cost its query blocks plus one. Compared, the time the last SM finishes against the ideal (all work spread
evenly): head after head (each head's key blocks in turn, the first kernel) and ``gluon_bwd._key_block_of``'s
order (heads in L2-sized groups, each group's key blocks longest first).

    python -m gpufolio_projects.flash_attention.lab.tile_balance [--sms 132] [--bwd]
"""
from __future__ import annotations

import argparse
import heapq

from ..kernels import tile_order as to


def busiest(tiles: list[list[int]], costs: list[int]) -> int:
    """The busiest CTA's work (key blocks plus the per-tile overhead)."""
    return max(sum(costs[t] + to.TILE_OVERHEAD for t in mine) for mine in tiles)


def round_robin(n_tiles: int, ctas: int) -> list[list[int]]:
    """Tile t to CTA t mod ctas."""
    return [list(range(c, n_tiles, ctas)) for c in range(ctas)]


def list_schedule_end(costs: list[int], sms: int) -> int:
    """When the last SM finishes if each CTA, in launch order, goes to the SM that frees first."""
    free = [0] * sms
    for cost in costs:
        heapq.heappush(free, heapq.heappop(free) + cost)
    return max(free)


def bwd_costs(seqlen: int, n_bh: int, group: int) -> list[int]:
    """The causal backward's CTA costs (query blocks of 64 rows plus one) in launch order: heads in groups of
    ``group``, each group's key blocks (128 keys) from the first to the last, its heads in turn within one."""
    n_kb, n_qb = -(-seqlen // 128), -(-seqlen // 64)
    return [n_qb - 2 * n + 1 for g in range(0, n_bh, group) for n in range(n_kb) for _ in range(min(group, n_bh - g))]


def bwd_group(seqlen: int, head_dim: int, n_bh: int) -> int:
    """Heads per causal group, as ``gluon_bwd.gluon_attention_bwd`` sets ``GROUP``: as many as keep their Q and dO
    (bf16) and dQ's fp32 sums within ``GROUP_BYTES`` of L2. (The launcher computes it inline; a change to one
    is a change to both.)"""
    return max(1, min(n_bh, to.GROUP_BYTES // (seqlen * head_dim * (2 + 2 + 4))))


def main_bwd(sms: int) -> None:
    print(f"causal backward, batch·S = 16k tokens, 16 heads, D = 128, {sms} SMs: last SM's end / the ideal")
    print(f"{'S':>6} {'heads/group':>11} {'head after head':>16} {'head groups':>12}")
    for seqlen in (1024, 2048, 4096, 8192, 16384):
        n_bh = 16 * (16384 // seqlen)
        group = bwd_group(seqlen, 128, n_bh)
        ideal = sum(bwd_costs(seqlen, n_bh, 1)) / sms
        print(f"{seqlen:>6} {group:>11} {list_schedule_end(bwd_costs(seqlen, n_bh, 1), sms) / ideal:>16.3f} "
              f"{list_schedule_end(bwd_costs(seqlen, n_bh, group), sms) / ideal:>12.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sms", type=int, default=132, help="CTAs of the persistent grid (the H200's SMs)")
    ap.add_argument("--bwd", action="store_true", help="the causal Gluon backward's launch order instead")
    a = ap.parse_args()
    if a.bwd:
        return main_bwd(a.sms)
    print(f"causal, batch·S = 16k tokens, 16 heads, D = 128, {a.sms} CTAs: busiest CTA's work / the average")
    print(f"{'S':>6} {'heads/group':>11} {'round-robin':>12} {'schedule':>9}")
    for seqlen in (512, 1024, 2048, 4096, 8192, 16384):
        n_bh = 16 * (16384 // seqlen)
        everyone = to.tile_costs(seqlen, n_bh, True, group=n_bh)  # one group: longest first across all heads
        group = to.group_heads(seqlen, 128, n_bh)
        costs = to.tile_costs(seqlen, n_bh, True, group)
        mean = (sum(costs) + len(costs) * to.TILE_OVERHEAD) / a.sms
        print(f"{seqlen:>6} {group:>11} {busiest(round_robin(len(everyone), a.sms), everyone) / mean:>12.3f} "
              f"{busiest(to.lpt_schedule(costs, a.sms), costs) / mean:>9.3f}")


if __name__ == "__main__":
    main()
