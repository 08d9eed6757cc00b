"""The state of one render: the prepared frame, where pages go, and the chart writer markers use."""
from __future__ import annotations

from dataclasses import dataclass
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

    def write(self, rel: str, text: str) -> Path:
        path = self.docs_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.rstrip() + "\n", encoding="utf-8")
        return path

    def chart(self, name: str) -> tuple[str, Path]:
        """(docs-relative path, absolute path) of a chart PNG."""
        rel = f"{GENERATED_CHARTS}/{name}"
        return rel, self.docs_dir / rel

    def marker_ctx(self, page: str) -> M.Context:
        return M.Context(self.df, page, self.site, chart=self._marker_chart)

    def _marker_chart(self, marker: M.Marker, run: pd.DataFrame, x: str | None) -> str:
        rel, path = self.chart(M.chart_name(marker))
        first = run.iloc[0]
        meta = first.record.get("bench_meta") or {}
        title = f"{marker.args['project']}/{marker.args['bench']} — {first.gpu_name}, run {first.run_id}"
        ok = run[(run.status == "ok") & run.is_headline_metric.astype(bool)]
        if x and ok.params.map(lambda p: p.get(x)).nunique() > 1:
            ok = self.one_series(ok, x, meta.get("headline_params") or {}, marker)
            charts.variant_lines(ok, x, title, path)
        else:
            charts.headline_bars(ok, meta.get("headline_baseline"), title, path)
        return rel

    @staticmethod
    def one_series(rows: pd.DataFrame, x: str, headline: dict, marker: M.Marker | None = None) -> pd.DataFrame:
        """Rows that differ only in ``x``: where other params vary too, keep the headline's values."""
        others = rows.params.map(lambda p: R.params_text({k: v for k, v in p.items() if k != x}))
        if others.nunique() <= 1:
            return rows
        fixed = {k: v for k, v in headline.items() if k != x}
        keep = rows[[R.params_match(p, fixed) for p in rows.params]]
        if keep.empty or keep.params.map(lambda p: R.params_text({k: v for k, v in p.items() if k != x})).nunique() > 1:
            if marker is not None:
                raise marker.fail(f"several configs besides {x} vary ({'; '.join(sorted(others.unique()))}); "
                                  "add k=v filters")
            return rows.iloc[0:0]
        return keep
