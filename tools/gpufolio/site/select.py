"""Which number is the headline, and which records are not counted (with why).

The headline of a bench: the newest run with a countable record at ``bench_meta.headline_params``; in it, the best
countable candidate against ``headline_baseline`` measured in the same run, at the same params, on the same GPU
model. A run that has both beats a newer run that has only the candidate (a ratio is the point of the headline);
a candidate that loses stays the headline and is shown losing. Countable = ``records.counted``: a sound record
of the portfolio's GPU model; another model's records get headlines of their own (``gpu=``), never mixed in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import project_facts
from . import records as R


@dataclass
class Headline:
    project: str
    bench: str
    candidate: dict           # the candidate's frame row
    baseline: dict | None     # the baseline's frame row, same run/params/GPU; None when the run has none
    ratio: float | None       # > 1: the candidate wins
    meta: dict
    # The strongest baseline of the same run/params/GPU when it is not the headline baseline: a win over eager
    # that loses to torch.compile must say so next to the win.
    best_baseline: dict | None = None
    best_ratio: float | None = None

    @property
    def loses(self) -> bool:
        return self.ratio is not None and self.ratio < 1.0

    @property
    def loses_to_best(self) -> bool:
        return self.best_ratio is not None and self.best_ratio < 1.0

    @property
    def stale(self) -> bool:
        return bool(self.candidate["stale"] or (self.baseline and self.baseline["stale"]))


def _headline_rows(df: pd.DataFrame, project: str, bench: str, gpu: str | None = None) -> pd.DataFrame:
    rows = df[(df.project == project) & (df.bench == bench) & df.is_headline_metric.astype(bool)]
    rows = R.counted(rows, gpu)
    return rows[rows.value.notna()]


def bench_headline(df: pd.DataFrame, project: str, bench: str, gpu: str | None = None) -> Headline | None:
    """``gpu``: whose headline (default: the portfolio's GPU model)."""
    df = df[(df.project == project) & (df.bench == bench)]  # once: every lookup below is on this bench only
    meta = R.bench_meta(df, project, bench)
    if not meta:
        return None
    hp = meta.get("headline_params") or {}
    base_name = meta.get("headline_baseline")
    rows = _headline_rows(df, project, bench, gpu)
    if rows.empty:
        return None
    rows = rows[[R.params_match(p, hp) for p in rows.params]]
    best_alone = None
    for run_id in rows.sort_values("created_at", ascending=False).run_id.unique():
        run = rows[rows.run_id == run_id]
        cands = run[run.role == "candidate"]
        if cands.empty:
            continue
        higher = bool(cands.iloc[0].higher_is_better)
        best = cands.loc[cands.value.idxmax() if higher else cands.value.idxmin()].to_dict()
        bases = run[(run.variant == base_name) & (run.params_key == best["params_key"])
                    & (run.gpu_name == best["gpu_name"])]
        if bases.empty:
            best_alone = best_alone or Headline(project, bench, best, None, None, meta)
            continue
        base = bases.iloc[0].to_dict()
        head = Headline(project, bench, best, base, R.speedup(best["value"], base["value"], higher), meta)
        rivals = run[(run.role == "baseline") & (run.params_key == best["params_key"])
                     & (run.gpu_name == best["gpu_name"])]
        top = rivals.loc[rivals.value.idxmax() if higher else rivals.value.idxmin()].to_dict()
        if top["variant"] != base["variant"]:
            head.best_baseline, head.best_ratio = top, R.speedup(best["value"], top["value"], higher)
        return head
    return best_alone


def project_headlines(df: pd.DataFrame, project: str, gpu: str | None = None) -> list[Headline]:
    out = [bench_headline(df, project, b, gpu) for b in R.benches(df, project)]
    return [h for h in out if h is not None]


def other_gpus(df: pd.DataFrame, project: str | None = None) -> list[str]:
    """GPU models with sound records besides the portfolio's: each gets a section of its own."""
    rows = df if project is None else df[df.project == project]
    names = rows[rows.quality.isna() & rows.gpu_name.notna()].gpu_name.unique()
    return sorted(n for n in names if n != R.portfolio_gpu())


def home_headline(df: pd.DataFrame, project: str) -> Headline | None:
    """The one bench a project is quoted by on the home page and in the README: the first of its project.py's
    HOME_BENCHES that has a headline (a project page shows all of them), else its first bench by name."""
    heads = {h.bench: h for h in project_headlines(df, project)}
    for bench in project_facts.facts(project).home_benches:
        if bench in heads:
            return heads[bench]
    return heads[min(heads)] if heads else None


def not_counted(df: pd.DataFrame, project: str | None = None) -> pd.DataFrame:
    """One row per record that can never be a headline number, newest first, with its reason."""
    rows = R.records_view(df)
    rows = rows[rows.reason.notna()]
    if project is not None:
        rows = rows[rows.project == project]
    return rows.sort_values(["created_at", "project", "bench", "variant"], ascending=[False, True, True, True])


def latest_run(df: pd.DataFrame, project: str, bench: str, filters: dict[str, Any] | None = None,
               run_id: str | None = None, gpu: str | None = None) -> pd.DataFrame:
    """All metric rows of the newest run of a bench with a record that counts on ``gpu`` (default: the
    portfolio's) matching ``filters``; empty when there is none. The rows that do not count stay in (a table
    says why each is not a number); ``records.counted`` picks the numbers."""
    rows = df[(df.project == project) & (df.bench == bench)]
    if filters:
        rows = rows[[R.params_match(p, filters) for p in rows.params]]
    if run_id is not None:
        return rows[rows.run_id == run_id]
    good = R.counted(rows, gpu)
    if good.empty:
        return good
    newest = good.sort_values("created_at").iloc[-1].run_id
    return rows[rows.run_id == newest]
