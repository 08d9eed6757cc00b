"""Each bench's history across commits, and one page of the regressions in it (the way asv shows them).

A point is one counted run (``records.counted``: status ok, correct, a clean tree at a full SHA, on the
portfolio's GPU model) of one (bench, params, variant), with its p20–p80 band as the error bar. Between two
consecutive points of a candidate, a **regression** is a slowdown beyond noise by ``gpufolio.compare.verdict``
(bands apart, median time up by more than the threshold) that its own run's baseline does not share: the
candidate's speed relative to the headline baseline at the same params also fell by more than the threshold
(where both runs have that baseline). That second condition keeps a card that ran slower that day (its power
and clock state move cuBLAS by 10-20 %) from reading as a regression of our code. Baselines are drawn but
never flagged: they are not ours.

Pages: ``history/<project>.md`` (a chart and a table per bench, at the bench's headline params) and
``regressions.md`` (every regression, newest first, at any params). ``render(ctx)`` writes them and adds them
to the nav that ``pages.write_nav`` wrote.
"""
from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pandas as pd
import yaml

from .. import compare as C
from . import records as R
from . import tables as T
from .context import RenderCtx

HISTORY_DIR = "history"
REGRESSIONS_PAGE = "regressions.md"
NAV_FILE = ".nav.yml"
KEY = ["project", "bench", "params_key", "variant"]
_CODE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def history_page(project: str) -> str:
    return f"{HISTORY_DIR}/{project}.md"


def points(df: pd.DataFrame) -> pd.DataFrame:
    """Counted headline-metric rows with timing, one per (case, run), oldest first; adds ``sha``."""
    if df.empty:
        return df
    rows = R.records_view(df)
    rows = rows[rows.counts.astype(bool) & rows.value.notna() & rows.median_ms.notna()]
    rows = rows.sort_values(["created_at", "run_id"]).drop_duplicates(KEY + ["run_id"], keep="last")
    return rows.assign(sha=rows.git_sha.str.slice(0, 7))


def _speed_vs_baseline(pts: pd.DataFrame) -> pd.Series:
    """Per row: the headline baseline's median time over this row's, in the same run at the same params."""
    base = {}
    for r in pts[pts.role == "baseline"].itertuples():
        if r.variant == (r.record.get("bench_meta") or {}).get("headline_baseline"):
            base[(r.project, r.bench, r.params_key, r.run_id)] = r.median_ms
    return pd.Series([base.get((r.project, r.bench, r.params_key, r.run_id), float("nan")) / r.median_ms
                      for r in pts.itertuples()], index=pts.index, dtype=float)


def regressions(pts: pd.DataFrame, threshold: float = C.THRESHOLD) -> pd.DataFrame:
    """One row per regression: the candidate's point before (``prev_*``) and at the regression."""
    cols = ["project", "bench", "params_key", "params_text", "variant", "label", "prev_run", "prev_git_sha",
            "prev_date", "prev_anchor", "run_id", "git_sha", "date", "anchor", "time_change", "vs_base_change",
            "noisy_band"]
    if pts.empty:
        return pd.DataFrame(columns=cols)
    pts = pts.assign(speed_vs_base=_speed_vs_baseline(pts))
    out = []
    for _, g in pts[pts.role == "candidate"].groupby(KEY, sort=True):
        g = g.sort_values("created_at")
        for prev, cur in zip(g.to_dict("records"), g.to_dict("records")[1:]):
            if C.verdict(_timing(prev), _timing(cur), threshold) != "slower":
                continue
            rel = cur["speed_vs_base"] / prev["speed_vs_base"] - 1.0
            if not pd.isna(rel) and rel >= -threshold:
                continue  # the baseline slowed down with it: the run, not the code
            out.append({**{k: cur[k] for k in ("project", "bench", "params_key", "params_text", "variant", "label",
                                               "run_id", "git_sha", "date", "anchor")},
                        "prev_run": prev["run_id"], "prev_git_sha": prev["git_sha"], "prev_date": prev["date"],
                        "prev_anchor": prev["anchor"], "time_change": cur["median_ms"] / prev["median_ms"] - 1.0,
                        "vs_base_change": None if pd.isna(rel) else rel, "noisy_band": T.noisy_band(cur)})
    return pd.DataFrame(out, columns=cols).sort_values(["date", "project", "bench"], ascending=[False, True, True])


def _noisy_text(r: dict) -> str:
    """A slowdown read from a noisy number (``tables.noisy_band``) says as much."""
    band = r.get("noisy_band")
    return "" if band is None or pd.isna(band) else f" (a noisy number: its p20–p80 band is {band:.0%} of its median)"


def _timing(row: dict) -> dict:
    return {"median_ms": row["median_ms"], "p20_ms": row["p20_ms"], "p80_ms": row["p80_ms"]}


def _band(row: dict) -> tuple[float, float]:
    return C.metric_band({"value": row["value"]}, _timing(row))


def headline_points(pts: pd.DataFrame, project: str, bench: str) -> pd.DataFrame:
    """The bench's points at its headline params (all params when the bench names none or none match)."""
    rows = R.newest_metric(pts[(pts.project == project) & (pts.bench == bench)])
    if rows.empty:
        return rows
    headline = R.bench_meta(rows, project, bench).get("headline_params") or {}
    keep = rows[[R.params_match(p, headline) for p in rows.params]]
    if keep.empty:
        return keep
    # Several configs can match a partial headline (dtype varies): keep the one measured most often.
    top = keep.params_key.value_counts().index[0]
    return keep[keep.params_key == top]


def draw(path: Path, series: list[tuple], unit: str, title: str, code: str = "") -> Path:
    """Error bars over runs: ``series`` = [(label, is_baseline, [(x index, value, lo, hi), ...]), ...];
    ``title`` ends with the x labels after a tab (short SHAs in run order). ``code``: this module's digest, unused
    here; it is in the chart cache's key (which covers charts.py only), so a change to this drawing redraws."""
    from . import charts

    plt = charts.plt
    title, _, xlabels = title.partition("\t")
    labels = xlabels.split(",") if xlabels else []
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for i, (label, is_base, pts) in enumerate(series):
        xs, ys, lo, hi = zip(*pts)
        err = [[y - a for y, a in zip(ys, lo)], [b - y for y, b in zip(ys, hi)]]
        # every series its own colour; baselines dashed with square markers
        ax.errorbar(xs, ys, yerr=err, marker="s" if is_base else "o", ms=4, capsize=3,
                    label=label, color=charts.PALETTE[i % len(charts.PALETTE)],
                    ls="--" if is_base else "-", alpha=0.8 if is_base else 1.0)
    ax.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 8 else 0, fontsize=7)
    ax.set_xlim(-0.5, max(len(labels) - 0.5, 0.5))
    ax.set_ylabel(unit)
    ax.set_xlabel("commit (one counted run each, oldest first)")
    ax.set_title(charts._wrap(title, 70), fontsize=9, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return charts._save(fig, path, right=0.7, bottom=0.2)


def _bench_section(ctx: RenderCtx, rows: pd.DataFrame, flagged: set[tuple], page: str) -> list[str]:
    first = rows.iloc[0]
    runs = rows.sort_values("created_at").drop_duplicates("run_id")
    order = {rid: i for i, rid in enumerate(runs.run_id)}
    # candidates first, then baselines; one series (and one table column) each
    groups = [g for _, g in sorted(rows.groupby("variant"), key=lambda t: (t[1].role.iloc[0] == "baseline", t[0]))]
    series = []
    for g in groups:
        pts = [(order[r["run_id"]], r["value"], *_band(r)) for r in g.sort_values("created_at").to_dict("records")]
        base = g.role.iloc[0] == "baseline"
        series.append((textwrap.shorten(g.label.iloc[0], 26, placeholder="…") + (" (baseline)" if base else ""),
                       base, pts))
    title = (f"{first.project}/{first.bench} at {first.params_text} — {first.gpu_name}\t"
             + ",".join(runs.sha))
    chart = ctx.plot(f"history-{first.project}-{first.bench}.png", draw, series, first.metric_unit, title, _CODE)
    variants = [g.label.iloc[0] + (" (baseline)" if g.role.iloc[0] == "baseline" else "") for g in groups]
    body = []
    for run in runs.to_dict("records"):
        cells = [T.run_link(run, page, run["created_at"][:16].replace("T", " ")), ctx.site.commit_link(run["git_sha"])]
        for g in groups:
            hit = g[g.run_id == run["run_id"]]
            if hit.empty:
                cells.append("—")
                continue
            r = hit.iloc[0].to_dict()
            lo, hi = _band(r)
            cell = f"{T.value_link(r, page)} [{R.fmt_value(lo)}–{R.fmt_value(hi)}]"
            if (r["project"], r["bench"], r["params_key"], r["variant"], r["run_id"]) in flagged:
                cell += " " + R.badge("loses", "regression", "slower beyond noise than the run before")
            cells.append(cell)
        body.append(cells)
    return [f"## `{first.bench}`", "", f"At {R.md_escape(first.params_text)}, {first.metric_unit}, "
            f"p20–p80 bands; {len(runs)} counted run{'s' * (len(runs) != 1)}.", "",
            f"![{first.project}/{first.bench} across commits]({R.rel_link(page, chart)})", "",
            T.table(["Run", "Commit", *map(R.md_escape, variants)], body), ""]


def render(ctx: RenderCtx, threshold: float = C.THRESHOLD) -> list[str]:
    """Write the history pages and the regressions page, add them to the nav; returns the pages written."""
    pts = points(ctx.df)
    regs = regressions(pts, threshold)
    flagged = {(r.project, r.bench, r.params_key, r.variant, r.run_id) for r in regs.itertuples()}
    rule = (f"A point is one counted run; error bars are its p20–p80 band. A regression is a candidate slower "
            f"than its previous point beyond noise ({C.RULE.format(pct=threshold * 100)}) while its speed relative "
            "to its own run's headline baseline also fell by more than that much.")
    written = []
    for project in R.projects():
        page = history_page(project)
        benches = sorted(pts[pts.project == project].bench.unique()) if not pts.empty else []
        parts = [f"# History: {R.project_title(project)}", "", rule, "",
                 f"[Regressions]({R.rel_link(page, REGRESSIONS_PAGE)}) across every project and params.", ""]
        sections = [s for b in benches if not (rows := headline_points(pts, project, b)).empty
                    for s in _bench_section(ctx, rows, flagged, page)]
        parts += sections or ["*No counted run yet.*"]
        ctx.write(page, "\n".join(parts))
        written.append(page)
    ctx.write(REGRESSIONS_PAGE, "\n".join(regressions_page(regs, rule, ctx.site)))
    _add_nav(ctx)
    return [*written, REGRESSIONS_PAGE]


def project_note(regs: pd.DataFrame, page: str, most: int = 5) -> list[str]:
    """The warning a project page opens with when its candidates regressed: the worst few, then a link."""
    if regs.empty:
        return []
    worst = regs.sort_values("time_change", ascending=False).head(most)
    n = len(regs)
    lines = [f'!!! warning "{n} regression{"s" * (n != 1)} beyond noise"', "",
             "    Slower than the previous counted run while the run's own baseline was not "
             f"([rule and every case]({R.rel_link(page, REGRESSIONS_PAGE)})):", ""]
    lines += [f"    - `{r['bench']}` {R.md_escape(r['label'])}, {R.md_escape(r['params_text'])}: "
              f"{r['time_change'] * 100:+.1f} % median time, run {r['prev_run']} to {r['run_id']}{_noisy_text(r)}"
              for r in worst.to_dict("records")]
    if n > most:
        lines.append(f"    - and {n - most} more")
    return lines + [""]


def regressions_page(regs: pd.DataFrame, rule: str, site: R.Site, page: str = REGRESSIONS_PAGE) -> list[str]:
    parts = ["# Regressions", "", rule, ""]
    if regs.empty:
        return parts + ["*No regression beyond noise between consecutive counted runs.*"]
    rows = []
    for r in regs.to_dict("records"):
        runs = R.rel_link(page, R.RUNS_PAGE)
        rows.append([f"[{R.project_title(r['project'])}]({R.rel_link(page, history_page(r['project']))})",
                     f"`{r['bench']}`", R.md_escape(r["label"]), R.md_escape(r["params_text"]),
                     f"[{r['prev_date']}]({runs}#{r['prev_anchor']}) {site.commit_link(r['prev_git_sha'])}",
                     f"[{r['date']}]({runs}#{r['anchor']}) {site.commit_link(r['git_sha'])}",
                     f"{r['time_change'] * 100:+.1f} %{_noisy_text(r)}",
                     "—" if pd.isna(r["vs_base_change"]) else f"{r['vs_base_change'] * 100:+.1f} %"])
    header = ["Project", "Bench", "Variant", "Params", "From run", "To run", "Median time", "Speed vs baseline"]
    return parts + [f"{len(rows)} regression{'s' * (len(rows) != 1)}, newest first.", "",
                    T.table(header, rows, "llllllrr")]


def _add_nav(ctx: RenderCtx) -> None:
    """Append History and Regressions to the nav ``pages.write_nav`` wrote (before Runs when it is there)."""
    path = ctx.docs_dir / NAV_FILE
    nav = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else []
    entries = [{"History": [{R.project_title(p): history_page(p)} for p in R.projects()]},
               {"Regressions": REGRESSIONS_PAGE}]
    at = next((i for i, e in enumerate(nav) if isinstance(e, dict) and "Runs" in e), len(nav))
    nav[at:at] = entries
    ctx.write(NAV_FILE, yaml.safe_dump(nav, sort_keys=False, allow_unicode=True))
