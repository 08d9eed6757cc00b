"""Which tile the Gluon forward runs when, and, persistent, on which CTA: the order and hand-out the kernel uses
(a 1-D grid walking ``tile_of``, which ``gluon_fwd._tile_of`` mirrors on the device; persistent CTAs reading
``flat_schedule``'s lists, packed by ``pack``). Pure Python: the kernel's launcher, ``lab/tile_balance`` and the
tests use it.

A tile is 2·BLOCK_M = 128 query rows of one batch·head. Tile t of a launch (a plain grid runs CTA t on whichever
SM frees first):

- full attention: each head's query blocks in turn (t = bh · n_q + q_block), so the CTAs running together read
  the K/V of a few heads;
- causal: a tile walks only the key blocks up to its last row, so lengths run from 1 to n_q blocks and the
  longest should start first. Longest first across every head, though, put every head's K/V in flight (128 MiB
  at S = 4096 and 64 heads, more than the 50 MiB L2) and measured about 5% slower than head after head. So heads
  go in groups whose K/V fits in ``GROUP_BYTES`` of L2, longest first within each group.

The persistent kernel hands the same order out ahead of time: each tile to the CTA with the least work so far
(longest-processing-time greedy; a tile costs its key blocks plus one for its Q load and epilogue). That is what
the hardware does for a plain grid as SMs free up, computed on the host so the kernel needs no atomic tile
counter. A fixed round-robin (tile t to CTA t mod grid) left the busiest CTA 6% over the average for causal
S = 4096 in the global longest-first order, and far more in the grouped one.
"""
from __future__ import annotations

import heapq

BLOCK = 128  # query rows per tile (the kernel's 2·BLOCK_M) and keys per key block (BLOCK_N)
GROUP_BYTES = 16 << 20  # the K/V a causal head group may keep in flight: a third of the H100/H200's 50 MiB L2
TILE_OVERHEAD = 1  # a tile's Q load, pipeline fill and epilogue, in key blocks (for the hand-out only)


def group_heads(seqlen: int, head_dim: int, n_bh: int) -> int:
    """Heads per causal group: as many as keep their bf16 K and V within ``GROUP_BYTES``, at least one."""
    return max(1, min(n_bh, GROUP_BYTES // (seqlen * head_dim * 2 * 2)))


def tile_of(t: int, n_q: int, n_bh: int, group: int, causal: bool) -> tuple[int, int]:
    """(query block, batch·head) of tile t: ``_tile_of`` in the kernel."""
    if causal:
        span = n_q * group
        g = t // span
        heads = min(group, n_bh - g * group)  # the last group may be smaller
        r = t - g * span
        return n_q - 1 - r // heads, g * group + r % heads
    return t % n_q, t // n_q


def key_blocks(q_block: int, seqlen: int, causal: bool) -> int:
    """Key blocks a tile walks (Sq == Sk): all, or causally up to its last query row."""
    kv_end = min(seqlen, (q_block + 1) * BLOCK) if causal else seqlen
    return -(-kv_end // BLOCK)


def tile_costs(seqlen: int, n_bh: int, causal: bool, group: int) -> list[int]:
    """Key blocks of every tile, in launch order."""
    n_q = -(-seqlen // BLOCK)
    return [key_blocks(tile_of(t, n_q, n_bh, group, causal)[0], seqlen, causal) for t in range(n_q * n_bh)]


def lpt_schedule(costs: list[int], ctas: int) -> list[list[int]]:
    """Each CTA's tiles, in order: tile after tile to the CTA with the least work so far (ties: lowest CTA)."""
    loads = [(0, c) for c in range(ctas)]
    tiles: list[list[int]] = [[] for _ in range(ctas)]
    for t, cost in enumerate(costs):
        load, c = heapq.heappop(loads)
        tiles[c].append(t)
        heapq.heappush(loads, (load + cost + TILE_OVERHEAD, c))
    return tiles


def pack(q_block: int, bh: int) -> int:
    """A schedule entry: the tile's query block and batch·head in one int32 (``_unpack_tile`` in the kernel), so
    the persistent kernel keeps no group arithmetic live next to its accumulators."""
    if not (0 <= bh < 1 << 16 and 0 <= q_block < 1 << 15):
        raise ValueError(f"tile (query block {q_block}, batch·head {bh}) does not fit a schedule entry: the "
                         "persistent kernel takes at most 65536 batch·heads and 32768 query blocks")
    return q_block << 16 | bh


def flat_schedule(tiles: list[list[int]], n_q: int, n_bh: int, group: int, causal: bool) -> list[int]:
    """The schedule as the kernel reads it: ctas + 1 offsets into the array itself, then every CTA's tiles as
    packed (query block, batch·head) (CTA c runs entries offsets[c] to offsets[c + 1] - 1)."""
    offsets = [len(tiles) + 1]
    for mine in tiles:
        offsets.append(offsets[-1] + len(mine))
    return offsets + [pack(*tile_of(t, n_q, n_bh, group, causal)) for mine in tiles for t in mine]
