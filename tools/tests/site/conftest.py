"""Shared fixtures for the site tests: the fixture store (tools/tests/fixtures/site_repo), its prepared frame, and
one whole-site build from it that the build and browser tests share (building takes a while on 2 cores)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from gpufolio import PROJECTS, provenance, store
from gpufolio.site import build, records
from gpufolio.site import config as site_config

REPO = Path(__file__).resolve().parents[3]
FIXTURE_ROOT = REPO / "tools" / "tests" / "fixtures" / "site_repo"
GOLDEN = REPO / "tools" / "tests" / "fixtures" / "site_golden"
SITE = site_config.load(FIXTURE_ROOT)  # the fixture's gpufolio.yml: a test author and repository


def prepared_frame(root: Path = FIXTURE_ROOT):
    frame = store.load_frame(root)
    return records.prepare(frame, provenance.StaleCheck(root))


@pytest.fixture(scope="session")
def df():
    return prepared_frame()


@pytest.fixture(scope="session")
def mixed_df():
    """The fixture store plus make_site_fixtures.mixed_records(): another GPU model inside a run and in a newer
    run, a dirty record inside a clean run, a newer run without the baseline."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_site_fixtures", FIXTURE_ROOT.parent / "make_site_fixtures.py")
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    frame = store.frame(store.load_records(FIXTURE_ROOT) + fixtures.mixed_records())
    return records.prepare(frame, provenance.StaleCheck(FIXTURE_ROOT))


@pytest.fixture(scope="session")
def site_cfg():
    return SITE


@pytest.fixture(scope="session")
def fixture_root():
    return FIXTURE_ROOT


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture
def golden():
    return check_golden


def check_golden(name: str, text: str) -> None:
    """Compare with tools/tests/fixtures/site_golden/<name>; GPUFOLIO_UPDATE_GOLDEN=1 rewrites it (then review
    the diff: a golden file is only as good as the reading it got)."""
    path = GOLDEN / name
    if os.environ.get("GPUFOLIO_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}; run with GPUFOLIO_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """(docs dir, site dir) of the whole site rendered and built (strict) from the fixture store."""
    base = tmp_path_factory.mktemp("fixture-site")
    docs, site = base / "docs", base / "site"
    build.render(FIXTURE_ROOT, docs_dir=docs)
    build.mkdocs_build(REPO / "mkdocs.yml", docs_dir=docs, site_dir=site, results_root=FIXTURE_ROOT)
    return docs, site


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """The fixture store rendered to Markdown (charts queued, not drawn): for tests of the pages' text."""
    docs = tmp_path_factory.mktemp("fixture-render") / "docs"
    return build.render(FIXTURE_ROOT, docs_dir=docs, draw=False)
