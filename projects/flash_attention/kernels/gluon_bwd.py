"""A warp-specialised FlashAttention backward for Hopper (sm_90a) in Gluon, FlashAttention-3's schedule: a TMA
producer warp streams Q and dO blocks through an mbarrier ring past a key block held in shared memory, two consumer
warpgroups accumulate dK and dV in registers, and dQ's share of every block is added into an fp32 buffer by TMA
reduce-adds.

Written against triton 3.6's Gluon, like the forward (``gluon_fwd``), so it runs on triton 3.6 only
(``unavailable`` says why not). Entry point: ``gluon_attention_bwd(do, q, k, v, o, lse, causal, scale)``.

Math (the Triton backward's, kernels/bwd.py, with ``ATOMIC_DQ``): Δ = rowsum(dO ∘ O) first
(``_bwd_preprocess_kernel``); then per key block and query block, in base 2 (qk_scale = scale · log2 e; lse is the
forward's, fp32 [B, H, S] in log2 units, m + log2 l):
    Pᵀ = exp2(K·Qᵀ · qk_scale − lse)    dV += Pᵀ·dO    dPᵀ = V·dOᵀ    dSᵀ = Pᵀ ∘ (dPᵀ − Δ)
    dK += dSᵀ·Q  (times ``scale`` once, at the end)    dQ += dS·K  (fp32 tiles; ``_dq_from_tiles_kernel``
                                                                   then gathers, scales and casts them)

Design (one CTA per BLOCK_N = 128 keys of one (batch, head); grid = (cdiv(S, 128), B·H). Full attention: a
head's key blocks launch one after another. Causal, where key block n sees the query blocks from 2n on, the
launch order is the forward's causal tile order (``_key_block_of``): heads in groups of ``GROUP`` whose Q, dO
and dQ sums fit ``tile_order.GROUP_BYTES`` of L2, each group's key blocks longest first, so no long CTA starts
late and runs alone at the end. Head after head, a model of the hand-out ended 7% past the ideal at S = 4096
and 64 heads, and the causal backward measured 3–4% faster in groups (``lab/gluon_probe --bwd``)):

- Tiles: consumer h (0, 1) owns keys 64·h … 64·h + 63 of the CTA's block (K_h, V_h: 64-row slices of the K and
  V tiles) and steps over BLOCK_M = 64 query rows at a time, so Sᵀ and dPᵀ (64 keys × 64 queries, fp32) are 32
  registers each per thread and dK_h, dV_h (64 × D fp32) 64 each at D = 128 — the 128 accumulator registers
  FlashAttention-3 keeps in each warpgroup.
- Shared memory (D = 128, STAGES = 2; D = 64, STAGES = 4 in brackets): K and V as one 128 × D tile each, loaded
  once, 64 KiB [32]; Q and dO as STAGES-deep rings of 64 × D tiles, 64 KiB [64]; each stage also holds its
  query rows' lse and Δ (64 fp32 each, 1-D TMA copies from [B·H, S rounded up to 4]: a 1-D box must start on a
  16-byte boundary, and an unaligned one is an illegal instruction on the GPU, ``lab/gluon_bwd_probe``), 1 KiB
  [2]; dS as two buffers of 128 keys × 64 queries, 32 KiB [32]; each consumer's share of dQ (64 · D/2 fp32,
  as a [D/2, 64] tile in its registers' order, step 7), 32 KiB [16]. 193 KiB of 227 [146]; a third stage at
  D = 128 fits (226 KiB) but ran slower (``lab/gluon_probe --bwd``). Q, dO, V and dS use the NVMMA 128-byte
  swizzle; K a swizzle half a row wide (128 bytes at D = 128, 64 at D = 64), so each consumer's half of
  K's columns starts on a swizzle atom; dQ's tile no swizzle (each lane writes 16-byte runs, step 7).
- Roles (``gl.warp_specialize``): the default partition (4 warps) is consumer 0, worker 0 (4 warps) consumer 1,
  worker 1 (1 warp) the producer, which only issues TMA. Registers per thread (``setmaxnreg``): producer 24,
  consumers 240 each (Triton hands the default partition 504 − 240 − 24, as in the forward). ptxas: 168
  registers at launch, no spills at either head dim, no serialised wgmma (``lab/gluon_bwd_compile``).
- Per query block i (ring count c = i − the key block's first query block: ring slot c % STAGES, dS buffer
  c % 2), each consumer:
  1. issues Sᵀ = K_h·Q_iᵀ and dPᵀ = V_h·dO_iᵀ (wgmma M = N = 64, K = D, both operands in shared memory, Qᵀ and
     dOᵀ as permuted views) and waits out Sᵀ alone, so dPᵀ runs under the exponentials;
  2. Pᵀ = exp2(Sᵀ·qk_scale − lse), lse read from the stage's shared memory where it is used: dK, dV, Sᵀ and dPᵀ
     are 192 registers at D = 128, and lse and Δ held in registers across the wgmma (16 each per thread, loaded
     from global memory at the top of the iteration) spilled. Keys past S, queries past S (their Q, dO, lse and
     Δ rows are the next head's, or TMA's zero fill) and, causally, keys after the query are masked to −inf,
     only on the blocks that hold such a pair;
  3. dSᵀ = Pᵀ ∘ (dPᵀ − Δ) and Pᵀ cast to the input dtype, before dV's wgmma is issued, so the fp32 Pᵀ and dPᵀ
     die before dV's accumulator is in flight; dV_h += Pᵀ·dO_i with Pᵀ a register A operand (the forward
     feeds P the same way), dO_i from shared memory;
  4. writes its dSᵀ half into dS buffer c % 2 (rows 64·h …, ``stmatrix``), fences it for the async proxy and
     arrives on ``ds_full``; dK_h += dSᵀ·Q_i with dSᵀ from registers (issued here, or after step 5's wgmma
     where ``DQ_FIRST``, see step 6);
  5. once both halves are in (``ds_full``), dQ's share: dS_i·K[:, its columns], dS read from shared memory
     through a permuted view (the wgmma reads A transposed, M-major), M = 64, N = D/2, K = 128 keys: each
     consumer the whole key block for half of D's columns (FlashAttention-3's split at D = 128), so the partial
     dQ is 32 registers at D = 128 on top of dK_h and dV_h, not the 64 of a full-width share of its own keys;
  6. waits out dV, dK and dQ's wgmma and releases the ring slot and the dS buffer; where ``DQ_FIRST`` (causal
     at D = 128, the order ``lab/gluon_probe --bwd`` timed faster there), dK's wgmma is issued after dQ's and
     only dV and dQ are waited out here, so step 7 runs under dK's wgmma, which is waited out after it;
  7. adds the partial dQ into its own tile of the fp32 buffer (one per batch·head, query block and consumer,
     [D/2, 64]): waits until its previous reduce has read the consumer's dQ tile (``tma.store_wait``: the
     issuing thread's bulk group), stores the tile, fences it, and one thread issues a TMA reduce-add
     (``cp.reduce.async.bulk.tensor … .add``). Two warpgroup barriers (``gl.thread_barrier``) order the wait
     before every thread's store and the stores before the issue. The tile holds dQ's values in the order of
     the wgmma's registers (``_fragment_order``, a bit permutation of the indices), so each lane stores
     16-byte runs and a warp's store covers 512 contiguous bytes; a [64, D/2] tile in the 128-byte swizzle,
     the first version, took two wavefronts per 16 lanes' 8-byte stores (a 2-way bank conflict, ``ncu``) and
     one reduce per 32 columns. Rows past S add dS = 0 to the tile's padding. Gluon 3.6's ``hopper.tma``
     exposes no reduce; ``_tma_reduce_add`` wraps the builder's ``create_async_tma_reduce`` as
     ``tma.async_copy_shared_to_global`` wraps the store. (A first version added dQ with ``gl.atomic_add`` from
     registers: its 32 per-element 64-bit addresses per thread, hoisted out of the loop, spilled.)
- Barriers (consumer arrives are per-thread, the forward's LEAN ``_arrive``, ``cp.async.mbarrier.arrive.noinc``:
  128 per consumer warpgroup, no warpgroup ``bar.sync`` per arrive):
  - ``kv_bar`` (count 1): the producer's expect-tx for K and V, completed by TMA; waited once, phase 0.
  - ``q_ready[s]`` (Q and its lse), ``do_ready[s]`` (dO and its Δ) (count 1 each): expect-tx, completed by TMA;
    separate so Sᵀ can start while dO lands. The k-th use of slot s is phase k & 1.
  - ``qdo_empty[s]`` (count 256, both consumers' threads): the slot is free once both have waited out every
    wgmma that read its Q or dO (Sᵀ, dPᵀ, dV, dK) and have read its lse and Δ. The producer waits with the
    flipped phase, so its first pass through the ring does not block.
  - ``ds_full[b]`` (count 256): both consumers wrote and fenced their half of dS buffer b; both wait on it
    before the dQ wgmma, phase (c // 2) & 1.
  - ``ds_empty[b]`` (count 256): both consumers waited out their dQ wgmma on buffer b; each waits on it
    (flipped phase) before writing buffer b again two query blocks later, so one block's dS write never lands
    under the other consumer's dQ read of the block before.
  The consumers can drift at most one query block apart (``ds_full`` holds the faster one); the producer runs
  up to STAGES blocks ahead. Triton's shared-memory analysis adds one warpgroup ``bar.sync`` per query block
  (before the wait on ``ds_full``, which this consumer has just arrived on), two for consumer 1.
- Epilogue: dK_h·scale and dV_h cast to the input dtype, masked store of keys < S from the wgmma layout.
- Causal (bottom-right, the same as top-left here since Sq == Sk): a key block starts at query block 128·n // 64,
  the first whose rows reach key 128·n; full attention walks every query block.

Checked: compiles for sm_90a without a GPU (``lab/gluon_bwd_compile``, D 64 and 128, causal and not, through
ptxas); on a GPU, ``lab/gluon_bwd_check`` holds dQ, dK and dV to FlashAttention's rule against the fp32
reference and ``lab/gluon_bwd_probe`` runs one shape per process (a fault in one does not hide the others).

Not done: overlap of one query block's dQ wgmma and reduce with the next block's Sᵀ and dPᵀ, a dQ-writer warp
(FlashAttention-3's and -4's), GQA, Sq != Sk, fp8, a persistent grid. Not possible in Triton: FlashAttention-3's
and -4's 80-row query blocks for full attention at D = 128 (a register tensor's dims must be powers of two).
Reached through ``flash_attention(..., backend="gluon_bwd")`` (attention.py), the bench's ``gluon_fa_bwd``.
"""
from __future__ import annotations

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language._core import builtin
from triton.experimental.gluon.language.nvidia import hopper
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from . import tile_order
from .gluon_fwd import CONSUMER_THREADS, LOG2E, _arrive, _check_inputs, unavailable

BLOCK_M = 64  # query rows per step (the wgmma N of Sᵀ and dPᵀ)
BLOCK_N = 128  # keys per CTA, 64 per consumer warpgroup (the wgmma M)
STAGES = {64: 4, 128: 2}  # Q/dO ring depth per head dim (the shared-memory budget above)
# dQ's wgmma before dK's, by (head dim, causal), as ``lab/gluon_probe --bwd`` timed both orders: causally at
# D = 128, dQ's store and reduce-add then run under dK's wgmma, which is faster; elsewhere it is slower.
DQ_FIRST = {(64, False): False, (64, True): False, (128, False): False, (128, True): True}
CONSUMER_REGS, PRODUCER_REGS = 240, 24


@gluon.jit
def _query_blocks(n_block, seqlen, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """[first, end) of the query blocks key block ``n_block`` sees: all, or causally (key <= query, Sq == Sk)
    from the first block whose rows reach key BLOCK_N · n_block."""
    if CAUSAL:
        first = (n_block * BLOCK_N) // BLOCK_M
    else:
        first = 0
    return first, gl.cdiv(seqlen, BLOCK_M)


@gluon.jit
def _key_block_of(GROUP: gl.constexpr, CAUSAL: gl.constexpr):
    """(key block, batch·head) of this CTA: full attention, as launched; causal, the launch order walks heads in
    groups of GROUP, each group's key blocks from the first (the longest: it sees every query block) to the last,
    the group's heads in turn within a key block."""
    if CAUSAL:
        n_kblocks = gl.num_programs(0)
        t = gl.program_id(1) * n_kblocks + gl.program_id(0)  # launch order: x fastest
        span = n_kblocks * GROUP
        g = t // span
        heads = gl.minimum(gl.num_programs(1) - g * GROUP, GROUP)  # the last group may be smaller
        r = t - g * span
        return r // heads, g * GROUP + r % heads
    else:
        return gl.program_id(0), gl.program_id(1)


@builtin
def _tma_reduce_add(tensor_desc, coord, src, _semantic=None):
    """TMA reduce-add of shared-memory tile ``src`` into global memory at ``coord`` of ``tensor_desc``
    (``cp.reduce.async.bulk.tensor ... .add``, one bulk group, waited with ``tma.store_wait``). Gluon 3.6's
    ``hopper.tma`` has loads and stores only; its builder binds the reduce, which this wraps as
    ``tma.async_copy_shared_to_global`` wraps the store."""
    from triton._C.libtriton import ir

    coord = _semantic._convert_to_ir_values(coord, require_i64=False)
    _semantic.builder.create_async_tma_reduce(ir.DESCRIPTOR_REDUCE_KIND.ADD, tensor_desc.handle, coord, src.handle)


@gluon.jit
def _fragment_order(dq, DQ_COLS: gl.constexpr):
    """dQ's share [64 query rows, DQ_COLS] as the [DQ_COLS, 64] tile in which each thread's wgmma accumulator
    values are its own 16-byte runs: row = g2 + 2w + 8j, col = e + 2·half + 4t + 16·(g mod 4), for the value at
    query row 16w + 8·half + g and column 8j + 2t + e (w the warp, g = lane / 4, t = lane mod 4: the wgmma
    layout). A bit permutation of the indices, so the values stay in their registers, and a warp's store of
    four consecutive values per lane covers 512 contiguous bytes: no bank conflicts, where the swizzled
    [64, D/2] tile took two wavefronts per 16 lanes' 8-byte stores. ``_dq_from_tiles_kernel`` inverts it."""
    # Row-major bits, most significant first: rows (w1 w0 half g2 g1 g0), columns (j.. t1 t0 e).
    if DQ_COLS == 64:
        x = gl.permute(gl.reshape(dq, [2] * 12), [6, 7, 8, 0, 1, 3, 4, 5, 9, 10, 2, 11])
    else:
        x = gl.permute(gl.reshape(dq, [2] * 11), [6, 7, 0, 1, 3, 4, 5, 8, 9, 2, 10])
    return gl.reshape(x, [DQ_COLS, 64])


@triton.jit
def _dq_from_tiles_kernel(dq_tiles, dq, scale, seqlen, n_qblocks, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """dQ = scale · the tiled fp32 sums, cast: program (query block, batch·head) gathers its [BLOCK_M, D] rows
    from the two consumers' [D/2, 64] tiles, inverting ``_fragment_order``."""
    DQ_COLS: tl.constexpr = HEAD_DIM // 2
    qb = tl.program_id(0)
    bh = tl.program_id(1)
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, HEAD_DIM)[None, :]
    g, half, w = rows & 7, (rows >> 3) & 1, rows >> 4
    cc = cols % DQ_COLS
    e, t, j = cc & 1, (cc >> 1) & 3, cc >> 3
    tile = ((bh * n_qblocks + qb) * 2 + cols // DQ_COLS).to(tl.int64)
    src = (tile * DQ_COLS + ((g >> 2) | (w << 1) | (j << 3))) * 64 + (e | (half << 1) | (t << 2) | ((g & 3) << 4))
    q = qb * BLOCK_M + rows
    val = tl.load(dq_tiles + src) * scale
    tl.store(dq + (bh.to(tl.int64) * seqlen + q) * HEAD_DIM + cols, val.to(dq.dtype.element_ty), mask=q < seqlen)


@gluon.jit
def _producer(q_desc, do_desc, k_desc, v_desc, lse_desc, delta_desc, q_smem, do_smem, k_smem, v_smem, lse_smem,
              delta_smem, kv_bar, q_ready, do_ready, qdo_empty, seqlen, lse_stride, BLOCK_M: gl.constexpr,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, GROUP: gl.constexpr):
    # Rows of the [B·H·S, D] views: this (batch, head) starts at bh · S. LSE and Δ are [B·H, lse_stride] with
    # lse_stride = S rounded up to 4: a 1-D TMA box has to start on a 16-byte boundary (an unaligned start is an
    # illegal instruction). A tile that runs past S reads the next head's rows (or TMA's zero fill at the end),
    # which the consumers mask.
    n_block, bh = _key_block_of(GROUP, CAUSAL)
    base = bh * seqlen
    lse_base = bh * lse_stride
    mbarrier.expect(kv_bar, k_desc.block_type.nbytes + v_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(k_desc, [base + n_block * BLOCK_N, 0], kv_bar, k_smem)
    tma.async_copy_global_to_shared(v_desc, [base + n_block * BLOCK_N, 0], kv_bar, v_smem)
    first, end = _query_blocks(n_block, seqlen, BLOCK_M, BLOCK_N, CAUSAL)
    for i in range(first, end):
        c = i - first
        s = c % STAGES
        row = base + i * BLOCK_M
        mbarrier.wait(qdo_empty.index(s), ((c // STAGES) & 1) ^ 1)
        # Q with its rows' lse (what Sᵀ and Pᵀ need), dO with its rows' Δ (what dPᵀ and dSᵀ need).
        mbarrier.expect(q_ready.index(s), q_desc.block_type.nbytes + lse_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [row, 0], q_ready.index(s), q_smem.index(s))
        tma.async_copy_global_to_shared(lse_desc, [lse_base + i * BLOCK_M], q_ready.index(s), lse_smem.index(s))
        mbarrier.expect(do_ready.index(s), do_desc.block_type.nbytes + delta_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(do_desc, [row, 0], do_ready.index(s), do_smem.index(s))
        tma.async_copy_global_to_shared(delta_desc, [lse_base + i * BLOCK_M], do_ready.index(s),
                                        delta_smem.index(s))


@gluon.jit
def _consumer(q_smem, do_smem, k_smem, v_smem, lse_smem, delta_smem, ds_smem, dq_smem, kv_bar, q_ready, do_ready,
              qdo_empty, ds_full, ds_empty, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale, HALF: gl.constexpr,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr,
              CAUSAL: gl.constexpr, DQ_FIRST: gl.constexpr, GROUP: gl.constexpr):
    KEYS: gl.constexpr = BLOCK_N // 2  # this consumer's keys (the wgmma M of Sᵀ, dPᵀ, dV, dK)
    DQ_COLS: gl.constexpr = HEAD_DIM // 2  # this consumer's columns of dQ
    # Sᵀ, dPᵀ: [KEYS, BLOCK_M]; dK, dV: [KEYS, HEAD_DIM]; dQ's share: [BLOCK_M, DQ_COLS] — wgmma accumulators.
    st_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                        instr_shape=[16, BLOCK_M, 16])
    kv_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                        instr_shape=[16, HEAD_DIM, 16])
    dq_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                        instr_shape=[16, DQ_COLS, 16])
    # Pᵀ and dSᵀ as register A operands of dV += Pᵀ·dO and dK += dSᵀ·Q.
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=kv_layout, k_width=2)
    q_cols_layout: gl.constexpr = gl.SliceLayout(0, st_layout)  # a query row's lse and Δ, along Sᵀ's columns
    dtype: gl.constexpr = q_smem.dtype

    n_block, bh = _key_block_of(GROUP, CAUSAL)
    base = bh * seqlen
    n_qblocks = gl.cdiv(seqlen, BLOCK_M)
    key0 = n_block * BLOCK_N + HALF * KEYS  # first key of this consumer
    keys = key0 + gl.arange(0, KEYS, layout=gl.SliceLayout(1, st_layout))
    k_h = k_smem.slice(HALF * KEYS, KEYS)  # [KEYS, D]: rows of this consumer (a multiple of the 8-row atom)
    v_h = v_smem.slice(HALF * KEYS, KEYS)
    k_cols = k_smem.slice(HALF * DQ_COLS, DQ_COLS, dim=1)  # [BLOCK_N, D/2]: whole swizzle atoms of columns
    dq_buf = dq_smem.index(HALF)
    dk = gl.zeros([KEYS, HEAD_DIM], gl.float32, kv_layout)
    dv = gl.zeros([KEYS, HEAD_DIM], gl.float32, kv_layout)

    first, end = _query_blocks(n_block, seqlen, BLOCK_M, BLOCK_N, CAUSAL)
    mbarrier.wait(kv_bar, 0)
    for i in range(first, end):
        c = i - first  # ring count: slot c % STAGES, dS buffer c % 2
        s = c % STAGES
        b = c % 2
        q_start = i * BLOCK_M
        q = q_smem.index(s)
        do = do_smem.index(s)
        q_t = q.permute((1, 0))
        do_t = do.permute((1, 0))
        mbarrier.wait(q_ready.index(s), (c // STAGES) & 1)
        st = hopper.warpgroup_mma(k_h, q_t, gl.zeros([KEYS, BLOCK_M], gl.float32, st_layout), use_acc=False,
                                  is_async=True)
        mbarrier.wait(do_ready.index(s), (c // STAGES) & 1)
        dpt = hopper.warpgroup_mma(v_h, do_t, gl.zeros([KEYS, BLOCK_M], gl.float32, st_layout), use_acc=False,
                                   is_async=True)
        st = hopper.warpgroup_mma_wait(1, deps=[st, k_h, q_t])[0]  # dPᵀ stays in flight under the exponentials

        # lse and Δ come from shared memory at their use, not from registers loaded early: at D = 128, dK and dV
        # (128 registers) with Sᵀ and dPᵀ (64) leave no room to hold them across the wgmma.
        z = st * qk_scale - lse_smem.index(s).load(q_cols_layout)[None, :]
        # Only blocks holding a key or a query past S (the ragged last blocks: their rows are the next head's, or
        # TMA's zero fill) or, causally, a key after a query mask.
        if (key0 + KEYS > seqlen) or (q_start + BLOCK_M > seqlen) or (CAUSAL and q_start < key0 + KEYS - 1):
            q_cols = q_start + gl.arange(0, BLOCK_M, layout=q_cols_layout)
            keep = (keys[:, None] < seqlen) & (q_cols[None, :] < seqlen)
            if CAUSAL:
                keep = keep & (keys[:, None] <= q_cols[None, :])
            z = gl.where(keep, z, float("-inf"))
        pt = gl.exp2(z)
        dpt = hopper.warpgroup_mma_wait(0, deps=[dpt, v_h, do_t])[0]
        # dSᵀ before dV's wgmma is issued, so Pᵀ and dPᵀ in fp32 die before dV's accumulator is in flight.
        ds = (pt * (dpt - delta_smem.index(s).load(q_cols_layout)[None, :])).to(dtype)
        pt_op = gl.convert_layout(pt.to(dtype), op_layout)
        dv = hopper.warpgroup_mma(pt_op, do, dv, is_async=True)

        # dQ needs all 128 keys' dS: each consumer writes its half of the buffer, then both read all of it.
        ds_buf = ds_smem.index(b)
        mbarrier.wait(ds_empty.index(b), ((c // 2) & 1) ^ 1)
        ds_buf.slice(HALF * KEYS, KEYS).store(ds)
        hopper.fence_async_shared()  # the generic-proxy writes, before a wgmma (async proxy) reads them
        _arrive(ds_full.index(b), True)
        ds_op = gl.convert_layout(ds, op_layout)
        if not DQ_FIRST:
            dk = hopper.warpgroup_mma(ds_op, q, dk, is_async=True)

        mbarrier.wait(ds_full.index(b), (c // 2) & 1)
        ds_t = ds_buf.permute((1, 0))  # dS: [BLOCK_M queries, BLOCK_N keys], read transposed by the wgmma
        dq = hopper.warpgroup_mma(ds_t, k_cols, gl.zeros([BLOCK_M, DQ_COLS], gl.float32, dq_layout),
                                  use_acc=False, is_async=True)
        if DQ_FIRST:
            # dK after dQ, so dQ's store and reduce below run while dK's wgmma is still in flight.
            dk = hopper.warpgroup_mma(ds_op, q, dk, is_async=True)
            dv, dq = hopper.warpgroup_mma_wait(1, deps=[dv, dq, pt_op, do, ds_t, k_cols])[:2]
            _arrive(ds_empty.index(b), True)
        else:
            dv, dk, dq = hopper.warpgroup_mma_wait(0, deps=[dv, dk, dq, pt_op, ds_op, do, q, ds_t, k_cols])[:3]
            _arrive(qdo_empty.index(s), True)
            _arrive(ds_empty.index(b), True)

        # dQ's share into its (batch·head, query block, consumer) tile of the fp32 buffer by a TMA reduce-add from
        # shared memory, in its registers' own order (``_fragment_order``). The previous block's reduce must have
        # read the buffer before it is overwritten (``store_wait``, the issuing thread's bulk group); a warpgroup
        # barrier then orders every thread's write after it, and another the writes (fenced for the async proxy)
        # before the one thread that issues the reduce. Rows past S add dS = 0 to the tile's padding.
        tma.store_wait(0)
        gl.thread_barrier()
        dq_buf.store(_fragment_order(dq, DQ_COLS))
        hopper.fence_async_shared()
        gl.thread_barrier()
        _tma_reduce_add(dq_desc, [((bh * n_qblocks + i) * 2 + HALF) * DQ_COLS, 0], dq_buf)
        if DQ_FIRST:
            dk = hopper.warpgroup_mma_wait(0, deps=[dk, ds_op, q])[0]
            _arrive(qdo_empty.index(s), True)
    tma.store_wait(0)

    # Epilogue: keys at or past S belong to no key of this head and are dropped.
    rows = key0 + gl.arange(0, KEYS, layout=gl.SliceLayout(1, kv_layout))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, kv_layout))
    offs = (base + rows).to(gl.int64)[:, None] * HEAD_DIM + cols[None, :]
    row_ok = (rows < seqlen)[:, None]
    gl.store(dk_ptr + offs, (dk * scale).to(dtype), mask=row_ok)
    gl.store(dv_ptr + offs, dv.to(dtype), mask=row_ok)


@gluon.jit
def _attn_bwd_ws_kernel(q_desc, k_desc, v_desc, do_desc, lse_desc, delta_desc, dq_desc, dk_ptr, dv_ptr, seqlen,
                        lse_stride, qk_scale, scale, HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr,
                        BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                        PRODUCER_REGS: gl.constexpr, DQ_FIRST: gl.constexpr, GROUP: gl.constexpr):
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, HEAD_DIM], q_desc.layout)
    do_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, HEAD_DIM], do_desc.layout)
    lse_smem = gl.allocate_shared_memory(gl.float32, [STAGES, BLOCK_M], lse_desc.layout)
    delta_smem = gl.allocate_shared_memory(gl.float32, [STAGES, BLOCK_M], delta_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [BLOCK_N, HEAD_DIM], v_desc.layout)
    ds_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_M], dtype)
    ds_smem = gl.allocate_shared_memory(dtype, [2, BLOCK_N, BLOCK_M], ds_layout)
    # Per consumer: its share of dQ in its registers' order, [D/2, 64] (BLOCK_M · D/2 values).
    dq_smem = gl.allocate_shared_memory(gl.float32, [2, HEAD_DIM // 2, 64], dq_desc.layout)

    bar_layout: gl.constexpr = mbarrier.MBarrierLayout()
    kv_bar = gl.allocate_shared_memory(gl.int64, [1], bar_layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    do_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    qdo_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
    ds_full = gl.allocate_shared_memory(gl.int64, [2, 1], bar_layout)
    ds_empty = gl.allocate_shared_memory(gl.int64, [2, 1], bar_layout)
    mbarrier.init(kv_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(do_ready.index(i), count=1)
        mbarrier.init(qdo_empty.index(i), count=2 * CONSUMER_THREADS)
    for i in gl.static_range(2):
        mbarrier.init(ds_full.index(i), count=2 * CONSUMER_THREADS)
        mbarrier.init(ds_empty.index(i), count=2 * CONSUMER_THREADS)
    hopper.fence_async_shared()

    # Each partition's tuple is spelled out (as in the forward: built by concatenation, constexprs arrive as
    # tensors).
    gl.warp_specialize([
        (_consumer, (q_smem, do_smem, k_smem, v_smem, lse_smem, delta_smem, ds_smem, dq_smem, kv_bar, q_ready,
                     do_ready, qdo_empty, ds_full, ds_empty, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale, 0,
                     BLOCK_M, BLOCK_N, HEAD_DIM, STAGES, CAUSAL, DQ_FIRST, GROUP)),
        (_consumer, (q_smem, do_smem, k_smem, v_smem, lse_smem, delta_smem, ds_smem, dq_smem, kv_bar, q_ready,
                     do_ready, qdo_empty, ds_full, ds_empty, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale, 1,
                     BLOCK_M, BLOCK_N, HEAD_DIM, STAGES, CAUSAL, DQ_FIRST, GROUP)),
        (_producer, (q_desc, do_desc, k_desc, v_desc, lse_desc, delta_desc, q_smem, do_smem, k_smem, v_smem,
                     lse_smem, delta_smem, kv_bar, q_ready, do_ready, qdo_empty, seqlen, lse_stride, BLOCK_M, BLOCK_N,
                     STAGES,
                     CAUSAL, GROUP)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])



def kernel_args(head_dim: int, causal: bool) -> dict:
    """The kernel's constexprs and launch options for a head dim (shared by the launcher and compile checks)."""
    if head_dim not in STAGES:
        raise ValueError(f"head dim {head_dim} unsupported: the Gluon backward takes {sorted(STAGES)}")
    return dict(HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGES=STAGES[head_dim], CAUSAL=causal,
                CONSUMER_REGS=CONSUMER_REGS, PRODUCER_REGS=PRODUCER_REGS, DQ_FIRST=DQ_FIRST[head_dim, bool(causal)],
                GROUP=1, num_warps=4)


def smem_layouts(dtype_bits: int, head_dim: int) -> dict:
    """Each TMA descriptor's shared layout (the NVMMA swizzles that TMA writes and wgmma reads), by argument
    name. K's swizzle is half a row wide, so each consumer's half of K's columns (dQ's B operand) is whole
    atoms; lse and Δ are plain 1-D rows; dQ's fp32 tile is swizzled so its store from the wgmma layout spreads
    over the banks."""
    dt = {16: gl.bfloat16}[dtype_bits]  # the swizzle depends only on the element width
    qdo = gl.NVMMASharedLayout.get_default_for([BLOCK_M, head_dim], dt)
    row = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=1)
    return dict(q_desc=qdo, do_desc=qdo,
                k_desc=gl.NVMMASharedLayout(swizzle_byte_width=min(128, head_dim // 2 * dtype_bits // 8),
                                            element_bitwidth=dtype_bits, rank=2),
                v_desc=gl.NVMMASharedLayout.get_default_for([BLOCK_N, head_dim], dt),
                lse_desc=row, delta_desc=row,
                dq_desc=gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2))


def block_shapes(head_dim: int) -> dict:
    """Each TMA descriptor's block shape, by argument name."""
    return dict(q_desc=[BLOCK_M, head_dim], do_desc=[BLOCK_M, head_dim], k_desc=[BLOCK_N, head_dim],
                v_desc=[BLOCK_N, head_dim], lse_desc=[BLOCK_M], delta_desc=[BLOCK_M],
                dq_desc=[head_dim // 2, 64])


def aligned_rows(t, n_bh: int, seqlen: int):
    """(fp32 rows of ``t`` [B·H·S values] laid out [B·H, seqlen rounded up to 4] and flattened, that row stride):
    what the kernel's 1-D TMA loads of LSE and Δ need, each head's first row on a 16-byte boundary. A view when S
    is a multiple of 4, else a zero-padded copy (the padding reads as rows past S, which the kernel masks)."""
    import torch

    stride = -(-seqlen // 4) * 4
    if stride == seqlen:
        return t.reshape(n_bh * seqlen), stride
    rows = torch.zeros((n_bh, stride), device=t.device, dtype=t.dtype)
    rows[:, :seqlen] = t.reshape(n_bh, seqlen)
    return rows.view(-1), stride


def _check_bwd_inputs(do, q, k, v, o, lse) -> None:
    import torch

    _check_inputs(q, k, v)
    if do.shape != q.shape or do.dtype != q.dtype or not do.is_contiguous():
        raise ValueError(f"do must be contiguous with q's shape and dtype, got {tuple(do.shape)} {do.dtype}")
    if o.shape != q.shape or o.dtype != q.dtype or not o.is_contiguous():
        raise ValueError(f"o must be contiguous with q's shape and dtype, got {tuple(o.shape)} {o.dtype}")
    B, H, S, _ = q.shape
    if lse.dtype != torch.float32 or tuple(lse.shape) != (B, H, S) or not lse.is_contiguous():
        raise ValueError(f"lse must be contiguous fp32 [B, H, S] = {(B, H, S)} (the Gluon forward's, log2 units), "
                         f"got {lse.dtype} {tuple(lse.shape)}")


def gluon_attention_bwd(do, q, k, v, o, lse, causal: bool = False, scale: float | None = None):
    """(dq, dk, dv), each in q's shape and dtype, for contiguous bf16/fp16 [B, H, S, D] do, q, k, v and the
    forward's o and lse (fp32 [B, H, S], log2 units: ``gluon_fwd.gluon_attention_fwd``'s), on a Hopper GPU,
    D in (64, 128), with triton 3.6."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from .bwd import _bwd_preprocess_kernel
    from .launch import PREPROCESS_BLOCK

    _check_bwd_inputs(do, q, k, v, o, lse)
    why = unavailable()
    if why:
        raise RuntimeError(why)
    B, H, S, D = q.shape
    args = kernel_args(D, causal)
    # Causal: as many heads per group as keep their Q and dO (bf16) and dQ's fp32 sums within GROUP_BYTES of L2.
    args["GROUP"] = max(1, min(B * H, tile_order.GROUP_BYTES // (S * D * (2 + 2 + 4)))) if causal else 1
    scale = D ** -0.5 if scale is None else scale
    n_rows = B * H * S
    # LSE and Δ as [B·H, S rounded up to 4] (what the kernel's 1-D TMA boxes need: each head's rows start on a
    # 16-byte boundary); a copy only when S is not a multiple of 4.
    delta = torch.empty(n_rows, device=q.device, dtype=torch.float32)
    _bwd_preprocess_kernel[(triton.cdiv(n_rows, PREPROCESS_BLOCK), )](o, do, delta, n_rows, HEAD_DIM=D,
                                                                      BLOCK=PREPROCESS_BLOCK, num_warps=4)
    lse_rows, lse_stride = aligned_rows(lse, B * H, S)
    delta_rows, _ = aligned_rows(delta, B * H, S)
    # [B·H·S, D] views (LSE, Δ flat); the kernel masks what a tile reads past its head's S.
    views = dict(q_desc=q.view(n_rows, D), do_desc=do.view(n_rows, D), k_desc=k.view(n_rows, D),
                 v_desc=v.view(n_rows, D), lse_desc=lse_rows.view(-1), delta_desc=delta_rows.view(-1))
    n_qblocks = triton.cdiv(S, BLOCK_M)
    # dQ's fp32 sums: per (batch·head, query block, consumer) a [D/2, 64] tile in ``_fragment_order``.
    dq_acc = torch.zeros((B * H * n_qblocks * 2 * (D // 2), 64), device=q.device, dtype=torch.float32)
    views["dq_desc"] = dq_acc
    layouts, blocks = smem_layouts(16, D), block_shapes(D)
    descs = {name: TensorDescriptor.from_tensor(t, blocks[name], layouts[name]) for name, t in views.items()}
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    _attn_bwd_ws_kernel[(triton.cdiv(S, BLOCK_N), B * H)](
        descs["q_desc"], descs["k_desc"], descs["v_desc"], descs["do_desc"], descs["lse_desc"], descs["delta_desc"],
        descs["dq_desc"], dk, dv, S, lse_stride, scale * LOG2E, scale, **args)
    dq = torch.empty_like(q)
    _dq_from_tiles_kernel[(n_qblocks, B * H)](dq_acc, dq, scale, S, n_qblocks, HEAD_DIM=D, BLOCK_M=BLOCK_M,
                                              num_warps=4)
    return dq, dk, dv
