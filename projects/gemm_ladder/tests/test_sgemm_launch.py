"""Launch-configuration arithmetic and shape rules, checked against the constants in the CUDA files."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from gpufolio.api import Unsupported
from gpufolio_projects.gemm_ladder import ladder
from gpufolio_projects.gemm_ladder.sgemm import bench, registry

PROJECT = registry.HERE.parent


def _constants(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"\b(k\w+) = (\d+)\b", text)}


def _tile_config(text: str) -> tuple[int, int, int]:
    """(BM, BN, threads) of the `using RungNN = ...Config<...>` line of a templated rung."""
    m = re.search(r"using Rung\d\d = .*?\b(Tile|WarpTile)Config<([\d, ]+)>", text)
    assert m, "templated rung without a RungNN config line"
    args = [int(a) for a in m.group(2).split(",")]
    if m.group(1) == "Tile":
        bm, bn, _bk, tm, tn, _min_blocks = args
    else:
        bm, bn, _bk, _wm, _wn, tm, tn, _min_blocks = args
    return bm, bn, (bm // tm) * (bn // tn)


@pytest.mark.parametrize("rung", registry.RUNGS, ids=lambda r: r.name)
def test_registry_geometry_matches_cuda_source(rung):
    text = (registry.HERE / rung.file).read_text()
    if "Config<" in text:
        bm, bn, threads = _tile_config(text)
    else:
        c = _constants(text)
        if "kTile" in c:
            bm = bn = c["kTile"]
            threads = c["kTile"] ** 2
        elif "kBlock" in c:
            bm = bn = c["kBlock"]
            threads = c["kBlock"] ** 2
        else:
            bm, bn = c["kBM"], c["kBN"]
            threads = bm * bn // (c["kTM"] * c.get("kTN", 1))
    assert (bm, bn) == rung.block_tile
    assert threads == rung.threads


@pytest.mark.parametrize("rung", registry.RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 4096, 4096), (4000, 3000, 1000), (4097, 4095, 33), (128, 128, 8)])
def test_grid_covers_c_exactly_once(rung, shape):
    M, N, _ = shape
    gx, gy = rung.grid(M, N)
    rows, cols = rung.block_tile
    tiles_m, tiles_n = (gx, gy) if rung.number == 1 else (gy, gx)
    assert tiles_m * rows >= M > (tiles_m - 1) * rows
    assert tiles_n * cols >= N > (tiles_n - 1) * cols


@pytest.mark.parametrize("rung", registry.RUNGS, ids=lambda r: r.name)
def test_shape_rules(rung):
    rung.check_shape(4000, 3000, 1000)
    rung.check_shape(1, 4096, 4096)
    if rung.shapes == "any":
        rung.check_shape(4097, 4095, 33)
    else:
        for bad in [(4097, 4095, 32), (4096, 4096, 33), (8, 6, 8)]:
            with pytest.raises(Unsupported):
                rung.check_shape(*bad)
        rung.check_shape(4097, 4096, 36)  # M is free


def test_timing_budget_skips_only_slow_rungs_and_only_big_sizes():
    for rung in registry.RUNGS:
        rung.check_budget(1024, 1024, 1024)
    with pytest.raises(Unsupported, match="budget"):
        registry.by_name("01_naive").check_budget(4096, 4096, 4096)
    registry.by_name("10_warptiling").check_budget(8192, 8192, 8192)


@pytest.mark.parametrize(("shape", "splits"), [
    ((4096, 4096, 4096), 1),    # 1024 tiles fill 264 slots
    ((128, 4096, 4096), 8),     # 32 tiles -> 264 // 32 = 8 runs: 256 blocks, one wave
    ((1, 4096, 4096), 8),
    ((1024, 1024, 1024), 4),    # 64 tiles -> 4 runs
    ((200, 520, 1000), 7),      # 10 tiles want 26 runs; K = 1000 has 63 K-tiles -> 7 runs of >= 8
    ((257, 132, 20), 1),        # K too short to split
    ((16, 128, 1 << 20), 16),   # capped
])
def test_split_k_arithmetic(shape, splits):
    assert registry.split_k_splits(*shape) == splits
    M, N, K = shape
    tiles = registry.ceil_div(M, 128) * registry.ceil_div(N, 128)
    assert splits == 1 or tiles * splits <= 2 * registry.H200_SMS  # one wave
    per_run = registry.ceil_div(registry.ceil_div(K, 16), splits)
    assert (splits - 1) * per_run < registry.ceil_div(K, 16) <= splits * per_run  # every K-tile in exactly one run


def test_configs():
    full, quick = bench.configs("full"), bench.configs("quick")
    assert bench.configs("dry") == []
    assert {"M": 4096, "N": 4096, "K": 4096}.items() <= next(c for c in quick if c["M"] == 4096).items()
    assert any(all(c[k] == v for k, v in bench.SGEMM_BENCH.headline_params.items()) for c in full)
    for c in full + quick:
        assert set(c) == {"M", "N", "K", "dtype", "family"}
    assert len({tuple(sorted(c.items())) for c in full}) == len(full)


def test_tolerance_covers_fp32_rounding_but_not_a_lost_k_slice():
    """Simulate the worst summation order (sequential, product and sum each rounded) at K = 4096."""
    K, outputs = 4096, 256
    rng = np.random.default_rng(0)
    a = rng.standard_normal((outputs, K)).astype(np.float32)
    b = rng.standard_normal((outputs, K)).astype(np.float32)
    ref = np.einsum("ik,ik->i", a.astype(np.float64), b.astype(np.float64))
    acc = np.zeros(outputs, dtype=np.float32)
    for k in range(K):
        acc = (acc + (a[:, k] * b[:, k]).astype(np.float32)).astype(np.float32)
    tol = ladder.tolerance_for_k(K, "float32")
    bound = tol.atol + tol.rtol * np.abs(ref)
    err = np.abs(acc.astype(np.float64) - ref)
    assert (err <= bound / 2).all(), f"fp32 rounding uses {np.max(err / bound):.2f} of the bound"
    dropped = ref - np.einsum("ik,ik->i", a[:, :8].astype(np.float64), b[:, :8].astype(np.float64))
    assert (np.abs(dropped - ref) > bound).mean() > 0.9  # a lost 8-wide K slice fails on most outputs
    assert math.isclose(tol.atol, 8 * 2.0**-24 * K)
