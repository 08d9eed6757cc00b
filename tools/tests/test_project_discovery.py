"""A seventh project needs no edit of the harness: a tree with projects/toy/{project.py,bench.py,results/} is found
by discovery, its bench runs (dry run), its records validate, and the site gives it a page under its title."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from gpufolio import PROJECTS, project_facts, store

REPO = Path(__file__).resolve().parents[2]

TOY_FACTS = textwrap.dedent('''
    """toy's facts: a project the harness has never heard of."""
    TITLE = "Toy copy"
    ORDER = 7
    HOME_BENCHES = ("toy_copy",)
''')

TOY_BENCH = textwrap.dedent('''
    """One tiny bench: out = x, against torch.clone."""
    from gpufolio.api import GBPS, Bench, Case, Tolerance, Variant, Work


    def _case(variant, params, device):
        import torch

        n = params["n"]

        def fn(inp):
            inp["out"].copy_(inp["x"])
            return inp["out"]

        return Case(fn=fn if variant == "copy" else (lambda inp: inp["x"].clone()),
                    make_inputs=lambda gen: {"x": torch.randn(n, generator=gen, device=device),
                                             "out": torch.empty(n, device=device)},
                    reference=lambda inp: inp["x"].double(), tolerance=Tolerance(0.0, 0.0),
                    outputs_in_inputs=("out",) if variant == "copy" else (), work=Work(bytes=8.0 * n))


    BENCHES = [Bench(project="toy", name="toy_copy", metric=GBPS,
                     variants=[Variant("torch_clone", "baseline"), Variant("copy", label="Copy")],
                     configs=lambda mode: [{"n": 256}], case=_case, headline_params={"n": 256}, x_param="n")]
''')


@pytest.fixture
def toy_tree(tmp_path):
    """A checkout with the toy project alone, the site's committed static pages and a README with the headline
    table's markers."""
    toy = tmp_path / "projects" / "toy"
    (toy / "results").mkdir(parents=True)
    (toy / "project.py").write_text(TOY_FACTS)
    (toy / "bench.py").write_text(TOY_BENCH)
    (toy / "README.md").write_text("# Toy copy\n\nA copy kernel.\n")
    shutil.copytree(REPO / "site_src", tmp_path / "site_src",
                    ignore=shutil.ignore_patterns("generated", ".ipynb_checkpoints", "__pycache__"))
    shutil.copy(REPO / "gpufolio.yml", tmp_path / "gpufolio.yml")
    shutil.copy(REPO / "tools" / "tests" / "fixtures" / "site_repo" / "README.md", tmp_path / "README.md")
    return tmp_path


def _gpufolio(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m gpufolio`` on ``root``; the toy bench imports as ``toy.bench`` (no install names it)."""
    env = dict(os.environ, GPUFOLIO_ROOT=str(root), GPUFOLIO_BENCH_MODULES="toy.bench",
               PYTHONPATH=os.pathsep.join([str(root / "projects"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "gpufolio", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_real_projects_are_discovered_in_their_stated_order():
    assert PROJECTS == ("gemm_ladder", "flash_attention", "fused_kernels", "fsdp_mfu", "inference_engine",
                        "oss_pr_notes")
    assert project_facts.facts("gemm_ladder").title == "GEMM ladder"
    assert project_facts.facts("gemm_ladder").needs_nvcc and not project_facts.facts("fsdp_mfu").needs_nvcc
    assert project_facts.facts("oss_pr_notes").entry_points == ("bench.py", "notes/*/repro/bench.py")


def test_facts_are_read_without_running_project_py(tmp_path):
    (tmp_path / "projects" / "b").mkdir(parents=True)
    (tmp_path / "projects" / "a").mkdir()
    (tmp_path / "projects" / "b" / "project.py").write_text('import no_such_module\nTITLE = "B"\nORDER = 1\n')
    (tmp_path / "projects" / "a" / "project.py").write_text("")  # no ORDER: after the ordered ones
    (tmp_path / "projects" / "not_a_project").mkdir()
    assert project_facts.names(tmp_path) == ("b", "a")
    assert project_facts.facts("a", tmp_path).title == "a"


def test_a_fact_of_the_wrong_type_is_named(tmp_path):
    (tmp_path / "projects" / "p").mkdir(parents=True)
    (tmp_path / "projects" / "p" / "project.py").write_text('ORDER = "first"\n')
    with pytest.raises(ValueError, match=r"project.py:1: ORDER must be a int"):
        project_facts.names(tmp_path)


def test_a_record_of_no_project_is_refused_naming_the_field():
    rec = _record()
    rec["project"] = "nope"
    with pytest.raises(store.RecordError, match=r"record: project: 'nope' is not one of"):
        store.validate(rec)


def _record() -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from made_records import RA, rec
    finally:
        sys.path.pop(0)
    return rec(RA)


def test_a_new_project_is_listed_run_validated_and_rendered_without_a_harness_edit(toy_tree):
    pytest.importorskip("torch")
    listed = subprocess.run([sys.executable, "-c", "import gpufolio; print(','.join(gpufolio.PROJECTS))"],
                            env=dict(os.environ, GPUFOLIO_ROOT=str(toy_tree)), capture_output=True, text=True)
    assert listed.stdout.strip() == "toy", listed.stderr

    ran = _gpufolio(toy_tree, "bench", "--project", "toy", "--dry-run", "--no-progress")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    files = list((toy_tree / "projects" / "toy" / "results").glob("*.jsonl"))
    assert len(files) == 1
    checked = _gpufolio(toy_tree, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    records = [json.loads(line) for line in files[0].read_text().splitlines()]  # `check` validated them
    assert {(r["project"], r["variant"], r["status"]) for r in records} == {
        ("toy", "copy", "dry_run"), ("toy", "torch_clone", "dry_run")}

    rendered = _gpufolio(toy_tree, "site", "--render-only")
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    page = (toy_tree / "site_src" / "projects" / "toy.md").read_text()
    assert page.startswith("# Toy copy") or "\n# Toy copy" in page
    assert "toy_copy" in page
    assert "Toy copy: projects/toy.md" in (toy_tree / "site_src" / ".nav.yml").read_text()
    assert "[Toy copy](projects/toy.md)" in (toy_tree / "site_src" / "index.md").read_text()  # the home table
