"""Every project's bench declarations keep the contract the harness and the site rely on."""
import subprocess
import sys

import pytest
from gpufolio import PROJECTS
from gpufolio.projects import benches

SCALARS = (str, int, float, bool, type(None))

ALL = [(p, b) for p in PROJECTS for b in benches(p)]


def test_bench_modules_import_without_torch():
    """The site reads bench metadata on machines with no torch: bench.py imports torch lazily."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'triton'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from gpufolio import PROJECTS\n"
        "from gpufolio.projects import benches\n"
        "for p in PROJECTS:\n"
        "    for b in benches(p):\n"
        "        for mode in ('full', 'quick', 'dry'):\n"
        "            b.configs(mode)\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.parametrize("project, bench", ALL, ids=[f"{p}/{b.name}" for p, b in ALL])
def test_configs_are_flat_and_the_headline_is_measured(project, bench):
    full = bench.configs("full")
    assert full, "a bench with no full configs measures nothing"
    for mode in ("full", "quick", "dry"):
        for params in bench.configs(mode):
            assert params and all(isinstance(v, SCALARS) for v in params.values()), params
    head = dict(bench.headline_params)
    assert head, "set headline_params: the home page quotes one config per bench"
    matches = [c for c in full if all(c.get(k) == v for k, v in head.items())]
    assert matches, f"no full config has the headline params {head}"
    quick_matches = [c for c in bench.configs("quick") if all(c.get(k) == v for k, v in head.items())]
    assert quick_matches, "the quick set should include the headline config"
    if bench.x_param:
        assert all(bench.x_param in c for c in full)


@pytest.mark.parametrize("project, bench", ALL, ids=[f"{p}/{b.name}" for p, b in ALL])
def test_variants_have_labels_and_a_baseline(project, bench):
    roles = {v.role for v in bench.variants}
    assert roles == {"candidate", "baseline"}
    assert bench.headline_baseline in [v.name for v in bench.variants if v.role == "baseline"]
