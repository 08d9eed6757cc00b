"""Index arithmetic of the BF16 kernels, modelled in numpy (CPU only).

Each helper here mirrors one formula in projects/gemm_ladder/bf16/kernels/ (named in its docstring); the
tests check that the formulas compose into a correct GEMM and that the shared-memory accesses they produce are
free of bank conflicts. A wrong lane->row mapping here is a wrong kernel there.
"""
from __future__ import annotations

import numpy as np
import pytest


def swz128(row: int, chunk: int) -> int:
    """common.cuh swz128: byte offset of 16-byte chunk `chunk` of row `row` in a [rows][64] bf16 tile."""
    return row * 128 + ((chunk ^ (row & 7)) << 4)


def tma_swizzle_128b(addr: int) -> int:
    """What CU_TENSOR_MAP_SWIZZLE_128B (and wgmma layout type 1) does to a shared-memory byte address:
    XOR address bits [4:6] with bits [7:9]."""
    return addr ^ (((addr >> 7) & 7) << 4)


def banks_conflict_free(byte_addrs) -> bool:
    """True if one warp-wide shared-memory access touches each 4-byte bank at most once per 128-byte wavefront
    (addresses within the same 4-byte word count once)."""
    words = {a // 4 for a in byte_addrs}
    banks = [w % 32 for w in words]
    return len(banks) == len(set(banks))


# ------------------------------------------------------------------------------------------------ swizzle
def test_swz128_is_a_permutation_of_each_1024_byte_atom():
    offsets = [swz128(r, c) for r in range(8) for c in range(8)]
    assert sorted(offsets) == list(range(0, 1024, 16))


@pytest.mark.parametrize("base", [0, 1024, 49152 + 16384])
def test_swz128_matches_the_tma_and_wgmma_address_swizzle(base):
    """TMA writes logical (row, chunk) at swizzle(base + row*128 + chunk*16); the kernels' software
    swizzle and the wgmma descriptor (start address + 32 bytes per K step of 16) must agree with it."""
    for r in range(256):
        for c in range(8):
            assert tma_swizzle_128b(base + r * 128 + c * 16) == base + swz128(r, c)


def test_wgmma_k_step_offset_reaches_the_right_chunks():
    """A descriptor started at tile + 32*k reads logical chunks 2k and 2k+1 of every row (K = 16k .. 16k+15)."""
    for k in range(4):
        for r in range(16):
            for j in range(2):
                hw = tma_swizzle_128b(1024 + 32 * k + r * 128 + 16 * j)  # hardware: add, then swizzle
                assert hw == 1024 + swz128(r, 2 * k + j)


# ------------------------------------------------------------------------------------------------ mma.sync
def ldmatrix_x4(smem: np.ndarray, lane_addr: list[int]) -> np.ndarray:
    """PTX ldmatrix.x4 (b16): lane L gives the address of row L%8 of matrix L/8; thread t receives, in
    register i, elements (t/4, 2*(t%4)) and (t/4, 2*(t%4)+1) of matrix i. Returns regs[32 threads][4][2]."""
    mats = np.zeros((4, 8, 8), dtype=smem.dtype)
    for lane, a in enumerate(lane_addr):
        assert a % 16 == 0
        mats[lane // 8, lane % 8] = smem[a // 2: a // 2 + 8]
    regs = np.zeros((32, 4, 2), dtype=smem.dtype)
    for t in range(32):
        for i in range(4):
            regs[t, i] = mats[i, t // 4, 2 * (t % 4): 2 * (t % 4) + 2]
    return regs


def mma_16816(a_regs: np.ndarray, b0: np.ndarray, b1: np.ndarray) -> np.ndarray:
    """PTX mma.m16n8k16.row.col from per-thread fragments; returns the 16x8 product.
    A: reg0 (g, 2q..), reg1 (g+8, 2q..), reg2 (g, 2q+8..), reg3 (g+8, 2q+8..); B: b0 (k 2q.., n g),
    b1 (k 2q+8.., n g), with g = lane/4, q = lane%4."""
    A = np.zeros((16, 16))
    B = np.zeros((16, 8))
    for t in range(32):
        g, q = t // 4, t % 4
        A[g, 2 * q:2 * q + 2] = a_regs[t, 0]
        A[g + 8, 2 * q:2 * q + 2] = a_regs[t, 1]
        A[g, 2 * q + 8:2 * q + 10] = a_regs[t, 2]
        A[g + 8, 2 * q + 8:2 * q + 10] = a_regs[t, 3]
        B[2 * q:2 * q + 2, g] = b0[t]
        B[2 * q + 8:2 * q + 10, g] = b1[t]
    return A @ B


def to_swizzled_smem(tile: np.ndarray) -> np.ndarray:
    """load_tile_sync / load_tile_async: row r, chunk c of a [128][64] tile goes to swz128(r, c)."""
    out = np.zeros(tile.size, dtype=tile.dtype)
    for r in range(tile.shape[0]):
        for c in range(8):
            o = swz128(r, c) // 2
            out[o:o + 8] = tile[r, 8 * c:8 * c + 8]
    return out


def test_mma_sync_warp_tile_addressing_computes_a_times_b_transposed():
    """mma_sync_tile.cuh warp_mma_tile, for every warp of the 128 x 128 x 64 block tile."""
    rng = np.random.default_rng(0)
    A = rng.integers(-4, 5, size=(128, 64)).astype(np.float64)
    B = rng.integers(-4, 5, size=(128, 64)).astype(np.float64)
    sA, sB = to_swizzled_smem(A), to_swizzled_smem(B)
    C = np.zeros((128, 128))
    for warp in range(8):
        warp_m, warp_n = warp // 4, warp % 4
        for kk in range(4):
            a = [ldmatrix_x4(sA, [swz128(warp_m * 64 + mi * 16 + (L % 8) + 8 * ((L // 8) % 2), 2 * kk + L // 16)
                                  for L in range(32)]) for mi in range(4)]
            b = [ldmatrix_x4(sB, [swz128(warp_n * 32 + nj * 16 + (L % 8) + 8 * (L // 16), 2 * kk + (L // 8) % 2)
                                  for L in range(32)]) for nj in range(2)]
            for mi in range(4):
                for ni in range(4):
                    r0, c0 = warp_m * 64 + mi * 16, warp_n * 32 + ni * 8
                    C[r0:r0 + 16, c0:c0 + 8] += mma_16816(a[mi], b[ni // 2][:, 2 * (ni % 2)],
                                                          b[ni // 2][:, 2 * (ni % 2) + 1])
    np.testing.assert_array_equal(C, A @ B.T)


def test_ldmatrix_phases_are_bank_conflict_free():
    """ldmatrix serves 8 lanes (one 8x8 matrix) per phase: their 8 row addresses must hit 8 bank groups."""
    for kk in range(4):
        for base_row in (0, 16, 48, 64, 112):
            for lanes in (range(0, 8), range(8, 16), range(16, 24), range(24, 32)):
                a_addrs = [swz128(base_row + (L % 8) + 8 * ((L // 8) % 2), 2 * kk + L // 16) + 4 * w
                           for L in lanes for w in range(4)]
                b_addrs = [swz128(base_row + (L % 8) + 8 * (L // 16), 2 * kk + (L // 8) % 2) + 4 * w
                           for L in lanes for w in range(4)]
                assert banks_conflict_free(a_addrs) and banks_conflict_free(b_addrs)


def test_unswizzled_row_major_tile_would_conflict():
    """Why the swizzle exists: without it the 8 rows of an ldmatrix phase (128 B apart) share banks."""
    addrs = [r * 128 + 4 * w for r in range(8) for w in range(4)]
    assert not banks_conflict_free(addrs)


# ------------------------------------------------------------------------------------------------ wgmma
def wgmma_acc_coords(t: int, i: int) -> tuple[int, int]:
    """common.cuh store_acc_rowmajor: (row, col) of accumulator register i of thread t in an m64nN wgmma."""
    warp, lane = t // 32, t % 32
    j = i // 4
    row = warp * 16 + lane // 4 + (8 if i % 4 >= 2 else 0)
    col = 8 * j + 2 * (lane % 4) + (i % 2)
    return row, col


@pytest.mark.parametrize("n", [128, 256])
def test_wgmma_accumulator_layout_covers_the_tile_once(n):
    seen = {wgmma_acc_coords(t, i) for t in range(128) for i in range(n // 2)}
    assert len(seen) == 64 * n and seen == {(r, c) for r in range(64) for c in range(n)}


def test_tma_store_staging_is_the_swizzled_box_layout_and_conflict_free():
    """persistent.cuh TMA_STORE epilogue: register pair (4j, 4j+1) of thread t goes to box j/8 at
    swz128(row, j%8) + 4*(t%4); the TMA store reads box b's (r, c) from swz128(r, c/8) + 2*(c%8)."""
    boxes = np.full((4, 64 * 64), -1, dtype=np.int64)
    for t in range(128):
        for i in range(0, 128, 2):
            r, c = wgmma_acc_coords(t, i)
            j, q = i // 4, t % 4
            assert c == 8 * j + 2 * q
            off = (swz128(r, j % 8) + 4 * q) // 2
            boxes[j // 8, off] = r * 256 + c
            boxes[j // 8, off + 1] = r * 256 + c + 1
    for b in range(4):
        for r in range(64):
            for c in range(64):
                assert boxes[b, (swz128(r, c // 8) + 2 * (c % 8)) // 2] == r * 256 + 64 * b + c
    for warp in range(4):
        for j in range(32):
            for half in (0, 8):
                addrs = [swz128(warp * 16 + L // 4 + half, j % 8) + 4 * (L % 4) for L in range(32)]
                assert banks_conflict_free(addrs)


# ------------------------------------------------------------------------------------------------ schedule
def unit_coords(u: int, units_m: int, tiles_n: int, group_m: int) -> tuple[int, int]:
    """persistent.cuh unit_coords."""
    if group_m == 0:
        return u // tiles_n, u % tiles_n
    per_band = group_m * tiles_n
    band = u // per_band
    first = band * group_m
    height = min(group_m, units_m - first)
    r = u - band * per_band
    return first + r % height, r // height


@pytest.mark.parametrize("units_m,tiles_n", [(64, 32), (32, 32), (1, 16), (7, 3), (33, 112), (17, 1)])
@pytest.mark.parametrize("group_m", [0, 8, 16])
def test_tile_order_visits_every_tile_exactly_once(units_m, tiles_n, group_m):
    seen = [unit_coords(u, units_m, tiles_n, group_m) for u in range(units_m * tiles_n)]
    assert sorted(seen) == [(m, n) for m in range(units_m) for n in range(tiles_n)]


def test_grouped_order_keeps_fewer_panels_in_flight():
    """Rung 07's claim: 132 tiles in flight at 8192^2 (64 x 32 tiles of 128 x 256) touch fewer A+B bytes."""
    def bytes_in_flight(group_m: int) -> int:
        tiles = [unit_coords(u, 64, 32, group_m) for u in range(132)]
        rows = {m for m, _ in tiles}
        cols = {n for _, n in tiles}
        return len(rows) * 128 * 64 * 2 + len(cols) * 256 * 64 * 2  # per K step of 64

    assert bytes_in_flight(16) < 0.6 * bytes_in_flight(0)
