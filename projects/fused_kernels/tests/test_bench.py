"""The bench declarations: importable without torch, flat params, headlines that name real configs, and every
dry config passing the harness's own correctness gate on CPU (ours and eager; the GPU-only peers skip)."""
import subprocess
import sys

import pytest
from gpufolio.api import Unsupported
from gpufolio.check import run_check
from gpufolio_projects.fused_kernels.bench import BENCHES

NAMES = ["copy", "swiglu", "linear_cross_entropy", "add_rmsnorm", "rmsnorm"]


def test_bench_names_and_baselines():
    assert [b.name for b in BENCHES] == NAMES
    for b in BENCHES[1:]:
        assert {"eager", "torch_compile", "liger"} <= {v.name for v in b.variants if v.role == "baseline"}
    # QuACK where it has the op: both norms and cross-entropy (on materialised logits); no SwiGLU
    with_quack = {b.name for b in BENCHES if "quack" in {v.name for v in b.variants}}
    assert with_quack == {"rmsnorm", "add_rmsnorm", "linear_cross_entropy"}
    packages = {"liger": "liger-kernel", "quack": "quack-kernels"}
    for b in BENCHES:
        for v in b.variants:
            if v.name in packages:  # the peers extra: missing here means skipped with the reason, never failed
                reason = v.available()
                assert reason is None or packages[v.name] in reason or "GPU" in reason, reason


def test_import_without_torch():
    code = ("import sys; import gpufolio_projects.fused_kernels.bench as b; "
            "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'imported eagerly'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("mode", ["full", "quick", "dry"])
def test_configs_flat_and_headline_present(mode):
    for b in BENCHES:
        configs = b.configs(mode)
        assert configs, (b.name, mode)
        for p in configs:
            assert all(isinstance(v, (str, int, float, bool)) for v in p.values()), p
        if mode != "dry":
            assert any(all(p.get(k) == v for k, v in b.headline_params.items()) for p in configs), b.name


@pytest.mark.parametrize("bench", BENCHES, ids=lambda b: b.name)
def test_dry_configs_pass_the_gate(bench):
    import torch

    gen = torch.Generator().manual_seed(0)
    ran = 0
    for p in bench.configs("dry"):
        for v in bench.variants:
            try:
                case = bench.case(v.name, dict(p), torch.device("cpu"))
            except Unsupported:
                assert v.name in ("torch_compile", "liger", "quack")
                continue
            result = run_check(case, gen)
            assert result["passed"], (v.name, p, result)
            ran += 1
    assert ran >= 2 * len(bench.configs("dry"))
