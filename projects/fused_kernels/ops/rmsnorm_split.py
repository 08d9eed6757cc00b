"""The RMSNorm kernels of add_rmsnorm.py for widths that are not a multiple of 16 elements (4097, 8191, 1000
in bf16): the same math and I/O, with every row split into head / aligned body / tail (ops/_rows.py says why)
so that the body, all but at most 2 * (VEC - 1) elements of a row, moves as 16-byte vectors. The head and
tail of a row travel together as one small "edge" tensor [ROWS, EDGE].

Rows are grouped by phase (row mod P): a program's rows share one split, so the weight is loaded once per
program in that split, and the backward keeps its dweight partial in the same three parts.
"""
from __future__ import annotations

import triton
import triton.language as tl

from ._common import _load, _rms_grad, _store
from ._rows import _body_offsets, _phase_rows, _row_parts


@triton.jit
def _load_parts(ptr, row_off, edge_cols, body_off, ok_e, ok_b, EVICT_FIRST: tl.constexpr):
    """One tensor's edges [ROWS, EDGE] (head and tail) and body [ROWS, BLOCK_N], as fp32."""
    e = _load(ptr + row_off + edge_cols, ok_e, EVICT_FIRST).to(tl.float32)
    b = _load(ptr + body_off, ok_b, EVICT_FIRST).to(tl.float32)
    return e, b


@triton.jit
def _load_raw(ptr, row_off, edge_cols, body_off, ok_e, ok_b, EVICT_FIRST: tl.constexpr):
    """As _load_parts in the tensor's own dtype: the backward's prefetch buffers, half the registers in bf16."""
    return _load(ptr + row_off + edge_cols, ok_e, EVICT_FIRST), _load(ptr + body_off, ok_b, EVICT_FIRST)


@triton.jit
def _store_parts(ptr, row_off, edge_cols, body_off, ok_e, ok_b, e, b):
    _store(ptr + row_off + edge_cols, e, ok_e)
    _store(ptr + body_off, b, ok_b)


@triton.jit
def _row_sum(e, b):
    return tl.sum(e, axis=1) + tl.sum(b, axis=1)


@triton.jit
def _rmsnorm_fwd_split_kernel(x_ptr, r_ptr, w_ptr, y_ptr, r_out_ptr, n_rows, n_cols, eps, P,
                              HAS_RESIDUAL: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
                              VEC: tl.constexpr, EDGE: tl.constexpr, EVICT_FIRST: tl.constexpr):
    pid = tl.program_id(0)
    phase = pid % P  # with ROWS = 1, program pid handles row pid: phase + P * (pid // P)
    rows = _phase_rows(phase, pid // P, P, ROWS)
    head, body_len, edge_cols, in_e = _row_parts(n_cols, phase, VEC, EDGE)
    edge_cols, in_e = edge_cols[None, :], in_e[None, :]
    lane_b = tl.arange(0, BLOCK_N)[None, :]
    in_b = lane_b < body_len
    row_ok = rows < n_rows
    ok_e, ok_b = row_ok & in_e, row_ok & in_b
    row_off = rows * n_cols
    body_off = _body_offsets(phase, pid // P, P, n_cols, head, ROWS, BLOCK_N, VEC)
    se, sb = _load_parts(x_ptr, row_off, edge_cols, body_off, ok_e, ok_b, EVICT_FIRST)
    if HAS_RESIDUAL:
        re, rb = _load_parts(r_ptr, row_off, edge_cols, body_off, ok_e, ok_b, EVICT_FIRST)
        se, sb = se + re, sb + rb
        _store_parts(r_out_ptr, row_off, edge_cols, body_off, ok_e, ok_b, se, sb)
    # The weight in the same split (its columns head + j are not vector-aligned, but cached and tiny).
    we, wb = _load_parts(w_ptr, 0, edge_cols, head + lane_b, in_e, in_b, False)
    rstd = tl.rsqrt(_row_sum(se * se, sb * sb) / n_cols + eps)[:, None]
    _store_parts(y_ptr, row_off, edge_cols, body_off, ok_e, ok_b, se * rstd * we, sb * rstd * wb)


@triton.jit
def _rmsnorm_bwd_split_kernel(dy_ptr, dr_out_ptr, s_ptr, w_ptr, ds_ptr, dw_part_ptr, n_rows, n_cols, eps, P,
                              tiles_per_prog, HAS_DRES: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
                              VEC: tl.constexpr, EDGE: tl.constexpr, PREFETCH: tl.constexpr,
                              EVICT_FIRST: tl.constexpr):
    """Persistent: program pid runs tiles [j * tiles_per_prog, (j + 1) * tiles_per_prog) of phase pid % P,
    j = pid // P, and writes its dweight partial (fp32, in column order) to row pid of dw_part."""
    pid = tl.program_id(0)
    phase = pid % P
    head, body_len, edge_cols1, in_e1 = _row_parts(n_cols, phase, VEC, EDGE)
    lane_b1 = tl.arange(0, BLOCK_N)
    edge_cols, in_e = edge_cols1[None, :], in_e1[None, :]
    in_b = (lane_b1 < body_len)[None, :]
    we, wb = _load_parts(w_ptr, 0, edge_cols, head + lane_b1[None, :], in_e, in_b, False)
    dwe = tl.zeros((EDGE,), dtype=tl.float32)
    dwb = tl.zeros((BLOCK_N,), dtype=tl.float32)
    t_first = (pid // P) * tiles_per_prog
    t_end = t_first + tiles_per_prog
    row_stop = tl.minimum(n_rows, phase + P * t_end * ROWS)  # rows of this phase below it are this program's
    if PREFETCH:  # registers double-buffer the rows: tile t+1's loads are in flight while tile t computes
        rows = _phase_rows(phase, t_first, P, ROWS)
        ok = rows < row_stop
        row_off, body_off = rows * n_cols, _body_offsets(phase, t_first, P, n_cols, head, ROWS, BLOCK_N, VEC)
        nse, nsb = _load_raw(s_ptr, row_off, edge_cols, body_off, ok & in_e, ok & in_b, EVICT_FIRST)
        ndye, ndyb = _load_raw(dy_ptr, row_off, edge_cols, body_off, ok & in_e, ok & in_b, EVICT_FIRST)
        if HAS_DRES:
            ndre, ndrb = _load_raw(dr_out_ptr, row_off, edge_cols, body_off, ok & in_e, ok & in_b, EVICT_FIRST)
    for t in range(t_first, t_end):
        rows = _phase_rows(phase, t, P, ROWS)
        ok = rows < n_rows
        ok_e, ok_b = ok & in_e, ok & in_b
        row_off, body_off = rows * n_cols, _body_offsets(phase, t, P, n_cols, head, ROWS, BLOCK_N, VEC)
        if PREFETCH:
            se, sb = nse.to(tl.float32), nsb.to(tl.float32)
            dye, dyb = ndye.to(tl.float32), ndyb.to(tl.float32)
            if HAS_DRES:
                dre, drb = ndre.to(tl.float32), ndrb.to(tl.float32)
            nrows = _phase_rows(phase, t + 1, P, ROWS)
            nok = nrows < row_stop  # the next tile, if it is still this program's
            n_off, nbody = nrows * n_cols, _body_offsets(phase, t + 1, P, n_cols, head, ROWS, BLOCK_N, VEC)
            nse, nsb = _load_raw(s_ptr, n_off, edge_cols, nbody, nok & in_e, nok & in_b, EVICT_FIRST)
            ndye, ndyb = _load_raw(dy_ptr, n_off, edge_cols, nbody, nok & in_e, nok & in_b, EVICT_FIRST)
            if HAS_DRES:
                ndre, ndrb = _load_raw(dr_out_ptr, n_off, edge_cols, nbody, nok & in_e, nok & in_b, EVICT_FIRST)
        else:
            se, sb = _load_parts(s_ptr, row_off, edge_cols, body_off, ok_e, ok_b, EVICT_FIRST)
            dye, dyb = _load_parts(dy_ptr, row_off, edge_cols, body_off, ok_e, ok_b, EVICT_FIRST)
            if HAS_DRES:
                dre, drb = _load_parts(dr_out_ptr, row_off, edge_cols, body_off, ok_e, ok_b, EVICT_FIRST)
        rstd = tl.rsqrt(_row_sum(se * se, sb * sb) / n_cols + eps)[:, None]
        ne, nb = se * rstd, sb * rstd
        wdye, wdyb = we * dye, wb * dyb
        c = (_row_sum(ne * wdye, nb * wdyb) / n_cols)[:, None]
        dse, dsb = _rms_grad(ne, wdye, rstd, c), _rms_grad(nb, wdyb, rstd, c)
        if HAS_DRES:
            dse, dsb = dse + dre, dsb + drb
        _store_parts(ds_ptr, row_off, edge_cols, body_off, ok_e, ok_b, dse, dsb)
        dwe += tl.sum(dye * ne, axis=0)
        dwb += tl.sum(dyb * nb, axis=0)
    part = dw_part_ptr + pid * n_cols
    tl.store(part + edge_cols1, dwe, mask=in_e1)
    tl.store(part + head + lane_b1, dwb, mask=lane_b1 < body_len)
