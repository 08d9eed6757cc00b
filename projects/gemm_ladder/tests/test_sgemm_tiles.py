"""The thread -> tile mappings of the templated kernels cover every element exactly once (CPU, numpy).

Mirrors the index formulas of double_buffer.cuh (TileConfig), warptile.cuh (WarpTileConfig) and cp_async.cuh
for every config that a rung or the lab's tile sweep instantiates (parsed from the sources), so a config whose strides
leave a gap or write an output twice fails here instead of on the GPU.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from gpufolio_projects.gemm_ladder.sgemm import registry

SGEMM = registry.HERE
SWEEP = SGEMM.parent / "lab" / "sgemm_sweep"
CONFIG_RE = re.compile(r"\b(WarpTileConfig|TileConfig)<([\d, ]+)>(?:, (\d+)>)?")


def _configs() -> list[tuple[str, tuple[int, ...], int | None]]:
    found = set()
    for path in sorted(SGEMM.glob("*.cu")) + sorted(SWEEP.glob("*.cu")):
        for kind, args, stages in CONFIG_RE.findall(path.read_text()):
            found.add((kind, tuple(int(a) for a in args.split(",")), int(stages) if stages else None))
    return sorted(found, key=lambda c: (c[0], c[1], c[2] or 0))


def _geometry(kind: str, args: tuple[int, ...]):
    if kind == "TileConfig":
        bm, bn, bk, tm, tn, _ = args
        threads = (bm // tm) * (bn // tn)
        row_stride, col_stride = 4 * bm // tm, 4 * bn // tn

        def origin(tid):
            return tid // (bn // tn) * 4, tid % (bn // tn) * 4
    else:
        bm, bn, bk, wm, wn, tm, tn, _ = args
        threads = (bm // tm) * (bn // tn)
        lanes_m, lanes_n, warps_n = wm // tm, wn // tn, bn // wn
        row_stride, col_stride = 4 * lanes_m, 4 * lanes_n

        def origin(tid):
            warp, lane = divmod(tid, 32)
            return warp // warps_n * wm + lane // lanes_n * 4, warp % warps_n * wn + lane % lanes_n * 4
    return bm, bn, bk, tm, tn, threads, row_stride, col_stride, origin


def test_configs_are_found():
    kinds = {k for k, _, _ in _configs()}
    assert kinds == {"TileConfig", "WarpTileConfig"} and len(_configs()) >= 10


@pytest.mark.parametrize("cfg", _configs(), ids=lambda c: f"{c[0]}{list(c[1])}s{c[2]}")
def test_outputs_covered_once(cfg):
    kind, args, _ = cfg
    bm, bn, _bk, tm, tn, threads, rs, cs, origin = _geometry(kind, args)
    hits = np.zeros((bm, bn), dtype=int)
    for tid in range(threads):
        r0, c0 = origin(tid)
        for i in range(tm):
            for j in range(tn):
                hits[r0 + (i // 4) * rs + i % 4, c0 + (j // 4) * cs + j % 4] += 1
    assert (hits == 1).all()


@pytest.mark.parametrize("cfg", _configs(), ids=lambda c: f"{c[0]}{list(c[1])}s{c[2]}")
def test_tile_loads_cover_a_and_b_once(cfg):
    kind, args, stages = cfg
    bm, bn, bk, _tm, _tn, threads, *_ = _geometry(kind, args)
    a, b = np.zeros((bm, bk), dtype=int), np.zeros((bk, bn), dtype=int)
    for tid in range(threads):
        if stages is None:  # register-staged float4 loads (double_buffer.cuh)
            for i in range(bm * bk // 4 // threads):
                r, c = tid // (bk // 4) + i * (threads // (bk // 4)), tid % (bk // 4) * 4
                a[r, c:c + 4] += 1
        else:  # 4-byte cp.async of A (cp_async.cuh)
            for i in range(bm * bk // threads):
                a[tid // bk + i * (threads // bk), tid % bk] += 1
        for i in range(bk * bn // 4 // threads):
            r, c = tid // (bn // 4) + i * (threads // (bn // 4)), tid % (bn // 4) * 4
            b[r, c:c + 4] += 1
    assert (a == 1).all() and (b == 1).all()


@pytest.mark.parametrize("cfg", _configs(), ids=lambda c: f"{c[0]}{list(c[1])}s{c[2]}")
def test_shared_memory_fits_the_sm(cfg):
    kind, args, stages = cfg
    bm, bn, bk, *_ = _geometry(kind, args)
    min_blocks = args[-1]
    per_block = (stages or 2) * (bk * (bm + 4) + bk * bn) * 4
    assert per_block <= 227 * 1024 and min_blocks * (per_block + 1024) <= 228 * 1024
