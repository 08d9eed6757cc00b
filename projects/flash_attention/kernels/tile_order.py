"""Which tile the Gluon forward runs when, and, persistent, on which CTA: a plain grid walks ``tile_of``, and
persistent CTAs read the lists of ``flat_schedule``, built on the host once per shape. Pure Python: the kernel's
launcher, ``lab/tile_balance`` and the tests use it.

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

Full attention has a second loss that no order of whole tiles removes: every tile costs the same, so when the
tiles are not a multiple of the CTAs the last wave runs on some SMs only. At batch·S = 16k tokens and 16 heads
that is 2048 tiles on 132 SMs, 15.5 waves, and 68 CTAs run a 16th tile while 64 idle: about 3% of the kernel.
``split_tail`` cuts the key blocks of those last tiles into one run per CTA (stream-K's tail): a tile's
pieces each leave their unnormalised partial (O, row max, row sum) in a workspace, and one CTA adds the pieces
up at its end (``Unit``). Pieces run first on their CTAs and the combine last, so it finds them long written,
and the combining CTA is the highest-numbered of the tile's: it waits only on CTAs started before it.
"""
from __future__ import annotations

import heapq
from typing import NamedTuple

BLOCK = 128  # query rows per tile (the kernel's 2·BLOCK_M) and keys per key block (BLOCK_N)
GROUP_BYTES = 16 << 20  # the K/V a causal head group may keep in flight: a third of the H100/H200's 50 MiB L2
TILE_OVERHEAD = 1  # a tile's Q load, pipeline fill and epilogue, in key blocks (for the hand-out only)
MIN_PIECE = 4  # key blocks: a split tail's runs are no shorter (each piece pays a tile's overhead)


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


def flat_schedule(units: list[list[Unit]], n_q: int, n_bh: int, group: int, causal: bool) -> list[int]:
    """The schedule as the kernel reads it: ctas + 1 word offsets into the array itself, then every CTA's units
    as ``ENTRY_WORDS`` words each, the tile packed as (query block, batch·head) (CTA c runs the entries from word
    offsets[c] up to offsets[c + 1])."""
    offsets = [len(units) + 1]
    for mine in units:
        offsets.append(offsets[-1] + ENTRY_WORDS * len(mine))
    return offsets + [word for mine in units for u in mine
                      for word in (pack(*tile_of(u.tile, n_q, n_bh, group, causal)), u.kv_lo, u.kv_hi, u.slot,
                                   u.slots)]

class Unit(NamedTuple):
    """One entry of a persistent CTA's list: key blocks [kv_lo, kv_hi) of ``tile``, then (``slots`` = 0) its
    O and LSE written, or (``slots`` = 1) its partial left in workspace slot ``slot``; or, ``kv_lo == kv_hi``, a
    combine: the partials in slots ``slot`` .. ``slot + slots - 1`` added up into ``tile``'s O and LSE."""
    tile: int
    kv_lo: int
    kv_hi: int
    slot: int = 0
    slots: int = 0


def whole_tiles(tiles: list[list[int]], costs: list[int]) -> list[list[Unit]]:
    """A hand-out of whole tiles (``lpt_schedule``'s) as units."""
    return [[Unit(t, 0, costs[t]) for t in mine] for mine in tiles]


def split_tail(n_tiles: int, n_blocks: int, ctas: int) -> tuple[list[list[Unit]], int] | None:
    """(each CTA's units, workspace slots) for ``n_tiles`` tiles of ``n_blocks`` key blocks each: whole tiles
    round-robin over full waves, then the key blocks of the tiles left over cut into one run per CTA, each run
    at least ``MIN_PIECE`` blocks; None where that cuts nothing (the tiles fill whole waves, or runs that long
    would not spread the leftovers over more CTAs than there are leftover tiles)."""
    waves, left = divmod(n_tiles, ctas)
    runs = min(ctas, left * n_blocks // MIN_PIECE)
    if not left or runs <= left:
        return None
    units: list[list[Unit]] = [[] for _ in range(ctas)]
    first = waves * ctas  # the leftover tiles are the last in launch order
    bounds = [first * n_blocks + left * n_blocks * c // runs for c in range(runs + 1)]
    pieces: dict[int, list[tuple[int, int, int]]] = {}  # tile -> (CTA, kv_lo, kv_hi) in block order
    for c in range(runs):
        lo = bounds[c]
        while lo < bounds[c + 1]:
            t, kv_lo = divmod(lo, n_blocks)
            kv_hi = min(n_blocks, kv_lo + bounds[c + 1] - lo)
            pieces.setdefault(t, []).append((c, kv_lo, kv_hi))
            lo += kv_hi - kv_lo
    slot = 0
    combines: dict[int, Unit] = {}
    for t, mine in pieces.items():
        if len(mine) == 1:  # one run held the whole tile
            units[mine[0][0]].append(Unit(t, 0, n_blocks))
            continue
        for i, (c, kv_lo, kv_hi) in enumerate(mine):
            units[c].append(Unit(t, kv_lo, kv_hi, slot + i, 1))
        combines[mine[-1][0]] = Unit(t, 0, 0, slot, len(mine))  # the tile's highest-numbered CTA
        slot += len(mine)
    for t in range(first):
        units[t % ctas].append(Unit(t, 0, n_blocks))
    for c, unit in combines.items():
        units[c].append(unit)
    return units, slot


def units_schedule(costs: list[int], ctas: int, split: bool) -> tuple[list[list[Unit]], int]:
    """(each CTA's units, workspace slots): the split tail where ``split`` and the tiles are all one length and
    it cuts anything, else ``lpt_schedule``'s whole tiles (and no slots)."""
    if split and len(set(costs)) == 1:
        cut = split_tail(len(costs), costs[0], ctas)
        if cut:
            return cut
    return whole_tiles(lpt_schedule(costs, ctas), costs), 0


ENTRY_WORDS = 5  # int32 words per unit in ``flat_schedule``: packed tile, kv_lo, kv_hi, slot, slots
