"""The bench declaration: shapes, FLOP counts, headline, and that it imports without torch."""
import subprocess
import sys

import pytest
from gpufolio_projects.flash_attention import bench
from gpufolio_projects.flash_attention.kernels.tuning import interpreting


def test_configs_keep_tokens_constant():
    for p in bench.configs("full"):
        assert p["B"] * p["S"] == bench.TOKENS and p["H"] == 16 and p["dtype"] == "bfloat16"
    assert {p["S"] for p in bench.configs("full")} == {512, 1024, 2048, 4096, 8192, 16384}


def test_quick_contains_headline():
    for b in bench.BENCHES:
        head = dict(b.headline_params)
        assert any(all(p[k] == v for k, v in head.items()) for p in bench.configs("quick"))
        assert any(all(p[k] == v for k, v in head.items()) for p in bench.configs("full"))
        assert b.headline_baseline == bench.STRONGEST[b.name] and b.x_param == "S"


def test_flops():
    p = {"B": 4, "H": 16, "S": 4096, "D": 128, "causal": False}
    assert bench.flops(p, backward=False) == 4 * 4 * 16 * 4096 * 4096 * 128
    assert bench.flops(dict(p, causal=True), backward=False) == 2 * 4 * 16 * 4096 * 4096 * 128
    assert bench.flops(p, backward=True) == 3.5 * bench.flops(p, backward=False)


def test_dry_configs_are_tiny():
    for p in bench.configs("dry"):
        assert p["S"] <= 64 and p["dtype"] in ("float32", "float16")


def test_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['triton'] = None; "
            "import gpufolio_projects.flash_attention.bench as b; print(len(b.BENCHES))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"


def test_eager_refuses_huge_shapes():
    import torch
    from gpufolio.api import Unsupported

    p = bench._params(16384, 128, False)
    with pytest.raises(Unsupported, match="GiB"):
        bench._attention_fn("eager", p, torch.device("cpu"), backward=True)


def test_cuda_baselines_refuse_cpu():
    import torch
    from gpufolio.api import Unsupported

    p = bench._params(1024, 64, True)
    for variant in ("sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "flex", "fa4"):
        with pytest.raises(Unsupported):
            bench._attention_fn(variant, p, torch.device("cpu"), backward=False)


@pytest.mark.skipif(not interpreting(), reason="the dry case runs the kernels under TRITON_INTERPRET=1")
def test_dry_case_passes_the_rule():
    # One dry case end to end through the harness's own gate (interpreter; fp32, tiny).
    import torch
    from gpufolio.check import run_check

    p = bench.configs("dry")[1]
    for b in bench.BENCHES:
        case = b.case("triton_fa", p, torch.device("cpu"))
        gen = torch.Generator().manual_seed(1)
        result = run_check(case, gen)
        assert result["passed"], result


def test_fa4_is_a_baseline_that_skips_with_a_reason():
    for b in bench.BENCHES:
        fa4 = b.variant("fa4")
        assert fa4.role == "baseline" and fa4.available is not None
    reason = bench.fa4_missing()  # this machine: no flash-attn-4, or no sm_90 GPU
    assert reason is None or "flash-attn-4" in reason
