"""What the forward and the dQ backward kernel share: a program's query block and heads, the key ranges it walks
(full blocks unmasked, then the diagonal/ragged tail), and which keys a query sees. Both kernels own BLOCK_M
query rows of one (batch, head) and step over key blocks, so they must agree on all three (fwd.py's docstring
has the causal alignment: bottom-right, query i sees key j iff j <= i + (Sk - Sq))."""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _query_block(seqlen_q, seqlen_k, num_heads, group, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    # grid: (cdiv(Sq, BLOCK_M), B·H). Causal: the last query blocks see the most keys; launch them first so the
    # long programs do not end up in the tail wave.
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m
    bh = tl.program_id(1)
    batch = bh // num_heads
    head = bh % num_heads
    bh_kv = batch * (num_heads // group) + head // group  # GQA: `group` query heads share one KV head
    start_m = pid_m * BLOCK_M
    q_row0 = bh * seqlen_q  # first row of this head in the flattened [B·H·Sq, D] tensors (and LSE)
    kv_row0 = bh_kv * seqlen_k
    diag = seqlen_k - seqlen_q  # bottom-right alignment: row i sees keys j <= i + diag
    return bh, start_m, q_row0, kv_row0, diag


@triton.jit
def _key_ranges(start_m, diag, seqlen_k, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    # (full_end, hi): keys [0, full_end) every row of the block sees, in whole BLOCK_N blocks (no mask); keys
    # [full_end, hi) some row sees (masked).
    if CAUSAL:
        # Keys every row of the block sees: j <= start_m + diag. Keys any row sees: j < start_m + BLOCK_M + diag.
        full_end = tl.minimum(tl.maximum(start_m + diag + 1, 0), seqlen_k)
        hi = tl.minimum(tl.maximum(start_m + BLOCK_M + diag, 0), seqlen_k)
    else:
        full_end = seqlen_k
        hi = seqlen_k
    full_end = (full_end // BLOCK_N) * BLOCK_N
    return full_end, hi


@triton.jit
def _visible(offs_m, offs_n, seqlen_k, diag, CAUSAL: tl.constexpr):
    # [BLOCK_M, BLOCK_N]: key n exists, and (causal) query m sees it.
    keep = offs_n[None, :] < seqlen_k
    if CAUSAL:
        keep = keep & (offs_n[None, :] <= offs_m[:, None] + diag)
    return keep
