"""bench.py: gathers every note's repro, imports without torch, and agrees with the notes that cite it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from gpufolio.prnotes import load_notes


def test_bench_imports_without_torch():
    # torch and triton made unimportable: listing benches must still work (the site and `check` rely on it)
    code = ("import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
            "import gpufolio_projects.oss_pr_notes.bench as b\n"
            "print(','.join(x.name for x in b.BENCHES))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "liger_fused_add_rmsnorm" in out.stdout.split(",")[0]


def _benches():
    from gpufolio_projects.oss_pr_notes.bench import BENCHES

    return {b.name: b for b in BENCHES}


def test_every_cited_bench_exists_with_the_right_roles():
    notes, errors = load_notes()
    assert not errors
    benches = _benches()
    cited = [n for n in notes if n.meta.get("results")]
    assert cited, "at least one note cites a repro bench"
    for note in cited:
        res = note.meta["results"]
        bench = benches[res["bench"]]
        assert bench.variant(res["before"]).role == "baseline"
        assert bench.variant(res["after"]).role == "candidate"
        if res.get("headline_params"):
            assert dict(res["headline_params"]).items() <= dict(bench.headline_params).items()
            assert any(dict(res["headline_params"]).items() <= c.items() for c in bench.configs("full"))


@pytest.mark.parametrize("mode", ["full", "quick", "dry"])
def test_configs_are_flat_scalars(mode):
    for bench in _benches().values():
        configs = bench.configs(mode)
        assert configs
        for params in configs:
            assert all(isinstance(v, (str, int, float, bool)) for v in params.values()), params
            if mode != "dry":
                assert bench.x_param in params


def test_patched_passes_the_harness_gate_on_cpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from gpufolio.api import Unsupported
    from gpufolio.check import run_check

    bench = _benches()["liger_fused_add_rmsnorm"]
    device = torch.device("cpu")
    for params in bench.configs("dry"):
        case = bench.case("patched", params, device)
        result = run_check(case, torch.Generator().manual_seed(0))
        assert result["passed"], result
        with pytest.raises(Unsupported):  # Liger's kernels are never run on the interpreter
            bench.case("upstream", params, device)
