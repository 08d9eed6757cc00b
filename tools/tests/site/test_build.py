"""The whole site built by MkDocs (strict) from the fixture store and from an empty store; the committed README
table against a fresh render; and the render+build time on a synthetic store of more than 1,000 records."""
from __future__ import annotations

import importlib.util
import json
import random
import re
import time
from pathlib import Path

import pytest
from gpufolio import PROJECTS, provenance, store
from gpufolio.site import build, readme, records
from gpufolio.site import config as site_config

REPO = Path(__file__).resolve().parents[3]


def test_fixture_site_builds_strict_with_every_page(built_site):
    docs, site = built_site
    for rel in ["index.html", "runs/index.html", "not-counted/index.html", "worklog/index.html",
                "notebooks/results_explorer/index.html", *(f"projects/{p}/index.html" for p in PROJECTS)]:
        assert (site / rel).is_file(), rel
    posts = list((site / "worklog").rglob("a-fixture-worklog-entry/index.html"))
    assert len(posts) == 1
    home = (site / "index.html").read_text(encoding="utf-8")
    assert home.count('href="projects/') >= 6 and "not yet measured" in home


def test_every_chart_referenced_exists(built_site):
    docs, site = built_site
    for page in site.rglob("*.html"):
        for src in re.findall(r'<img[^>]+src="([^"]+\.png)"', page.read_text(encoding="utf-8")):
            assert (page.parent / src).resolve().is_file(), (page, src)


def test_notebook_was_executed_at_build(built_site):
    _, site = built_site
    html = (site / "notebooks/results_explorer/index.html").read_text(encoding="utf-8")
    assert "9 runs, 38 records" in html  # output of the first cell, computed from the fixture store
    assert "Traceback" not in html


def test_empty_store_builds_and_says_not_yet_measured(tmp_path):
    empty = tmp_path / "empty_repo"
    (empty / "projects").mkdir(parents=True)
    docs, site = tmp_path / "docs", tmp_path / "site"
    out = build.render(empty, docs_dir=docs)
    assert out.df.empty
    build.mkdocs_build(REPO / "mkdocs.yml", docs_dir=docs, site_dir=site, results_root=empty)
    home = (docs / "index.md").read_text(encoding="utf-8")
    assert home.count(">not yet measured</span>") == 6
    for p in PROJECTS:
        assert "Not yet measured" in (docs / f"projects/{p}.md").read_text(encoding="utf-8")
    assert (site / "index.html").is_file()


def test_committed_readme_table_matches_the_committed_results():
    """Fails when someone commits results (or changes sources) without running `nox -s site`."""
    path = REPO / "README.md"
    assert path.is_file(), "README.md is missing"
    text = path.read_text(encoding="utf-8")
    assert readme.START in text and readme.END in text, f"README.md needs {readme.START} ... {readme.END}"
    frame = store.load_frame(REPO)
    df = records.prepare(frame, provenance.StaleCheck(REPO))
    site = site_config.load(REPO)
    fresh = readme.splice(text, readme.headline_table(df, site))
    assert fresh == text, "README.md headline table is out of date: run `nox -s site` and commit README.md"


def _fixture_module():
    spec = importlib.util.spec_from_file_location("make_site_fixtures",
                                                  REPO / "tools/tests/fixtures/make_site_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def synthetic_store(root: Path, n_runs: int = 4) -> int:
    """6 projects x 2 benches x 6 variants x 4 sizes x n_runs records, all valid schema v1."""
    fx = _fixture_module()
    rng = random.Random(0)
    count = 0
    for p in PROJECTS:
        for b in ("bench_a", "bench_b"):
            meta = {"metric": "tflops", "unit": "TFLOP/s", "higher_is_better": True, "derive": "flops",
                    "headline_params": {"M": 4096}, "headline_baseline": "base", "x_param": "M",
                    "description": f"synthetic {b}", "variant_labels": {}}
            for r in range(n_runs):
                run_id = f"202611{10 + r:02d}T1{r}0000Z-{abs(hash((p, b, r))) % 16**6:06x}"
                lines = []
                for v in ("base", "v1", "v2", "v3", "v4", "v5"):
                    for m in (1024, 2048, 4096, 8192):
                        flops = 2.0 * m ** 3
                        ms = flops / (rng.uniform(20, 60) * 1e12) * 1e3
                        rec = fx.record(run_id, f"2026-11-{10 + r:02d}T10:00:00+00:00", p, b, meta, v,
                                        "baseline" if v == "base" else "candidate", {"M": m, "N": m, "K": m},
                                        round(ms, 6), {"flops": flops, "bytes": 12.0 * m * m, "tokens": None})
                        store.validate(rec)
                        lines.append(json.dumps(rec))
                        count += 1
                path = root / "projects" / p / "results" / f"{run_id}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return count


@pytest.mark.slow
def test_render_and_build_of_1000_records_within_60_s(tmp_path):
    root = tmp_path / "big_repo"
    assert synthetic_store(root) >= 1000
    docs, site = tmp_path / "docs", tmp_path / "site"
    t0 = time.perf_counter()
    build.render(root, docs_dir=docs)
    t_render = time.perf_counter() - t0
    build.mkdocs_build(REPO / "mkdocs.yml", docs_dir=docs, site_dir=site, results_root=root)
    total = time.perf_counter() - t0
    assert (site / "runs/index.html").is_file()
    assert total <= 60, f"render {t_render:.1f}s + build {total - t_render:.1f}s > 60s"
