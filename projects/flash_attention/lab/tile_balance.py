"""How evenly the persistent Gluon forward's tile hand-out spreads causal work over the SMs, on CPU.

A causal tile (128 query rows of one head) walks as many 128-key blocks as its last row sees, so tiles differ in
length up to S / 128 to one. Compared, per sequence length at batch·S = 16k tokens and 16 heads, D = 128, the
busiest CTA's key blocks against the average (the time the last SM keeps the kernel running while the others
idle):

- round-robin: tile t to CTA t mod grid, tiles longest first across every head (the first persistent kernel);
- schedule: ``kernels/tile_order`` — heads in L2-sized groups, longest first within a group, each tile to the
  CTA with the least work so far (the kernel's hand-out now).

A model of the hand-out only (every key block costs the same, a tile one block more; no launch gaps).

    python -m gpufolio_projects.flash_attention.lab.tile_balance [--sms 132]
"""
from __future__ import annotations

import argparse

from ..kernels import tile_order as to


def busiest(tiles: list[list[int]], costs: list[int]) -> int:
    """The busiest CTA's work (key blocks plus the per-tile overhead)."""
    return max(sum(costs[t] + to.TILE_OVERHEAD for t in mine) for mine in tiles)


def round_robin(n_tiles: int, ctas: int) -> list[list[int]]:
    """Tile t to CTA t mod ctas."""
    return [list(range(c, n_tiles, ctas)) for c in range(ctas)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sms", type=int, default=132, help="CTAs of the persistent grid (the H200's SMs)")
    a = ap.parse_args()
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
