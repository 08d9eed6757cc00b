"""The backward note: the patch's constant is the one the repro measures, and on the GPU the patched launch
computes what upstream's does (same kernel, more programs)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTE_DIR = Path(__file__).resolve().parents[1] / "notes" / "liger_fused_add_rmsnorm_bwd"


def test_patch_sets_the_measured_programs_per_sm():
    from gpufolio_projects.oss_pr_notes.notes.liger_fused_add_rmsnorm_bwd.repro.launch import PATCH_PROGRAMS_PER_SM

    patch = (NOTE_DIR / "fused-add-rmsnorm-bwd-programs-per-sm.patch").read_text()
    liger_file = patch.split("+++ b/src/liger_kernel/ops/fused_add_rms_norm.py\n")[-1].split("\ndiff --git")[0]
    # the last value the branch gives programs_per_sm on CUDA is the one the repro's `patched` variant runs
    values = re.findall(r"^\+\s+programs_per_sm = (\d+)$", liger_file, flags=re.M)
    assert values and int(values[-1]) == PATCH_PROGRAMS_PER_SM
    assert "+    grid = (n_programs,)" in patch and "-    grid = (sm_count,)" in patch


@pytest.mark.gpu
def test_patched_launch_matches_upstream_on_gpu():
    """One ragged case (3063 rows over 4 x 132 programs: the last ones get fewer rows, or none): it compiles two
    kernels, all the GPU round's budget allows."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    pytest.importorskip("liger_kernel.ops.fused_add_rms_norm")
    from gpufolio_projects.oss_pr_notes.notes.liger_fused_add_rmsnorm_bwd.repro import bench, launch

    make = bench._make_inputs(3 * 1021, 1024, torch.bfloat16, torch.device("cuda"))
    inputs = make(torch.Generator("cuda").manual_seed(0))
    dX_up, dW_up = bench._upstream(inputs)
    dX, dW = launch.backward(inputs["dY"], inputs["dS_out"], inputs["S"], inputs["W"], inputs["RSTD"], 0.0,
                             bench.LLAMA, launch.PATCH_PROGRAMS_PER_SM)
    assert torch.equal(dX, dX_up)  # each row is computed by the same code whichever program runs it
    # dW: the same fp32 partial sums grouped differently, then rounded to bf16: a rounding apart at most
    torch.testing.assert_close(dW.float(), dW_up.float(), rtol=2 * torch.finfo(torch.bfloat16).eps, atol=1e-3)
