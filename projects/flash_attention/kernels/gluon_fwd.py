"""A warp-specialised FlashAttention forward for Hopper (sm_90a) in Gluon, the step after the Triton kernels:
TMA loads into an mbarrier ring, two consumer warpgroups on wgmma, ping-ponging on the tensor cores.
Reached through ``flash_attention(..., backend="gluon")`` (``"gluon_overlap"`` adds the intra-warpgroup
overlap, ``"gluon_lean"`` the lean per-key-block synchronisation on top of it, ``"gluon_under_pv"`` the softmax
running under P·V on top of that, ``"gluon_persistent"`` persistent CTAs on top of that); its backward is the
Triton one (kernels/bwd.py), fed this kernel's O and LSE.

Written against triton 3.6's Gluon (``gl.warp_specialize(functions_and_args, worker_num_warps,
worker_num_regs)``, the first pair being the default partition; ``tma.async_copy_global_to_shared``); later
Gluon renamed and reshaped several of these, so it runs on triton 3.6 only (``unavailable`` says why not).

Design (one CTA per tile of 128 query rows of one (batch, head); a 1-D grid of cdiv(S, 128) · B·H tiles in the
order of ``tile_order.py``: full, head after head; causal, heads in groups whose K/V fits in L2, the longest
tiles of a group first):

- Tiles: each consumer owns BLOCK_M = 64 query rows (one wgmma M per warpgroup), so S = Q·Kᵀ (64 × 128 fp32)
  and O (64 × D fp32) are 64 registers each per thread at D = 128 — FlashAttention-3's split for D = 128;
  128 rows per warpgroup would need ~256 accumulator registers and spill. BLOCK_N = 128 keys per step.
- Shared memory: Q as two 64 × D tiles, K and V as STAGES-deep rings of BLOCK_N × D tiles (NVMMA 128-byte
  swizzle, what both TMA and wgmma read). D = 128, STAGES = 2: 32 KiB + 2 × 2 × 32 KiB = 160 KiB of 227.
  D = 64: STAGES = 3, 16 + 96 KiB.
- Roles (``gl.warp_specialize``): the default partition (4 warps) is consumer 0, worker 0 (4 warps) is
  consumer 1, worker 1 (1 warp) is the producer that only issues TMA. The producer's warp is padded to a
  warpgroup, so 12 warps run. Registers per thread (``setmaxnreg``): producer 24 (it holds addresses only),
  consumer worker 240, and Triton hands the default partition the rest of the 168 × 3 warpgroups it compiled
  for: 504 - 240 - 24 = 240, so both consumers get 240 (64,512 of the SM's 65,536). ptxas reports no spills.
- Barriers (all count 1 unless said): ``q_bar`` (producer expects both Q tiles' bytes); per stage
  ``k_ready``/``v_ready`` (producer's expect-tx, completed by TMA) and ``k_empty``/``v_empty`` (count 2: each
  consumer arrives once it has waited out the wgmma that read the slot). K and V have their own barriers so
  S = Q·Kᵀ starts while V is still landing and a K slot refills while P·V still reads its V. The producer
  waits on ``*_empty`` with the flipped phase, so its first pass through the ring does not block.
- Ping-pong (``PINGPONG``): ``turn[c]`` grants consumer c the tensor cores. Each consumer waits for its turn
  before issuing each of its two GEMMs and hands the turn to the other right after issuing, so one
  warpgroup's softmax runs while the other's GEMM occupies the tensor cores. Grants alternate strictly, so
  the k-th wait on ``turn[c]`` is its k-th completion: phase 0 before Q·Kᵀ, phase 1 before P·V, every
  iteration; ``turn[0]`` is pre-arrived once so consumer 0 goes first. Both consumers run the same number of
  key blocks (causal: the CTA's last row's count), which the strict alternation needs.
- Overlap (``OVERLAP``, FlashAttention-3's intra-warpgroup pipelining): block j's Q·K_jᵀ and block j-1's
  P·V are issued together on one turn; S_j is waited out alone (wgmma wait_group 1) and its softmax runs
  while P_{j-1}·V_{j-1} is still in flight, then O is rescaled. Turns: one for the first Q·Kᵀ, one per
  block, one for the last P·V, so the k-th is phase k & 1. Off by default until it has passed on a GPU.
  In the SASS, though, ptxas moves the wait on P_{j-1}·V_{j-1} up to before the block's first exponential
  (``lab/gluon_compile``: "0 exp under P·V"), so with ``OVERLAP`` alone the softmax does not run under its P·V.
- Softmax under P·V (``UNDER_PV``; needs ``OVERLAP`` and ``PINGPONG``): ptxas hoists a wgmma wait to the top of
  its basic block, and nothing but the wait's latency, which it does not model, argues against it. So the
  consumer takes its next turn (an mbarrier try-wait loop, hence a block boundary) between the softmax and the
  wait on P·V; all 64 exponentials of a block per thread then sit between the waits on S_j and on P_{j-1}·V_{j-1}
  in the SASS. Taking the turn that early changes nothing the other consumer sees (it cannot issue again until
  this one has), and ``lab/gluon_protocol`` plays it. Keeping P·V in flight across the loop's back edge instead
  (its wait at the top of the next block) made ptxas serialise every wgmma ("insufficient register resources").
- Softmax: online, in base 2 (``qk_scale`` = scale · log2 e), fp32 in registers; P is cast to the input
  dtype and fed to P·V from registers (wgmma's A operand), V from shared memory. Masks (ragged tail keys,
  causal diagonal) are applied only on the blocks that need them.
- Lean synchronisation (``LEAN``; off by default, and off the kernel compiles to the PTX it had before LEAN
  existed). Triton 3.6 lowers ``mbarrier.arrive`` from a 4-warp partition as a warpgroup-wide ``bar.sync``
  and one thread's arrive, and its shared-memory analysis adds a ``bar.sync`` before a wait on a barrier
  already waited on or arrived on (it counts a wait as a write, and cannot tell two indices of one allocation
  apart): with ping-pong, 4 ``bar.sync`` per consumer and key block with the overlap, 6 without. LEAN
  removes all it can:
  - every consumer arrive is per-thread (``_arrive``: ``cp.async.mbarrier.arrive.noinc``, with no cp.async
    outstanding an immediate arrive of the executing thread, the only per-thread arrive Gluon 3.6 has), so it
    needs no ``bar.sync``; the barriers count 128 arrivals per consumer (``k_empty``/``v_empty`` 256, each
    turn 128, pre-arrived with 128). A slot is released once all four warps have waited out their wgmma, and
    the turn handed over once all four have issued — what the ``bar.sync`` + one thread guaranteed;
  - the two turns are two allocations, so a wait on one and an arrive on the other are not a hazard;
  - the softmax keeps the scores unscaled and puts the scale in the exponent's FMA (z·scale - max, as
    FlashAttention-3), one FFMA where there were a multiply and a subtract.
  What is left per key block is one ``bar.sync`` per consumer (the analysis's, before the block's first wait;
  two without the overlap, the turn being waited on twice), and each consumer's key-block loop is about 55
  SASS instructions shorter (653 to 597 at D = 128 with the overlap; ``lab/gluon_compile`` counts both).
  ``lab/gluon_protocol`` plays the protocol, both release styles, under random schedules.
- Persistent (``PERSISTENT``; needs ``UNDER_PV``): one CTA per SM, each walking its list of tiles from a schedule
  the host builds once per shape (``tile_order.lpt_schedule``: the launch order above, each tile to the CTA with
  the least work so far; ``sched_ptr``). Q is double-buffered (``q_full``/``q_empty`` per buffer, the
  latter counting both consumers' releases after a tile's last wgmma), so the producer loads tile i + 1's Q and
  first K/V blocks while the consumers finish tile i; the K/V ring and the turns run on across tiles (block j of
  a tile is ring count kv0 + j, its k-th turn turn0 + k, turn0 growing by n + 1 per tile). 197 KiB of shared
  memory at D = 128. No spills as launched (``lab/gluon_compile``, compiled as the launcher specialises the
  headline shape's aligned pointers and lengths).
- Epilogue: O / l with a masked store straight from the wgmma layout (rows past S are computed on the next
  head's rows, or on TMA's zero fill, and dropped); LSE as fp32 [B, H, S] in log2 units (m + log2 l), the
  Triton forward's convention, which its backward reads.

Checked: compiles for sm_90a without a GPU (``lab/gluon_compile``: every head dim, causal, ping-pong, overlap and
lean and under-P·V setting, through ptxas, no spills, no serialised wgmma); on an H200, ``lab/gluon_check``
passed FlashAttention's rule on every case (headline, ragged S, D = 64, causal) for ping-pong and overlap on and
off, and for the lean settings; its ``--under-pv`` cases are the under-P·V schedule's. The GPU tests in
tests/test_gluon.py.

Not done: a TMA store of O, GQA, Sq != Sk, fp8.
"""
from __future__ import annotations

import functools
import math

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import hopper
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from . import tile_order

LOG2E = math.log2(math.e)
GLUON_TRITON = "3.6"  # the triton release whose Gluon API this file is written against
BLOCK_M = 64  # query rows per consumer warpgroup; a CTA covers 2 × BLOCK_M
BLOCK_N = 128  # keys per step
STAGES = {64: 3, 128: 2}  # K/V ring depth per head dim (shared-memory budget above)
CONSUMER_REGS, PRODUCER_REGS = 240, 24
CONSUMER_THREADS = gl.constexpr(128)  # one warpgroup: a LEAN barrier's arrivals per consumer
# The softmax-under-P·V schedules' row reductions in short chains (``_row_max``), by head dim, as
# ``lab/gluon_probe --fwd-settings`` timed them: about 5% faster at D = 64, slower at D = 128.
SHORT_CHAINS = {64: True, 128: False}
assert tile_order.BLOCK == 2 * BLOCK_M == BLOCK_N, "tile_order models the kernel's tiles and key blocks"


@gluon.jit
def _tile_of(t, n_q_blocks, n_bh, group, CAUSAL: gl.constexpr):
    """(query block, batch·head) of tile t (``tile_order.tile_of``): full, each head's query blocks in turn;
    causal, heads in groups of ``group``, the longest tiles (last query blocks) of a group first."""
    if CAUSAL:
        span = n_q_blocks * group
        g = t // span
        heads = gl.minimum(group, n_bh - g * group)  # the last group may be smaller
        r = t - g * span
        return n_q_blocks - 1 - r // heads, g * group + r % heads
    return t % n_q_blocks, t // n_q_blocks


@gluon.jit
def _unpack_tile(packed):
    """(query block, batch·head) of a persistent schedule's entry (``tile_order.pack``: bh in the low 16 bits)."""
    return packed >> 16, packed & 0xFFFF


@gluon.jit
def _key_blocks(q_block, seqlen, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """Key blocks a tile walks: all of them, or causally up to its last query row (Sq == Sk here)."""
    if CAUSAL:
        kv_end = gl.minimum(seqlen, (q_block + 1) * (2 * BLOCK_M))
    else:
        kv_end = seqlen
    return gl.cdiv(kv_end, BLOCK_N)


@gluon.jit
def _load_kv(k_desc, v_desc, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, base, n_blocks, kv0,
             BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """K_j and V_j of one tile into the ring, j < n_blocks; ``kv0`` blocks went through the ring before it."""
    for j in range(n_blocks):
        s = (kv0 + j) % STAGES
        phase = ((kv0 + j) // STAGES) & 1
        kv_row = base + j * BLOCK_N
        mbarrier.wait(k_empty.index(s), phase ^ 1)
        mbarrier.expect(k_ready.index(s), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [kv_row, 0], k_ready.index(s), k_smem.index(s))
        mbarrier.wait(v_empty.index(s), phase ^ 1)
        mbarrier.expect(v_ready.index(s), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [kv_row, 0], v_ready.index(s), v_smem.index(s))


@gluon.jit
def _producer(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_full, q_empty, k_ready, v_ready, k_empty, v_empty,
              seqlen, n_bh, group, sched_ptr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
              CAUSAL: gl.constexpr, PERSISTENT: gl.constexpr):
    # Rows of the [B·H·S, D] views: a tile's (batch, head) starts at bh · S.
    if PERSISTENT:
        # This CTA's tiles from the schedule (tile_order.flat_schedule), Q double-buffered: tile i's Q goes into
        # buffer i % 2 once both consumers are done with tile i - 2, so it lands while tile i - 1 still runs.
        kv0 = 0
        i = 0
        for e in range(gl.load(sched_ptr + gl.program_id(0)), gl.load(sched_ptr + gl.program_id(0) + 1)):
            q_block, bh = _unpack_tile(gl.load(sched_ptr + e))
            n = _key_blocks(q_block, seqlen, BLOCK_M, BLOCK_N, CAUSAL)
            base = bh * seqlen
            q_row = base + q_block * (2 * BLOCK_M)
            buf = i % 2
            mbarrier.wait(q_empty.index(buf), ((i // 2) & 1) ^ 1)
            mbarrier.expect(q_full.index(buf), 2 * q_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(q_desc, [q_row, 0], q_full.index(buf), q_smem.index(2 * buf))
            tma.async_copy_global_to_shared(q_desc, [q_row + BLOCK_M, 0], q_full.index(buf),
                                            q_smem.index(2 * buf + 1))
            _load_kv(k_desc, v_desc, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, base, n, kv0, BLOCK_N,
                     STAGES)
            kv0 += n
            i += 1
    else:
        q_block, bh = _tile_of(gl.program_id(0), gl.cdiv(seqlen, 2 * BLOCK_M), n_bh, group, CAUSAL)
        n = _key_blocks(q_block, seqlen, BLOCK_M, BLOCK_N, CAUSAL)
        base = bh * seqlen
        q_row = base + q_block * (2 * BLOCK_M)
        mbarrier.expect(q_full, 2 * q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [q_row, 0], q_full, q_smem.index(0))
        tma.async_copy_global_to_shared(q_desc, [q_row + BLOCK_M, 0], q_full, q_smem.index(1))
        _load_kv(k_desc, v_desc, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, base, n, 0, BLOCK_N, STAGES)


@gluon.jit
def _scaled_scores(qk, j, rows, row0, seqlen, qk_scale, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr,
                   s_layout: gl.constexpr, LEAN: gl.constexpr):
    """Q·K_jᵀ in base-2 units (LEAN: unscaled, ``_online_softmax`` scales), -inf where a key is past S or
    (causal) after the row."""
    if LEAN:
        z = qk
    else:
        z = qk * qk_scale
    start_n = j * BLOCK_N
    # Only the ragged last block and, causally, the blocks reaching past this consumer's first row mask.
    if (start_n + BLOCK_N > seqlen) or (CAUSAL and start_n + BLOCK_N > row0 + 1):
        cols = start_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        keep = cols[None, :] < seqlen
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        z = gl.where(keep, z, float("-inf"))
    return z


@gluon.jit
def _row_max(z, rows_layout: gl.constexpr):
    """max(z, 1) for a [64, 128] wgmma accumulator in short chains. Each thread holds 32 of a row's 128 values
    (column 8j + 2t + e for its lane's t and all j, e), and ``gl.max`` folds them in one dependent chain of 31
    FMNMX. Split as column 32a + b, the max over a (4 values, in registers) first gives 16 chains of 3 per thread,
    then the 8 left and the quad's lanes: about 12 deep instead of 33, as FlashAttention-4's sm90 softmax does."""
    BLOCK_M: gl.constexpr = z.shape[0]
    BLOCK_N: gl.constexpr = z.shape[1]
    partial = gl.max(gl.reshape(z, [BLOCK_M, 4, BLOCK_N // 4]), 1)
    return gl.convert_layout(gl.max(partial, 1), rows_layout)


@gluon.jit
def _row_partial_sums(p):
    """Per-lane partial row sums [64, 4] of a [64, 128] wgmma accumulator: each thread adds its own 32 values of
    a row (column 32a + 8j + 2t + e: over a first, 16 chains of 3, then e and j) and the quad's four lanes keep
    their sums apart, to be added once in the epilogue (``_row_total``) instead of by two shuffles per key
    block."""
    BLOCK_M: gl.constexpr = p.shape[0]
    BLOCK_N: gl.constexpr = p.shape[1]
    x = gl.sum(gl.reshape(p, [BLOCK_M, 4, BLOCK_N // 32, 4, 2]), 1)  # [64, j, t, e]
    return gl.sum(gl.sum(x, 3), 1)  # [64, t]


@gluon.jit
def _row_total(l_part, rows_layout: gl.constexpr):
    """The row sums from ``_row_partial_sums``'s lanes (the quad's two shuffles, once per tile)."""
    return gl.convert_layout(gl.sum(l_part, 1), rows_layout)


@gluon.jit
def _online_softmax_short(z, m_i, l_part, qk_scale, rows_layout: gl.constexpr):
    """``_online_softmax`` (LEAN) with the row max in short chains and the row sum kept per lane (``l_part``,
    [64, 4]): (P, new running max, new partial sums, alpha)."""
    m_new = gl.maximum(m_i, _row_max(z, rows_layout) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(z * qk_scale - m_new[:, None])
    part_rows: gl.constexpr = gl.SliceLayout(1, l_part.type.layout)
    return p, m_new, l_part * gl.convert_layout(alpha, part_rows)[:, None] + _row_partial_sums(p), alpha


@gluon.jit
def _online_softmax(z, m_i, l_i, qk_scale, LEAN: gl.constexpr):
    """(P, new running max, new running sum, alpha = the factor that rescales what came before); the max is
    in base-2 units. LEAN: ``z`` is unscaled, so the scale rides in the exponent's FMA (z·scale - max, as
    FlashAttention-3 does) instead of a multiply of its own; the max of z, then scaled, is the same max."""
    if LEAN:
        m_new = gl.maximum(m_i, gl.max(z, 1) * qk_scale)
        alpha = gl.exp2(m_i - m_new)
        p = gl.exp2(z * qk_scale - m_new[:, None])
    else:
        m_new = gl.maximum(m_i, gl.max(z, 1))
        alpha = gl.exp2(m_i - m_new)
        p = gl.exp2(z - m_new[:, None])
    return p, m_new, l_i * alpha + gl.sum(p, 1), alpha


@gluon.jit
def _arrive(bar, LEAN: gl.constexpr):
    """This consumer warpgroup's arrive. Default: ``mbarrier.arrive``, one thread's arrive, which triton 3.6
    lowers behind a warpgroup-wide ``bar.sync``. LEAN: each of the 128 threads arrives for itself, with no
    ``bar.sync`` — ``cp.async.mbarrier.arrive.noinc`` with no cp.async outstanding, Gluon 3.6's only per-thread
    arrive — so the barrier counts 128 per warpgroup and completes once every warp has got here."""
    if LEAN:
        async_copy.mbarrier_arrive(bar, increment_count=False)
    else:
        mbarrier.arrive(bar)


@gluon.jit
def _mma_on_turn(a, b, acc, use_acc: gl.constexpr, ready, empty, my_turn, other_turn, j, STAGES: gl.constexpr,
                 PINGPONG: gl.constexpr, LEAN: gl.constexpr, turn_phase, TAKE_TURN: gl.constexpr = True):
    """acc (+)= a·b for block j: wait for the block's slot, take this consumer's turn (unless already taken),
    issue, hand the turn over, wait the MMA out, release the slot. ``b`` is the slot's view (K_jᵀ or V_j)."""
    mbarrier.wait(ready.index(j % STAGES), (j // STAGES) & 1)
    if PINGPONG and TAKE_TURN:
        mbarrier.wait(my_turn, turn_phase)
    acc = hopper.warpgroup_mma(a, b, acc, use_acc=use_acc, is_async=True)
    if PINGPONG:
        _arrive(other_turn, LEAN)
    acc = hopper.warpgroup_mma_wait(0, deps=[acc, a, b])[0]
    _arrive(empty.index(j % STAGES), LEAN)
    return acc


@gluon.jit
def _qk(q, k_smem, k_ready, k_empty, my_turn, other_turn, j, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
        STAGES: gl.constexpr, PINGPONG: gl.constexpr, LEAN: gl.constexpr, turn_phase, s_layout: gl.constexpr):
    """S = Q·K_jᵀ on its own turn, waited out; releases K_j's slot."""
    return _mma_on_turn(q, k_smem.index(j % STAGES).permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                        False, k_ready, k_empty, my_turn, other_turn, j, STAGES, PINGPONG, LEAN, turn_phase)


@gluon.jit
def _pv(p_op, acc, v_smem, v_ready, v_empty, my_turn, other_turn, j, STAGES: gl.constexpr, PINGPONG: gl.constexpr,
        LEAN: gl.constexpr, turn_phase, TAKE_TURN: gl.constexpr = True):
    """O += P_j·V_j on its own turn, waited out; releases V_j's slot."""
    return _mma_on_turn(p_op, v_smem.index(j % STAGES), acc, True, v_ready, v_empty, my_turn, other_turn, j,
                        STAGES, PINGPONG, LEAN, turn_phase, TAKE_TURN)


@gluon.jit
def _consumer_tile(q, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, my_turn, other_turn, o_ptr, lse_ptr,
                   seqlen, qk_scale, q_block, bh, n_blocks, kv0, turn0, HALF: gl.constexpr, BLOCK_M: gl.constexpr,
                   BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                   PINGPONG: gl.constexpr, OVERLAP: gl.constexpr, LEAN: gl.constexpr, UNDER_PV: gl.constexpr,
                   SHORT: gl.constexpr = False):
    """One tile (query block q_block of bh) for one consumer, Q in shared memory already: its key-block loop and
    epilogue. ``kv0`` key blocks went through the K/V ring before this tile and ``turn0`` turns were this
    consumer's (both 0 without persistence): slot and phase of block j are those of ring count kv0 + j, and the
    k-th turn of the tile has phase (turn0 + k) & 1."""
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    s_rows: gl.constexpr = gl.SliceLayout(1, s_layout)
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)
    dtype: gl.constexpr = q.dtype

    row0 = q_block * (2 * BLOCK_M) + HALF * BLOCK_M  # first query row of this consumer
    rows = row0 + gl.arange(0, BLOCK_M, layout=s_rows)
    m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, s_rows)
    if SHORT:  # per-lane partial sums, [BLOCK_M, 4], added up in the epilogue
        l_i = _row_partial_sums(gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout))
    else:
        l_i = gl.full([BLOCK_M], 0.0, gl.float32, s_rows)
    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, o_layout)

    if OVERLAP:
        # Block j's Q·K_jᵀ and block j-1's P·V go out on one turn; S_j is waited out alone (wait_group 1)
        # and its softmax runs while P_{j-1}·V_{j-1} is still on the tensor cores. One turn per block, plus
        # one for the first Q·Kᵀ and one for the last P·V: the k-th turn is phase k & 1.
        # UNDER_PV takes each turn early, between the previous block's softmax and its wait on P·V: ptxas hoists
        # a wgmma wait to the top of its basic block, and the turn's try-wait loop is a block boundary that keeps
        # the wait on P_{j-1}·V_{j-1} below the softmax of S_j. (Keeping P·V in flight across the back edge, its
        # wait at the top of the next block, made ptxas serialise every wgmma instead.)
        qk = _qk(q, k_smem, k_ready, k_empty, my_turn, other_turn, kv0, BLOCK_M, BLOCK_N, STAGES, PINGPONG, LEAN,
                 turn0 & 1, s_layout)
        z = _scaled_scores(qk, 0, rows, row0, seqlen, qk_scale, BLOCK_N, CAUSAL, s_layout, LEAN)
        if SHORT:
            p, m_i, l_i, alpha = _online_softmax_short(z, m_i, l_i, qk_scale, s_rows)
        else:
            p, m_i, l_i, alpha = _online_softmax(z, m_i, l_i, qk_scale, LEAN)
        p_op = gl.convert_layout(p.to(dtype), p_layout)
        if UNDER_PV:
            mbarrier.wait(my_turn, (turn0 + 1) & 1)
        for j in range(1, n_blocks):
            c = kv0 + j  # ring count of block j
            s = c % STAGES
            prev = (c - 1) % STAGES
            k_t = k_smem.index(s).permute((1, 0))
            v = v_smem.index(prev)
            mbarrier.wait(k_ready.index(s), (c // STAGES) & 1)
            mbarrier.wait(v_ready.index(prev), ((c - 1) // STAGES) & 1)
            if PINGPONG and not UNDER_PV:
                mbarrier.wait(my_turn, (turn0 + j) & 1)
            qk = hopper.warpgroup_mma(q, k_t, gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout), use_acc=False,
                                      is_async=True)
            acc = hopper.warpgroup_mma(p_op, v, acc, is_async=True)
            if PINGPONG:
                _arrive(other_turn, LEAN)
            qk = hopper.warpgroup_mma_wait(1, deps=[qk, q, k_t])[0]
            _arrive(k_empty.index(s), LEAN)
            z = _scaled_scores(qk, j, rows, row0, seqlen, qk_scale, BLOCK_N, CAUSAL, s_layout, LEAN)
            if SHORT:
                p, m_i, l_i, alpha = _online_softmax_short(z, m_i, l_i, qk_scale, s_rows)
            else:
                p, m_i, l_i, alpha = _online_softmax(z, m_i, l_i, qk_scale, LEAN)
            if UNDER_PV:
                mbarrier.wait(my_turn, (turn0 + j + 1) & 1)
            acc = hopper.warpgroup_mma_wait(0, deps=[acc, p_op, v])[0]
            _arrive(v_empty.index(prev), LEAN)
            acc = acc * gl.convert_layout(alpha, o_rows)[:, None]
            p_op = gl.convert_layout(p.to(dtype), p_layout)
        # The last P·V, on the last turn (phase n_blocks & 1; UNDER_PV has taken it already).
        acc = _pv(p_op, acc, v_smem, v_ready, v_empty, my_turn, other_turn, kv0 + n_blocks - 1, STAGES, PINGPONG,
                  LEAN, (turn0 + n_blocks) & 1, TAKE_TURN=not UNDER_PV)
    else:
        # Two turns per block, Q·Kᵀ then P·V: phase 0 then phase 1 (turn0 is even: two turns per block).
        for j in range(n_blocks):
            qk = _qk(q, k_smem, k_ready, k_empty, my_turn, other_turn, kv0 + j, BLOCK_M, BLOCK_N, STAGES, PINGPONG,
                     LEAN, 0, s_layout)
            z = _scaled_scores(qk, j, rows, row0, seqlen, qk_scale, BLOCK_N, CAUSAL, s_layout, LEAN)
            p, m_i, l_i, alpha = _online_softmax(z, m_i, l_i, qk_scale, LEAN)
            acc = acc * gl.convert_layout(alpha, o_rows)[:, None]
            p_op = gl.convert_layout(p.to(dtype), p_layout)
            acc = _pv(p_op, acc, v_smem, v_ready, v_empty, my_turn, other_turn, kv0 + j, STAGES, PINGPONG, LEAN, 1)

    # Epilogue: rows at or past S belong to no query of this head and are dropped.
    if SHORT:
        l_i = _row_total(l_i, s_rows)
    o = acc / gl.convert_layout(l_i, o_rows)[:, None]
    o_r = row0 + gl.arange(0, BLOCK_M, layout=o_rows)
    o_d = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, o_layout))
    head_rows = bh.to(gl.int64) * seqlen
    offs = (head_rows + o_r)[:, None] * HEAD_DIM + o_d[None, :]
    gl.store(o_ptr + offs, o.to(dtype), mask=(o_r < seqlen)[:, None])
    lse = m_i + gl.log2(l_i)  # log2 units, as kernels/fwd.py stores it for the backward
    gl.store(lse_ptr + head_rows + rows, lse, mask=rows < seqlen)


@gluon.jit
def _consumer(q_smem, k_smem, v_smem, q_full, q_empty, k_ready, v_ready, k_empty, v_empty, my_turn, other_turn,
              o_ptr, lse_ptr, seqlen, qk_scale, n_bh, group, sched_ptr, HALF: gl.constexpr, BLOCK_M: gl.constexpr,
              BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
              PINGPONG: gl.constexpr, OVERLAP: gl.constexpr, LEAN: gl.constexpr, UNDER_PV: gl.constexpr,
              PERSISTENT: gl.constexpr, SHORT: gl.constexpr):
    if not LEAN:  # one [2, 1] allocation of both turns, passed as both
        my_turn = my_turn.index(HALF)
        other_turn = other_turn.index(1 - HALF)
    if PERSISTENT:
        # The producer's tiles, in its order; n + 1 turns per tile (persistent runs the overlap's schedule).
        kv0 = 0
        turn0 = 0
        i = 0
        for e in range(gl.load(sched_ptr + gl.program_id(0)), gl.load(sched_ptr + gl.program_id(0) + 1)):
            q_block, bh = _unpack_tile(gl.load(sched_ptr + e))
            n = _key_blocks(q_block, seqlen, BLOCK_M, BLOCK_N, CAUSAL)
            buf = i % 2
            mbarrier.wait(q_full.index(buf), (i // 2) & 1)
            _consumer_tile(q_smem.index(2 * buf + HALF), k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, my_turn,
                           other_turn, o_ptr, lse_ptr, seqlen, qk_scale, q_block, bh, n, kv0, turn0, HALF, BLOCK_M,
                           BLOCK_N, HEAD_DIM, STAGES, CAUSAL, PINGPONG, OVERLAP, LEAN, UNDER_PV, SHORT)
            _arrive(q_empty.index(buf), LEAN)  # every wgmma reading this Q has been waited out
            kv0 += n
            turn0 += n + 1
            i += 1
    else:
        q_block, bh = _tile_of(gl.program_id(0), gl.cdiv(seqlen, 2 * BLOCK_M), n_bh, group, CAUSAL)
        n = _key_blocks(q_block, seqlen, BLOCK_M, BLOCK_N, CAUSAL)
        mbarrier.wait(q_full, 0)
        _consumer_tile(q_smem.index(HALF), k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, my_turn, other_turn,
                       o_ptr, lse_ptr, seqlen, qk_scale, q_block, bh, n, 0, 0, HALF, BLOCK_M, BLOCK_N, HEAD_DIM,
                       STAGES, CAUSAL, PINGPONG, OVERLAP, LEAN, UNDER_PV, SHORT)


@gluon.jit
def _attn_fwd_ws_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, n_bh, group, sched_ptr,
                        HEAD_DIM: gl.constexpr,
                        BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
                        CAUSAL: gl.constexpr, PINGPONG: gl.constexpr, OVERLAP: gl.constexpr, LEAN: gl.constexpr,
                        UNDER_PV: gl.constexpr, PERSISTENT: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                        PRODUCER_REGS: gl.constexpr, SHORT: gl.constexpr):
    dtype: gl.constexpr = q_desc.dtype
    q_buffers: gl.constexpr = 2 if PERSISTENT else 1  # persistent: the next tile's Q lands during this one
    q_smem = gl.allocate_shared_memory(dtype, [2 * q_buffers, BLOCK_M, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
    bar_layout: gl.constexpr = mbarrier.MBarrierLayout()
    if PERSISTENT:
        q_full = gl.allocate_shared_memory(gl.int64, [2, 1], bar_layout)
        q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], bar_layout)
    else:
        q_full = gl.allocate_shared_memory(gl.int64, [1], bar_layout)
        q_empty = q_full  # unused: one tile per CTA
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    if LEAN:
        # Two allocations, not two indices of one: triton 3.6's shared-memory hazard analysis (membar) cannot tell
        # indices of one allocation apart, and puts a bar.sync between the wait on one turn and the arrive on the
        # other.
        turn_0 = gl.allocate_shared_memory(gl.int64, [1], bar_layout)
        turn_1 = gl.allocate_shared_memory(gl.int64, [1], bar_layout)
    else:
        turn = gl.allocate_shared_memory(gl.int64, [2, 1], bar_layout)
        turn_0 = turn  # both consumers get the pair and index it
        turn_1 = turn
    arrivals: gl.constexpr = CONSUMER_THREADS if LEAN else 1  # per consumer and release (or hand-over)
    if PERSISTENT:
        for i in gl.static_range(2):
            mbarrier.init(q_full.index(i), count=1)
            mbarrier.init(q_empty.index(i), count=2 * arrivals)
    else:
        mbarrier.init(q_full, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2 * arrivals)
        mbarrier.init(v_empty.index(i), count=2 * arrivals)
    if LEAN:
        mbarrier.init(turn_0, count=arrivals)
        mbarrier.init(turn_1, count=arrivals)
        if PINGPONG:
            mbarrier.arrive(turn_0, count=arrivals)  # consumer 0 takes the tensor cores first
    else:
        for i in gl.static_range(2):
            mbarrier.init(turn.index(i), count=1)
        if PINGPONG:
            mbarrier.arrive(turn.index(0))  # consumer 0 takes the tensor cores first
    hopper.fence_async_shared()

    # Each partition's tuple is spelled out: built by concatenating tuples, its constexprs arrived as tensors.
    gl.warp_specialize([
        (_consumer, (q_smem, k_smem, v_smem, q_full, q_empty, k_ready, v_ready, k_empty, v_empty, turn_0, turn_1,
                     o_ptr, lse_ptr, seqlen, qk_scale, n_bh, group, sched_ptr, 0, BLOCK_M, BLOCK_N, HEAD_DIM, STAGES,
                     CAUSAL, PINGPONG, OVERLAP, LEAN, UNDER_PV, PERSISTENT, SHORT)),
        (_consumer, (q_smem, k_smem, v_smem, q_full, q_empty, k_ready, v_ready, k_empty, v_empty, turn_1, turn_0,
                     o_ptr, lse_ptr, seqlen, qk_scale, n_bh, group, sched_ptr, 1, BLOCK_M, BLOCK_N, HEAD_DIM, STAGES,
                     CAUSAL, PINGPONG, OVERLAP, LEAN, UNDER_PV, PERSISTENT, SHORT)),
        (_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_full, q_empty, k_ready, v_ready, k_empty,
                     v_empty, seqlen, n_bh, group, sched_ptr, BLOCK_M, BLOCK_N, STAGES, CAUSAL, PERSISTENT)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


def kernel_args(head_dim: int, causal: bool, pingpong: bool, overlap: bool = False, lean: bool = False,
                under_pv: bool = False, persistent: bool = False) -> dict:
    """The kernel's constexprs and launch options for a head dim (shared by the launcher and compile checks)."""
    if head_dim not in STAGES:
        raise ValueError(f"head dim {head_dim} unsupported: the Gluon forward takes {sorted(STAGES)}")
    if under_pv and not (overlap and pingpong):
        raise ValueError("under_pv runs the softmax under the overlap's P·V and keeps its wait late with the "
                         "ping-pong turn: it needs overlap=True and pingpong=True")
    if persistent and not under_pv:
        raise ValueError("persistent is written for the softmax-under-P·V schedule: it needs under_pv=True")
    return dict(HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGES=STAGES[head_dim], CAUSAL=causal,
                PINGPONG=pingpong, OVERLAP=overlap, LEAN=lean, UNDER_PV=under_pv, PERSISTENT=persistent,
                CONSUMER_REGS=CONSUMER_REGS, PRODUCER_REGS=PRODUCER_REGS,
                SHORT=bool(under_pv and SHORT_CHAINS[head_dim]), num_warps=4)


def smem_layouts(dtype_bits: int, head_dim: int):
    """(Q tile layout, K/V tile layout): NVMMA swizzles that TMA writes and wgmma reads."""
    dt = {16: gl.bfloat16}[dtype_bits]  # the swizzle depends only on the element width
    return (gl.NVMMASharedLayout.get_default_for([BLOCK_M, head_dim], dt),
            gl.NVMMASharedLayout.get_default_for([BLOCK_N, head_dim], dt))


def unavailable() -> str | None:
    """Why this kernel cannot run with the installed triton, or None."""
    if not triton.__version__.startswith(GLUON_TRITON + "."):
        return (f"the Gluon forward is written against triton {GLUON_TRITON}'s Gluon API; "
                f"this is triton {triton.__version__}")
    return None


def _check_inputs(q, k, v) -> None:
    import torch

    if not (q.is_cuda and torch.cuda.get_device_capability(q.device) == (9, 0)):
        where = torch.cuda.get_device_name(q.device) if q.is_cuda else q.device.type
        raise RuntimeError(f"the Gluon forward needs a Hopper GPU (sm_90a: wgmma, TMA), not {where}")
    if q.dtype not in (torch.bfloat16, torch.float16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k, v must all be bfloat16 or float16, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k, v must share one [B, H, S, D] shape, got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise ValueError("q, k, v must be contiguous [B, H, S, D]")


def gluon_attention_fwd(q, k, v, causal: bool = False, scale: float | None = None, pingpong: bool = True,
                        overlap: bool = False, lean: bool = False, under_pv: bool = False, persistent: bool = False):
    """(O [B, H, S, D] in q's dtype, LSE [B, H, S] fp32 in log2 units) for contiguous bf16/fp16 q, k, v of one
    [B, H, S, D] shape on a Hopper GPU, D in (64, 128), with triton 3.6."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    _check_inputs(q, k, v)
    why = unavailable()
    if why:
        raise RuntimeError(why)
    B, H, S, D = q.shape
    args = kernel_args(D, causal, pingpong, overlap, lean, under_pv, persistent)
    scale = D ** -0.5 if scale is None else scale
    q_layout, kv_layout = smem_layouts(16, D)
    # [B·H·S, D] views: a tile that runs past one head's S reads the next head's rows (or TMA's zero fill at
    # the end), which the kernel masks (keys) or drops (query rows).
    q2, k2, v2 = (t.view(B * H * S, D) for t in (q, k, v))
    q_desc = TensorDescriptor.from_tensor(q2, [BLOCK_M, D], q_layout)
    k_desc = TensorDescriptor.from_tensor(k2, [BLOCK_N, D], kv_layout)
    v_desc = TensorDescriptor.from_tensor(v2, [BLOCK_N, D], kv_layout)
    o = torch.empty_like(q)
    lse = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    n_q, n_bh = triton.cdiv(S, 2 * BLOCK_M), B * H
    group = tile_order.group_heads(S, D, n_bh)
    if persistent:  # one CTA per SM (shared memory allows no second), each walking its tiles
        ctas = min(n_q * n_bh, torch.cuda.get_device_properties(q.device).multi_processor_count)
        sched = _schedule(S, n_bh, group, causal, ctas, q.device)
    else:
        ctas, sched = n_q * n_bh, _schedule(S, n_bh, group, causal, 0, q.device)
    _attn_fwd_ws_kernel[(ctas, )](q_desc, k_desc, v_desc, o, lse, S, scale * LOG2E, n_bh, group, sched, **args)
    return o, lse


@functools.cache
def _schedule(seqlen: int, n_bh: int, group: int, causal: bool, ctas: int, device):
    """The persistent kernel's tile lists (``tile_order.flat_schedule``) on the device, built once per shape;
    ctas = 0 (a plain grid, which reads none): one placeholder entry."""
    import torch

    if not ctas:
        return torch.zeros(1, dtype=torch.int32, device=device)
    costs = tile_order.tile_costs(seqlen, n_bh, causal, group)
    tiles = tile_order.lpt_schedule(costs, ctas)
    flat = tile_order.flat_schedule(tiles, triton.cdiv(seqlen, 2 * BLOCK_M), n_bh, group, causal)
    return torch.tensor(flat, dtype=torch.int32, device=device)
