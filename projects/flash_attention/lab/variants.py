"""Variants of the Gluon kernels not (yet) in ``kernels/``, each a few edits of a kernel's source
(``kernel_variant.with_edits``), for the compile reports (``gluon_compile --variant``, ``gluon_bwd_compile
--variant``), the checks and the probe (``gluon_probe --fwd-settings`` and ``--bwd``) to compile, check and time
beside the kernels as committed. A variant that wins is then made in the kernel, and the bench run again.

Forward, "short max, shuffled sum": the short-chain softmax (``SHORT_CHAINS``) keeps its split row max but goes
back to one running row sum, added across the quad by two shuffles every key block, instead of per-lane partial
sums added once in the epilogue. In the SASS of the committed short chains, ptxas places nearly every exponential
after the turn's try-wait; with the shuffles back, the D = 128 kernels place them as the committed kernels do,
and the D = 64 ones above the try-wait again. Timed on an H100
(``evidence/2026-12-05-gluon-variants-probe-h100.log``): at D = 128 it takes back most of the short chains' loss
in three of four schedules but never beats the long chains; at D = 64 level in the persistent kernel. Not made
in the kernel.

The backward waits out Sᵀ alone so that dPᵀ's wgmma runs under the exponentials, but ptxas hoists the wait on
dPᵀ to the top of its basic block, which starts after the mask branch, above all the exponentials: the committed
kernel runs 0 or 1 of its 32 exponentials per query block under dPᵀ. Two ways to keep them there:

- "exp under dPᵀ": a try-wait on a barrier phase that has already completed (the slot's ``do_ready``, waited on
  before dPᵀ was issued) after the exponentials, a block boundary, as the turn's try-wait is in the forward's
  softmax under P·V. ptxas then sinks the exponentials below it instead at D = 128 in full attention (2 and 0
  under dPᵀ), and adds a warpgroup barrier; not timed.
- "dV before dPᵀ's wait": Pᵀ cast and dV's wgmma issued straight after the exponentials, then dPᵀ waited out
  with dV still in flight (dSᵀ, which needs dPᵀ, after it). That wgmma reads Pᵀ's registers, so the exponentials
  cannot move below it, and dV's wgmma starts a step earlier. All 32 exponentials under dPᵀ in every setting,
  no spills, no more barriers (``lab/gluon_bwd_compile --variant``, on the kernel before its causal launch
  order; on today's ptxas spills a little at D = 128 causal). Timed on an H100 (the same log): 3–4% slower at
  D = 128, full and causal, 0–1% faster at D = 64. Not made in the kernel.

Backward, "causal order: head groups, longest first": causally the key block's CTAs do unequal work (key block n
sees the query blocks from 2n on), and the grid launches each head's key blocks in turn, so a head's longest CTA
can start late and run alone at the end. A model of the hardware's hand-out (each CTA to the SM that frees first,
a CTA's cost its query blocks plus one) put that order 7% past the ideal at S = 4096, 64 heads; heads in
groups of four, each group's key blocks longest first, within 0.1% of it. The groups keep what the CTAs running
together read (Q, dO and dQ's fp32 sums of a few heads) within 16 MiB of L2, as the forward's causal tile order
does. Prediction: the causal backward 4–6% faster; full attention is untouched. Timed on an H100 (the probe,
``evidence/2026-12-05-gluon-bwd-causal-order-probe-h100.log``): 3.5% faster at D = 128, 4.2% at D = 64. Made in
the kernel (``gluon_bwd._key_block_of``), so no longer a variant here.

Backward, the dQ writer warp: each consumer writes its dQ tile, fences it and arrives on ``dq_full``; a warp of
its own issues the reduce-adds and hands the tiles back once read, so a consumer neither waits for its previous
reduce nor passes the two warpgroup barriers around its own. An earlier try gave the reduce-adds to the producer
warp, behind named barriers, and measured level or slower (README, "Fewer waits on the consumers' side"); here
the producer keeps only its loads. Two pairs of dQ tiles, released with dS on ``ds_empty``, so the consumers
wait on nothing new (225 KiB of shared memory at D = 128), and two forms of the hand-over: each thread's own
arrive, or a warpgroup barrier and one arrive.

As first written and timed, with one ``dq_full`` barrier per consumer, the writer could deadlock: a consumer two
blocks ahead of it completes two phases, and the parity the writer waits for reads as not yet complete
(``lab/gluon_bwd_protocol`` with the writer lagging; on the GPU the writer polls far sooner than a consumer
finishes a block, so it never hung). Timed in that form on an H200, twice
(``evidence/2026-12-06-gluon-bwd-dq-writer-probe-h200.log``): the per-thread form 1.7–3.4% faster in full
attention at D = 128, 2.3% slower causally and 2.5–3.8% slower at D = 64; the warpgroup-arrive form level at
D = 128 full, slower elsewhere. In that form ptxas spilled a few loop-invariant wgmma descriptors of the
per-thread form at D = 128 (``evidence/2026-12-05-gluon-bwd-compile-report-dq-writer-warp.txt``).

Now one ``dq_full`` barrier per tile of each pair (four), so a consumer's next arrival on a barrier is two blocks
on, behind ``ds_empty``. The protocol model passes with the writer lagging, and neither form spills
(``evidence/2026-12-06-gluon-bwd-compile-report-dq-writer-four-barriers.txt``); not yet timed. Not made in the
kernel (README, backward).

Backward, dQ's reduce under the next Sᵀ: after a query block's wgmmas are waited out, the consumer stores its
dQ share and passes two warpgroup barriers around the reduce-add with none of its own wgmmas in flight. Here
the share is carried into the next iteration and added there, after that block's Sᵀ is issued. Three forms
(``evidence/2026-12-06-gluon-bwd-compile-report-dq-reduce-late.txt``):

- "dQ reduce under the next Sᵀ": the share scaled at the end of its block (the gather's multiply becomes 1).
  Every dQ store runs with Sᵀ in flight in both consumers, with no spills and 3 warpgroup barriers per block
  in both (the committed kernel has 3 and 4); the loop is 501/495 instructions at D = 128 in full attention
  against 464/456, 32 of them the FMULs.
- "..., unscaled": the share as the dQ wgmma left it. ptxas waits out every wgmma before one consumer's stores
  (``WARPGROUP.DEPBAR.LE gsb0, 0x0`` ahead of the ``STS``; the other consumer's run under Sᵀ). Our reading:
  ptxas will not read registers a wgmma wrote while another is in flight, and the FMULs write new ones.
- "... and dPᵀ": dPᵀ issued before the store too. At D = 128 dK, dV, the share, Sᵀ and dPᵀ are 224 registers
  of 240 and ptxas spills; at D = 64 it compiles clean.

Not yet timed. Prediction, written before any run: level to 3% faster for the backward alone at D = 128 in full
attention (the store and barriers are a few hundred cycles of a block's four thousand, partly hidden already by
the other consumer's wgmmas), less at D = 64, where the FMULs weigh more against matmuls half as long.
"""
from __future__ import annotations

import functools

# name -> [(old text of kernels/gluon_fwd.py, new text)]; they change what SHORT_CHAINS turns on.
FWD_VARIANTS = {
    "short max, shuffled sum": [
        ("        l_i = _row_partial_sums(gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout))\n",
         "        l_i = gl.full([BLOCK_M], 0.0, gl.float32, s_rows)\n"),
        ("    part_rows: gl.constexpr = gl.SliceLayout(1, l_part.type.layout)\n"
         "    return p, m_new, l_part * gl.convert_layout(alpha, part_rows)[:, None] + _row_partial_sums(p), alpha\n",
         "    return p, m_new, l_part * alpha + gl.sum(p, 1), alpha\n"),
        ("    if SHORT:\n        l_i = _row_total(l_i, s_rows)\n", ""),
    ],
}

# name -> [(old text of kernels/gluon_bwd.py, new text)].
BWD_VARIANTS = {
    "exp under dPᵀ": [
        ("        pt = gl.exp2(z)\n",
         "        pt = gl.exp2(z)\n"
         "        mbarrier.wait(do_ready.index(s), (c // STAGES) & 1)  # complete already: a block boundary\n"),
    ],
    "dV before dPᵀ's wait": [
        ("""        pt = gl.exp2(z)
        dpt = hopper.warpgroup_mma_wait(0, deps=[dpt, v_h, do_t])[0]
        # dSᵀ before dV's wgmma is issued, so Pᵀ and dPᵀ in fp32 die before dV's accumulator is in flight.
        ds = (pt * (dpt - delta_smem.index(s).load(q_cols_layout)[None, :])).to(dtype)
        pt_op = gl.convert_layout(pt.to(dtype), op_layout)
        dv = hopper.warpgroup_mma(pt_op, do, dv, is_async=True)
""", """        pt = gl.exp2(z)
        pt_op = gl.convert_layout(pt.to(dtype), op_layout)
        dv = hopper.warpgroup_mma(pt_op, do, dv, is_async=True)
        dpt = hopper.warpgroup_mma_wait(1, deps=[dpt, v_h, do_t])[0]
        ds = (pt * (dpt - delta_smem.index(s).load(q_cols_layout)[None, :])).to(dtype)
"""),
    ],
}

# The committed consumer's dQ reduce-add at the end of each query block, which the dQ variants below replace.
_DQ_REDUCE_IN_LOOP = """\
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
"""

# The consumers hand their dQ tiles to a warp of its own (FlashAttention-3's and -4's dQ writer) through
# mbarriers, one per tile, where each issued its reduce-add itself between two warpgroup barriers, after waiting
# out its last.
_DQ_WRITER = """@gluon.jit
def _dq_writer(dq_desc, dq_smem, dq_full, ds_empty, seqlen, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
               HEAD_DIM: gl.constexpr, CAUSAL: gl.constexpr, GROUP: gl.constexpr):
    # Per query block c, each consumer's dQ tile (tile pair c % 2) into its fp32 sums once the consumer has written
    # and fenced it; the pair is handed back with dS buffer c % 2 (ds_empty) once both reduces have read it.
    DQ_COLS: gl.constexpr = HEAD_DIM // 2
    n_block, bh = _key_block_of(GROUP, CAUSAL)
    n_qblocks = gl.cdiv(seqlen, BLOCK_M)
    first, end = _query_blocks(n_block, seqlen, BLOCK_M, BLOCK_N, CAUSAL)
    for i in range(first, end):
        c = i - first
        for h in gl.static_range(2):
            mbarrier.wait(dq_full.index((c % 2) * 2 + h), (c // 2) & 1)
            _tma_reduce_add(dq_desc, [((bh * n_qblocks + i) * 2 + h) * DQ_COLS, 0], dq_smem.index((c % 2) * 2 + h))
        tma.store_wait(0)
        mbarrier.arrive(ds_empty.index(c % 2))


@gluon.jit
def _attn_bwd_ws_kernel("""


def _dq_writer_edits(per_thread: bool) -> list[tuple[str, str]]:
    """The dQ writer with two pairs of dQ tiles, pair c % 2 released on ``ds_empty`` of query block c (one more
    arrival), which the consumers already wait on before writing dS two blocks later, so they wait on nothing
    new. A consumer hands tile (c % 2, its half) over on ``dq_full`` of that tile, with each thread's own arrive
    (``per_thread``, as the kernel's other consumer arrives) or with a warpgroup barrier and one thread's
    arrive."""
    return [
        ("qdo_empty, ds_full, ds_empty, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale, HALF: gl.constexpr,",
         "qdo_empty, ds_full, ds_empty, dq_full, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale,\n"
         "              HALF: gl.constexpr,"),
        ("    dq_buf = dq_smem.index(HALF)\n", ""),
        (_DQ_REDUCE_IN_LOOP, f"""        dq_smem.index((c % 2) * 2 + HALF).store(_fragment_order(dq, DQ_COLS))
        hopper.fence_async_shared()
        _arrive(dq_full.index((c % 2) * 2 + HALF), {per_thread})
"""),
        ("    tma.store_wait(0)\n\n    # Epilogue: keys", "\n    # Epilogue: keys"),
        ("@gluon.jit\ndef _attn_bwd_ws_kernel(", _DQ_WRITER),
        ("gl.float32, [2, HEAD_DIM // 2, 64], dq_desc.layout)", "gl.float32, [4, HEAD_DIM // 2, 64], dq_desc.layout)"),
        ("    ds_empty = gl.allocate_shared_memory(gl.int64, [2, 1], bar_layout)\n",
         "    ds_empty = gl.allocate_shared_memory(gl.int64, [2, 1], bar_layout)\n"
         "    dq_full = gl.allocate_shared_memory(gl.int64, [4, 1], bar_layout)\n"),
        ("        mbarrier.init(ds_empty.index(i), count=2 * CONSUMER_THREADS)\n",
         "        mbarrier.init(ds_empty.index(i), count=2 * CONSUMER_THREADS + 1)\n"
         f"        mbarrier.init(dq_full.index(i), count={'CONSUMER_THREADS' if per_thread else 1})\n"
         f"        mbarrier.init(dq_full.index(i + 2), count={'CONSUMER_THREADS' if per_thread else 1})\n"),
        ("ds_full, ds_empty, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale, 0,",
         "ds_full, ds_empty, dq_full, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale, 0,"),
        ("ds_full, ds_empty, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale, 1,",
         "ds_full, ds_empty, dq_full, dq_desc, dk_ptr, dv_ptr, seqlen, qk_scale, scale, 1,"),
        ("""                     CAUSAL, GROUP)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])""", """                     CAUSAL, GROUP)),
        (_dq_writer, (dq_desc, dq_smem, dq_full, ds_empty, seqlen, BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, GROUP)),
    ], [4, 1, 1], [CONSUMER_REGS, PRODUCER_REGS, PRODUCER_REGS])"""),
    ]


BWD_VARIANTS["dQ writer warp, two tiles"] = _dq_writer_edits(per_thread=True)
BWD_VARIANTS["dQ writer warp, two tiles, warpgroup arrive"] = _dq_writer_edits(per_thread=False)


# dQ's share of query block i added one block late, after block i + 1's Sᵀ (and dPᵀ) are issued, so those wgmmas
# run while the consumer stores the tile and passes the two warpgroup barriers around its reduce-add. The share is
# carried to the next iteration in registers, already waited out: no wgmma is in flight across the loop's back
# edge (in the forward, one was, and ptxas serialised every wgmma). Carried as the dQ wgmma left it, the share
# makes ptxas wait out every wgmma in flight before one consumer's store reads it (``WARPGROUP.DEPBAR.LE gsb0,
# 0x0`` ahead of the ``STS``): the next Sᵀ then runs before the store, not under it. Scaled by ``scale`` at the
# end of its block (FMULs that write new registers; the gather's multiply becomes 1), the store runs with Sᵀ in
# flight.
_DQ_REDUCE = """@gluon.jit
def _dq_reduce(dq, dq_buf, dq_desc, row, DQ_COLS: gl.constexpr):
    # A query block's share of dQ into its tile of the fp32 buffer: the previous reduce has read the buffer
    # (store_wait), every thread's write after that, the writes (fenced for the async proxy) before the issue.
    tma.store_wait(0)
    gl.thread_barrier()
    dq_buf.store(_fragment_order(dq, DQ_COLS))
    hopper.fence_async_shared()
    gl.thread_barrier()
    _tma_reduce_add(dq_desc, [row, 0], dq_buf)


@gluon.jit
def _consumer("""

def _dq_reduce_late_edits(with_dpt: bool, scaled: bool = True) -> list[tuple[str, str]]:
    """The previous block's dQ added after this block's Sᵀ is issued, and after its dPᵀ too (``with_dpt``); the
    share carried scaled (``scaled``) or as the wgmma left it."""
    # Unconditional: an ``if c > 0`` costs one warpgroup barrier more per block (the shared-memory analysis adds
    # one across the branch). At the first block the share is zeros, added into that block's own tile.
    late = ("        prev = i - 1 + (c == 0).to(gl.int32)  # the previous block's dQ, under this block's first wgmmas\n"
            "        _dq_reduce(dq, dq_buf, dq_desc, ((bh * n_qblocks + prev) * 2 + HALF) * DQ_COLS, DQ_COLS)\n")
    # Placed before the wait on Sᵀ (dPᵀ issued by then) or before the wait for dO (Sᵀ alone issued).
    before = ("        st = hopper.warpgroup_mma_wait(1, deps=[st, k_h, q_t])[0]" if with_dpt
              else "        mbarrier.wait(do_ready.index(s), (c // STAGES) & 1)\n")
    return [
        ("@gluon.jit\ndef _consumer(", _DQ_REDUCE),
        ("    mbarrier.wait(kv_bar, 0)\n    for i in range(first, end):\n",
         "    mbarrier.wait(kv_bar, 0)\n"
         "    dq = gl.zeros([BLOCK_M, DQ_COLS], gl.float32, dq_layout)  # the previous block's share, added late\n"
         "    for i in range(first, end):\n"),
        (before, late + before),
        (_DQ_REDUCE_IN_LOOP, ("        dq = dq * scale  # new registers, not the ones the dQ wgmma wrote"
                              " (see lab/variants.py); the gather then scales by 1\n")
         if scaled else ""),
    ] + ([("_dq_from_tiles_kernel[(n_qblocks, B * H)](dq_acc, dq, scale,",
           "_dq_from_tiles_kernel[(n_qblocks, B * H)](dq_acc, dq, 1.0,")] if scaled else []) + [
        ("    tma.store_wait(0)\n\n    # Epilogue: keys",
         "    _dq_reduce(dq, dq_buf, dq_desc, ((bh * n_qblocks + end - 1) * 2 + HALF) * DQ_COLS, DQ_COLS)\n"
         "    tma.store_wait(0)\n\n    # Epilogue: keys"),
    ]


BWD_VARIANTS["dQ reduce under the next Sᵀ"] = _dq_reduce_late_edits(with_dpt=False)
BWD_VARIANTS["dQ reduce under the next Sᵀ and dPᵀ"] = _dq_reduce_late_edits(with_dpt=True)
BWD_VARIANTS["dQ reduce under the next Sᵀ, unscaled"] = _dq_reduce_late_edits(with_dpt=False, scaled=False)


@functools.cache
def forward(name: str | None = None):
    """``kernels/gluon_fwd`` as committed (``None``), or with variant ``name``'s edits."""
    from ..kernels import gluon_fwd

    return _variant(gluon_fwd, FWD_VARIANTS, name)


@functools.cache
def backward(name: str | None = None):
    """``kernels/gluon_bwd`` as committed (``None``), or with variant ``name``'s edits."""
    from ..kernels import gluon_bwd

    return _variant(gluon_bwd, BWD_VARIANTS, name)


def _variant(module, table: dict, name: str | None):
    from .kernel_variant import with_edits

    if name is None:
        return module
    if name not in table:
        raise ValueError(f"no variant {name!r} of {module.__name__}; there are: {', '.join(table)}")
    return with_edits(module, name, table[name])
