"""The GEMV sweep's candidate list (tune_gemv.candidates), on the CPU: what the H200 sweep times must be
launchable and within the register budget the module states."""
import pytest
from gpufolio_projects.inference_engine.lab.tune_gemv import candidates


@pytest.mark.parametrize("K,silu", [(2048, False), (2048, True), (8192, False), (3000, False), (16384, False)])
def test_candidates_fit_the_budget_and_cover_one_shot_and_loops(K, silu):
    cands = candidates(K, silu)
    assert len({tuple(sorted(c.items())) for c in cands}) == len(cands)  # no config timed twice
    pow2 = 1 << (K - 1).bit_length()
    for c in cands:
        assert c["USE_DOT"] is False and c["num_warps"] in (4, 8)
        assert c["BLOCK_K"] & (c["BLOCK_K"] - 1) == 0
        elems = c["BLOCK_N"] * c["BLOCK_K"] * (2 if silu else 1)
        if c["BLOCK_K"] >= K:  # one shot: the whole row, at most 32K weight elements per program
            assert c["BLOCK_K"] == pow2 and elems <= 32768 and c["num_stages"] == 1
    one_shot = [c for c in cands if c["BLOCK_K"] >= K]
    loops = [c for c in cands if c["BLOCK_K"] < K]
    assert bool(one_shot) == (pow2 <= 8192)  # rows longer than 8192 only loop
    assert loops and any(c["num_stages"] > 1 for c in loops)
