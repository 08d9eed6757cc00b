"""Render every generated page into the docs dir, then let MkDocs build it (strict).

The docs dir is ``site_src/`` (static pages, css, notebook, templates are committed there; everything this
module writes is listed in ``site_src/.gitignore`` and removed before each render, so a deleted result or entry
never lingers). Tests render into a temporary copy of ``site_src/`` instead.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import provenance, store

# history: the history and regressions pages (they add themselves to the nav)
from . import about, history, pages, project
from . import config as C
from . import records as R
from .context import RenderCtx
from .markers import MarkerError

# What render() writes under the docs dir (mirrored in site_src/.gitignore).
GENERATED = ("index.md", "projects", "runs.md", "not-counted.md", "generated", "worklog/posts", ".nav.yml",
             ".site.yml", "about.md", "worklog/.authors.yml",
             "contributions")  # the last one: gpufolio.prnotes.site.write_pages
log = logging.getLogger("gpufolio.site")
GENERATED += ("history", "regressions.md")  # gpufolio.site.history


@dataclass
class Rendered:
    df: pd.DataFrame
    docs_dir: Path
    site: C.Site
    pages: list[str]


def prepare_docs_dir(repo_root: Path, docs_dir: Path) -> None:
    """Copy the committed static content of site_src/ into another docs dir (tests), then clear generated files."""
    static = repo_root / "site_src"
    if docs_dir.resolve() != static.resolve():
        shutil.copytree(static, docs_dir, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    for name in GENERATED:
        path = docs_dir / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


class SiteError(ValueError):
    """A render problem outside markers (e.g. an invalid OSS-PR note); str() names the file."""


def _prnote_pages(repo_root: Path, docs_dir: Path, frame: pd.DataFrame) -> list[tuple[str, str]]:
    """The OSS-PR notes pages (gpufolio.prnotes, another module), from the notes of ``repo_root``."""
    try:
        from ..prnotes import site as prsite
        from ..prnotes.notes import load_notes
    except ImportError:
        return []
    notes, errors = load_notes(repo_root)
    try:
        if errors:
            raise ValueError("; ".join(errors))
        return list(prsite.write_pages(docs_dir, frame, notes))
    except ValueError as e:
        raise SiteError(f"OSS-PR notes: {' / '.join(str(e).splitlines())}") from e


def prepared_frame(repo_root: Path, results_root: Path | None = None) -> pd.DataFrame:
    """The store's frame with the site's columns; staleness is judged against ``repo_root``'s sources."""
    frame = store.load_frame(results_root or repo_root)
    return R.prepare(frame, provenance.StaleCheck(repo_root))


def render(repo_root: Path | None = None, results_root: Path | None = None, docs_dir: Path | None = None,
           site: C.Site | None = None, cache_dir: Path | None = None, draw: bool = True,
           all_errors: bool = False, df: pd.DataFrame | None = None) -> Rendered:
    """Write every generated page and chart. ``site``: the site configuration (default: ``repo_root``'s
    gpufolio.yml). ``cache_dir``: reuse charts whose data did not change (``.build/site-cache`` for the CLI;
    None in tests, which want every chart drawn). ``draw=False`` writes the Markdown only (tests of the
    pages' text)."""
    repo_root = (repo_root or store.repo_root()).resolve()
    docs_dir = docs_dir or repo_root / "site_src"
    prepare_docs_dir(store.repo_root(), docs_dir)
    df = prepared_frame(repo_root, results_root) if df is None else df
    frame = df[[c for c in store.FRAME_COLUMNS]]
    site = site or C.load(repo_root)
    ctx = RenderCtx(df, site, docs_dir, repo_root, cache_dir, marker_errors=[] if all_errors else None)
    extra = {p: project.render_writeups(ctx, p) for p in R.projects()}
    if "oss_pr_notes" in extra:  # the notes pages (gpufolio.prnotes) belong to that project, when the tree has it
        extra["oss_pr_notes"] += _prnote_pages(repo_root, docs_dir, frame)
    written = [project.render_project(ctx, p, extra.get(p) or []) for p in R.projects()]
    about.render(ctx)
    pages.render_home(ctx)
    pages.render_runs(ctx)
    pages.render_not_counted(ctx)
    written += pages.render_worklog(ctx)
    pages.write_nav(ctx, extra)
    written += history.render(ctx)  # after write_nav: it adds its pages to the nav
    if ctx.marker_errors:
        errors = sorted(ctx.marker_errors, key=lambda e: (e.split(":")[0], int(e.split(":")[1])))
        raise MarkerError(f"{len(errors)} unresolved markers:\n" + "\n".join(errors))
    if draw:
        drawn = ctx.draw_charts()
        log.info("charts: %d drawn, %d from the cache", drawn, len(ctx.jobs) - drawn)
    return Rendered(df, docs_dir, site, written)


def mkdocs_build(config_file: Path, docs_dir: Path | None = None, site_dir: Path | None = None,
                 results_root: Path | None = None) -> None:
    """``mkdocs build --strict`` in-process (one interpreter start, not two). The notebook kernel reads the
    same store as the pages through GPUFOLIO_RESULTS_ROOT."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    overrides = {"strict": True}
    if docs_dir is not None:
        overrides["docs_dir"] = str(docs_dir)
    if site_dir is not None:
        overrides["site_dir"] = str(site_dir)
    old = os.environ.get("GPUFOLIO_RESULTS_ROOT")
    if results_root is not None:
        os.environ["GPUFOLIO_RESULTS_ROOT"] = str(Path(results_root).resolve())
    try:
        cfg = load_config(str(config_file), **overrides)
        cfg.plugins.on_startup(command="build", dirty=False)  # as `mkdocs build` does (the feed plugin needs it)
        try:
            build(cfg)
        finally:
            with contextlib.suppress(FileNotFoundError):  # the blog plugin removes a temp dir that may be gone
                cfg.plugins.on_shutdown()
    finally:
        if results_root is not None:
            if old is None:
                os.environ.pop("GPUFOLIO_RESULTS_ROOT", None)
            else:
                os.environ["GPUFOLIO_RESULTS_ROOT"] = old
