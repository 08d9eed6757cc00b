"""The state of one render: the prepared frame, where pages go, and the chart queue.

Charts dominate render time (matplotlib on a 2-core machine), so pages only *queue* them (``plot``) and
``draw_charts`` draws them at the end: unchanged charts come from a cache keyed by their data and the chart
code, the rest are drawn in a process pool.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import pickle
import shutil
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import charts
from . import markers as M
from . import records as R

GENERATED_CHARTS = "generated/charts"


@dataclass
class RenderCtx:
    df: pd.DataFrame
    site: R.Site
    docs_dir: Path
    repo_root: Path
    cache_dir: Path | None = None
    jobs: list[tuple[Path, str, Callable, tuple]] = field(default_factory=list)
    marker_errors: list[str] | None = None  # a list: collect every bad marker instead of stopping at the first

    def write(self, rel: str, text: str) -> Path:
        path = self.docs_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.rstrip() + "\n", encoding="utf-8")
        return path

    def chart(self, name: str) -> tuple[str, Path]:
        """(docs-relative path, absolute path) of a chart PNG."""
        rel = f"{GENERATED_CHARTS}/{name}"
        return rel, self.docs_dir / rel

    def plot(self, name: str, fn: Callable, *args) -> str:
        """Queue ``fn(path, *args)`` to draw ``generated/charts/<name>``; returns the docs-relative path."""
        rel, path = self.chart(name)
        key = hashlib.sha256(pickle.dumps((fn.__name__, args)) + _CHART_CODE).hexdigest()[:24]
        self.jobs.append((path, key, fn, args))
        return rel

    def draw_charts(self) -> int:
        """Draw every queued chart (from the cache where possible); returns how many were drawn anew."""
        todo = []
        for path, key, fn, args in self.jobs:
            cached = self.cache_dir / f"{key}.png" if self.cache_dir else None
            path.parent.mkdir(parents=True, exist_ok=True)
            if cached is not None and cached.is_file():
                shutil.copyfile(cached, path)
            else:
                todo.append((path, cached, fn, args))
        if len(todo) >= 6 and (os.cpu_count() or 1) > 1:
            with ProcessPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
                list(pool.map(_draw, todo))
        else:
            for job in todo:
                _draw(job)
        return len(todo)

    def marker_ctx(self, page: str) -> M.Context:
        ctx = M.Context(self.df, page, self.site, chart=self._marker_chart, errors=self.marker_errors)
        # one split of the store for every page of a render (a one-slot cache: a render reads one frame)
        if _SPLIT[0] is None or _SPLIT[0].df is not self.df:
            _SPLIT[0] = M.Split(self.df)
        ctx._split = _SPLIT[0]
        return ctx

    def _marker_chart(self, marker: M.Marker, run: pd.DataFrame, x: str | None) -> str:
        meta = run.iloc[0].record.get("bench_meta") or {}
        where = "".join(f" {k}={v}" for k, v in marker.filters.items())  # which slice, when the marker picks one
        ok = R.counted(run[run.is_headline_metric.astype(bool)], R.run_gpu(run))  # only numbers that count
        first = ok.iloc[0]
        title = f"{marker.args['project']}/{marker.args['bench']}{where} — {first.gpu_name}, run {first.run_id}"
        if x and ok.params.map(lambda p: p.get(x)).nunique() > 1:
            ok = self.one_series(ok, x, meta.get("headline_params") or {}, marker)
            return self.plot(M.chart_name(marker), charts.variant_lines, charts.slim(ok, x), x, title)
        return self.plot(M.chart_name(marker), charts.headline_bars, charts.slim(ok),
                         meta.get("headline_baseline"), title)

    @staticmethod
    def one_series(rows: pd.DataFrame, x: str, headline: dict, marker: M.Marker | None = None) -> pd.DataFrame:
        """Rows that differ only in ``x``: where other params vary too, keep the headline's values."""
        others = rows.params.map(lambda p: R.params_text({k: v for k, v in p.items() if k != x}))
        xs = rows.params.map(lambda p: R.norm_value(p.get(x)))
        if others.nunique() <= 1 or not xs.groupby(rows.variant).apply(lambda s: s.duplicated().any()).any():
            return rows  # one point per (variant, x): other params move with x (M=N=K), still one series
        fixed = {k: v for k, v in headline.items() if k != x}
        keep = rows[[R.params_match(p, fixed) for p in rows.params]]
        if keep.empty or keep.params.map(lambda p: R.params_text({k: v for k, v in p.items() if k != x})).nunique() > 1:
            if marker is not None:
                raise marker.fail(f"several configs besides {x} vary ({'; '.join(sorted(others.unique()))}); "
                                  "add k=v filters")
            return rows.iloc[0:0]
        return keep


_SPLIT: list[M.Split | None] = [None]
_CHART_CODE = hashlib.sha256(inspect.getsource(charts).encode()).digest()


def _draw(job) -> None:
    path, cached, fn, args = job
    fn(path, *args)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}")
        shutil.copyfile(path, tmp)
        os.replace(tmp, cached)
