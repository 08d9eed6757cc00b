"""How evenly the persistent Gluon forward's tile hand-out spreads causal work over the SMs, on CPU.

A causal tile (128 query rows of one head) walks as many 128-key blocks as its last row sees, so tiles differ in
length up to S / 128 to one. The persistent kernel (``kernels/gluon_fwd.py``, ``_tile_of``) hands tile t to CTA
t mod grid, in its fixed order (the longest tiles of every head first). A plain launch instead starts the next CTA
on whichever SM frees first. This counts, per sequence length at batch·S = 16k tokens and 16 heads, each CTA's key
blocks under both hand-outs and prints the busiest CTA against the average: the time the last SM keeps the kernel
running while the others idle. A model of the hand-out only (every key block costs the same, no launch gaps).

    python -m gpufolio_projects.flash_attention.lab.tile_balance [--sms 132]
"""
from __future__ import annotations

import argparse
import heapq

BLOCK = 128  # query rows per tile and keys per block (the kernel's 2·BLOCK_M and BLOCK_N)


def causal_tiles(seqlen: int, n_bh: int) -> list[int]:
    """Key blocks of each tile in the persistent kernel's order: query blocks from the last down, every head's
    before the next query block's."""
    n_q = -(-seqlen // BLOCK)
    return [-(-min(seqlen, (n_q - t // n_bh) * BLOCK) // BLOCK) for t in range(n_q * n_bh)]


def round_robin(work: list[int], ctas: int) -> int:
    """The busiest CTA's key blocks when tile t goes to CTA t mod ctas (the persistent kernel)."""
    loads = [0] * ctas
    for t, w in enumerate(work):
        loads[t % ctas] += w
    return max(loads)


def first_free(work: list[int], ctas: int) -> int:
    """The busiest SM's key blocks when each tile goes to whichever SM frees first (a plain launch)."""
    loads = [0] * ctas
    for w in work:
        heapq.heappush(loads, heapq.heappop(loads) + w)
    return max(loads)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sms", type=int, default=132, help="CTAs of the persistent grid (the H200's SMs)")
    a = ap.parse_args()
    print(f"causal, batch·S = 16k tokens, 16 heads, {a.sms} CTAs: busiest CTA's key blocks / the average")
    print(f"{'S':>6} {'round-robin':>12} {'first free':>11}")
    for seqlen in (512, 1024, 2048, 4096, 8192, 16384):
        work = causal_tiles(seqlen, n_bh=16 * (16384 // seqlen))
        mean = sum(work) / a.sms
        print(f"{seqlen:>6} {round_robin(work, a.sms) / mean:>12.3f} {first_free(work, a.sms) / mean:>11.3f}")


if __name__ == "__main__":
    main()
