"""A row of any width as an unaligned head, a 16-byte-aligned body and a tail, so the body moves as vectors.

Why: Triton emits 16-byte vector loads and stores only where it can prove a run of VEC = 16 / element-size
contiguous elements starts at a multiple of VEC and shares one mask value. With rows of width H the row start
row * H is such a multiple only when H is (the compiler learns that only for H % 16 == 0), and the mask
`col < H` changes value mid-vector unless H is a multiple of VEC: at H = 8191 every access of the plain kernel
is scalar. Split each row instead:

    head  columns [0, head)                     masked scalar accesses, fewer than VEC elements (with the
                                                 tail: one small "edge" tensor, see _row_parts)
    body  columns [head, head + body_len)       row * H + head is a multiple of VEC, and so is body_len:
                                                 16-byte vectors (the hint `tl.multiple_of` states both)
    tail  columns [head + body_len, H)          masked scalar accesses, fewer than VEC elements

Phases: row r's start is r * H (mod VEC), which repeats every P = VEC / gcd(H, VEC) rows. Grouping rows by
r mod P (the "phase") gives every row a program handles the same head, so one load of the weight per program
lines up with all of its rows, and the backward's dweight partial stays in one set of registers.
Row r = phase + P * k: tile t of a phase holds k in [t * ROWS, (t + 1) * ROWS).
"""
from __future__ import annotations

import math

import triton
import triton.language as tl


def vec_elems(element_size: int) -> int:
    """Elements per 16-byte vector."""
    return max(1, 16 // element_size)


def n_phases(n_cols: int, vec: int) -> int:
    """How many rows until the row start's offset within a 16-byte vector repeats (1 when H % VEC == 0)."""
    return vec // math.gcd(n_cols, vec)


def body_block(n_cols: int, vec: int) -> int:
    """Register block for the body: the longest body, floor(H / VEC) * VEC, rounded up to a power of two.
    At H = 4097 that is 4096, not next_pow2(4097) = 8192 with half the lanes idle."""
    return triton.next_power_of_2(max(n_cols // vec * vec, vec))


@triton.jit
def _phase_rows(phase, tile, P, ROWS: tl.constexpr):
    """Row indices [ROWS, 1] (int64) of tile ``tile`` of ``phase``: rows phase + P * k."""
    k = tile * ROWS + tl.arange(0, ROWS)
    return (phase + P * k.to(tl.int64))[:, None]


@triton.jit
def _row_parts(n_cols, phase, VEC: tl.constexpr, EDGE: tl.constexpr):
    """The split shared by every row of ``phase``: (head, body_len, edge columns [EDGE], edge mask [EDGE]).
    Head and tail travel together as one "edge" tensor: lanes [0, VEC) are head columns, lanes [VEC, 2 VEC)
    tail columns, the rest idle. EDGE is about one lane per thread, so each thread issues one or two scalar
    accesses for the edges; a [VEC] tensor would be replicated into every thread, and every thread would load
    all of it (on the H200 that cost the backward at H = 4097 more than the vector body gained)."""
    head = (VEC - (phase * n_cols) % VEC) % VEC  # first column whose address is a multiple of VEC elements
    head = tl.minimum(head, n_cols)  # a row narrower than one vector is all head
    body_len = tl.multiple_of((n_cols - head) // VEC * VEC, VEC)
    lane = tl.arange(0, EDGE)
    is_head = lane < VEC
    cols = tl.where(is_head, lane, head + body_len + lane - VEC)
    ok = tl.where(is_head, lane < head, (lane < 2 * VEC) & (cols < n_cols))
    return head, body_len, cols, ok


def edge_lanes(num_warps: int, rows: int, vec: int) -> int:
    """EDGE for a launch: one lane per thread over the ROWS rows of a tile, and at least the 2 VEC it needs."""
    return max(2 * vec, 32 * num_warps // rows)


@triton.jit
def _body_offsets(phase, tile, P, n_cols, head, ROWS: tl.constexpr, BLOCK_N: tl.constexpr, VEC: tl.constexpr):
    """Element offsets [ROWS, BLOCK_N] of the bodies of _phase_rows' rows: each starts on a 16-byte boundary
    (given a 16-byte-aligned base pointer, which Triton checks at launch and specialises on). The hint goes on
    the 1-D row starts, before they are broadcast."""
    k = tile * ROWS + tl.arange(0, ROWS)
    start = tl.multiple_of((phase + P * k.to(tl.int64)) * n_cols + head, VEC)
    return start[:, None] + tl.arange(0, BLOCK_N)[None, :]
