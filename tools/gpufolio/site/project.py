"""A project page: results first (headline table and bars), then the writeup, then every size (a serving bench's
latency-throughput frontier with it), the roofline, progress across runs, what is not counted, the environment
(collapsed) and the command to reproduce."""
from __future__ import annotations

import dataclasses
import textwrap

import pandas as pd

from . import charts, history, pages, writeup
from . import records as R
from . import select as S
from . import tables as T
from .context import RenderCtx

FOLD_CELLS = 40  # a per-size table with more cells than this is folded


def render_project(ctx: RenderCtx, project: str, extra_pages: list[tuple[str, str]] = ()) -> str:
    page = R.project_page(project)
    readme = ctx.repo_root / "projects" / project / "README.md"
    # the writeup may quote any project; everything below only this one's rows (a 1,000-record store stays fast)
    title, body = writeup.render(readme, page, ctx) if readme.is_file() else (None, "")
    ctx = dataclasses.replace(ctx, df=ctx.df[ctx.df.project == project])
    df = ctx.df
    title = title or R.project_title(project)
    parts = [f"# {title}", ""]
    rows = df[df.project == project]
    heads = S.project_headlines(df, project)
    if rows.empty:
        parts.append('!!! note "Not yet measured"\n    This project has no GPU results yet. Numbers appear here '
                     "once a stamped run is committed; none are invented in the meantime.")
    elif not heads:
        parts.append('!!! warning "No counted result yet"\n    Every record of this project is listed under '
                     "[Not counted](#not-counted) below, with the reason.")
    else:
        parts += ["## Headline results", "", pages.phone_cards(T.headline_table(df, project, ctx.site, page)), ""]
        parts += [_headline_chart(ctx, h, page) for h in heads]
        parts += history.project_note(history.regressions(history.points(df)), page)
    parts += T.other_gpu_sections(df, project, ctx.site, page)  # another GPU model: its own section
    if extra_pages:
        parts += ["## More on this project", ""] + [f"- [{t}]({R.rel_link(page, p)})" for t, p in extra_pages] + [""]
    if body.strip():
        parts += ['<div class="gf-writeup" markdown>', "", writeup.collapse_details(body.strip()), "", "</div>", ""]
    if not rows.empty:
        parts += _by_size(ctx, project, page)
        parts += _roofline(ctx, project, heads, page)
        parts += _progress(ctx, project, page)
        nc = S.not_counted(df, project)
        parts += ["## Not counted", "", T.not_counted_table(nc, page, with_project=False), ""]
        parts += _environment(rows, heads, ctx.site)
    return ctx.write(page, "\n".join(parts)).as_posix()


def render_writeups(ctx: RenderCtx, project: str) -> list[tuple[str, str]]:
    """A page for each of the project's other writeups (``bf16/README.md``, ``evidence/*.md``): markers resolved,
    detail folded as on the project page. Returns (title, page) for the nav, the ladder before the evidence."""
    out = []
    for rel in writeup.project_writeups(ctx.repo_root, project):
        page = writeup.page_of(rel)
        title, body = writeup.render(ctx.repo_root / rel, page, ctx)
        title = title or "Evidence: " + rel.rsplit("/", 1)[-1].removesuffix(".md").replace("_", " ")
        ctx.write(page, f"# {title}\n\n{writeup.collapse_details(body.strip())}\n")
        out.append((title, page))
    return sorted(out, key=lambda tp: ("/evidence/" in tp[1], tp[1]))


def _headline_chart(ctx: RenderCtx, h: S.Headline, page: str) -> str:
    c = h.candidate
    run = R.counted(ctx.df[(ctx.df.project == h.project) & (ctx.df.bench == h.bench) & (ctx.df.run_id == c["run_id"])
                           & (ctx.df.params_key == c["params_key"])], c["gpu_name"])  # only numbers that count
    title = f"{h.bench} at {c['params_text']}, {c['gpu_name']}"
    rel = ctx.plot(f"{h.project}-{h.bench}-headline.png", charts.headline_bars, charts.slim(run),
                   h.meta.get("headline_baseline"), title)
    alt = f"{h.bench}: {c['metric_unit']} of every variant at {c['params_text']}, baseline in grey, slower than it in red"
    return f"![{alt}]({R.rel_link(page, rel)})\n"


def _by_size(ctx: RenderCtx, project: str, page: str) -> list[str]:
    out = ["## Every variant, every size", ""]
    mctx = ctx.marker_ctx(page)
    for bench in R.benches(ctx.df, project):
        run = S.latest_run(ctx.df, project, bench)
        out += [f"### `{bench}`", ""]
        meta = R.bench_meta(ctx.df, project, bench)
        if meta.get("description"):
            out += [R.md_escape(meta["description"]), ""]
        if run.empty:
            out += ["*No ok record yet.*", ""]
            continue
        table = T.variant_table(run, mctx)
        if run.variant.nunique() * run.params_key.nunique() > FOLD_CELLS:
            # a long table folded (the writeup above quotes what matters), its chart below stays open
            table = (f'??? note "Every variant at every size ({run.variant.nunique()} variants, '
                     f'{run.params_key.nunique()} sizes)"\n\n' + textwrap.indent(table, "    "))
        out += [table, ""]
        x = meta.get("x_param")
        ok = R.counted(run[run.is_headline_metric.astype(bool)])
        if x and ok.params.map(lambda p, x=x: p.get(x)).nunique() > 1:
            series = ctx.one_series(ok, x, meta.get("headline_params") or {})
            if series.params.map(lambda p, x=x: R.norm_value(p.get(x))).nunique() > 1:  # one x is no line
                rel = ctx.plot(f"{project}-{bench}-by-{x}.png", charts.variant_lines, charts.slim(series, x), x,
                               f"{bench}: {series.iloc[0].metric_unit} against {x}")
                out += [f"![{bench}: each variant's {series.iloc[0].metric_unit} against {x}]({R.rel_link(page, rel)})", ""]
        out += _frontier(ctx, project, bench, R.counted(run), x, page)
    return out


def frontier_points(rows: pd.DataFrame, x: str) -> pd.DataFrame:
    """A serving bench's counted rows -> one point per (variant, ``x``): the headline throughput (tput) and the
    latency percentiles its records carry (charts.FRONTIER_LATENCIES); empty when they carry none."""
    names = [f"{lat}_{pct}" for lat in charts.FRONTIER_LATENCIES for pct in charts.FRONTIER_PERCENTILES]
    lat = rows[rows.metric_name.isin(names)]
    if lat.empty:
        return pd.DataFrame()
    wide = lat.pivot_table(index=["variant", "params_key"], columns="metric_name", values="value", aggfunc="first")
    heads = rows[rows.is_headline_metric.astype(bool)].set_index(["variant", "params_key"])
    points = heads[["label", "value", "params"]].join(wide, how="inner").reset_index()
    points["x"] = [p.get(x) for p in points.params]
    points = points[points.x.map(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))]
    return (points.rename(columns={"value": "tput"}).drop(columns=["params", "params_key"])
            .drop_duplicates(["variant", "x"], keep="last").reset_index(drop=True))


def _frontier(ctx: RenderCtx, project: str, bench: str, rows: pd.DataFrame, x: str | None, page: str) -> list[str]:
    """The latency-throughput frontier of a serving bench (records with TTFT/TPOT percentiles), x = offered load."""
    points = frontier_points(rows, x) if x else pd.DataFrame()
    if points.empty or points.groupby("variant").x.nunique().max() < 2:  # one load is no frontier
        return []
    unit = rows[rows.is_headline_metric.astype(bool)].iloc[0].metric_unit
    first = rows.iloc[0]
    rel = ctx.plot(f"{project}-{bench}-frontier.png", charts.frontier, points, unit,
                   f"{bench}: latency against {unit}, one point per {x} — {first.gpu_name}, run {first.run_id}")
    return [f"![{bench}: TTFT and TPOT, p50 and p99, against the {unit} reached at each {x}; the saturation point "
            f"starred]({R.rel_link(page, rel)})", ""]


def _roofline(ctx: RenderCtx, project: str, heads: list[S.Headline], page: str) -> list[str]:
    """Compute-bound benches on a roofline (FLOP/byte where both are counted); memory-bound ones (GB/s) as
    bars against the measured copy bandwidth. Only the headline runs, only one GPU model per chart."""
    if not heads:
        return []
    gpu = heads[0].candidate["gpu_name"]
    points, out = [], []
    ceilings: dict = {}
    for h in heads:
        c = h.candidate
        run = ctx.df[(ctx.df.project == project) & (ctx.df.bench == h.bench) & (ctx.df.run_id == c["run_id"])
                     & (ctx.df.params_key == c["params_key"]) & ctx.df.is_headline_metric.astype(bool)]
        run = R.counted(run, gpu)
        for r in run.to_dict("records"):
            rec = r["record"]
            ceilings = ceilings or dict((rec.get("env") or {}).get("ceilings") or {})
            work = rec.get("work") or {}
            if r["metric_unit"] == "GB/s":
                continue
            if work.get("flops") and work.get("bytes") and r["median_ms"]:
                points.append({"label": f"{h.bench}: {r['label']}", "ai": work["flops"] / work["bytes"],
                               "tflops": work["flops"] / (r["median_ms"] * 1e-3) / 1e12, "role": r["role"]})
        mem = run[run.metric_unit == "GB/s"]
        if len(mem):
            rel = ctx.plot(f"{project}-{h.bench}-bandwidth.png", charts.bandwidth_bars, charts.slim(mem),
                           ceilings.get("copy_gbps"), gpu, f"{h.bench} at {c['params_text']}, {gpu}")
            out += [f"![{h.bench}: achieved GB/s of each variant against the measured copy bandwidth]"
                    f"({R.rel_link(page, rel)})", ""]
    if points:
        rel = ctx.plot(f"{project}-roofline.png", charts.roofline, pd.DataFrame(points), ceilings, gpu,
                       f"{R.project_title(project)} — {gpu}")
        out = [f"![Roofline: achieved TFLOP/s against arithmetic intensity, with measured and datasheet ceilings]"
               f"({R.rel_link(page, rel)})", ""] + out
    if not out:
        return []
    src = ("Solid lines: the run's own measured ceilings (`env.ceilings`: device-to-device copy bandwidth, cuBLAS "
           "throughput)." + (f" Dotted: {charts.DATASHEET['source']}." if "H200" in (gpu or "") else ""))
    return ["## Against the hardware", "", *out, src, ""]


def _progress(ctx: RenderCtx, project: str, page: str) -> list[str]:
    """The headline metric across runs (asv-style): best counted candidate and the baseline, per GPU model."""
    out = []
    for bench in R.benches(ctx.df, project):
        meta = R.bench_meta(ctx.df, project, bench)
        rows = ctx.df[(ctx.df.project == project) & (ctx.df.bench == bench) & ctx.df.is_headline_metric.astype(bool)
                      & ctx.df.reason.isna() & ctx.df.value.notna()]
        if rows.empty:  # (an empty list below would select no columns, not no rows)
            continue
        rows = R.newest_metric(rows[[R.params_match(p, meta.get("headline_params") or {}) for p in rows.params]])
        if rows.run_id.nunique() < 2:
            continue
        points = []
        for (_, gpu), g in rows.groupby(["run_id", "gpu_name"]):
            higher = bool(g.iloc[0].higher_is_better)
            for role, sub in (("best candidate", g[g.role == "candidate"]),
                              (f"baseline {meta.get('headline_baseline')}", g[g.variant == meta.get("headline_baseline")])):
                if len(sub):
                    v = sub.value.max() if higher else sub.value.min()
                    points.append({"created_at": g.iloc[0].created_at, "value": v, "line": f"{role}, {gpu}",
                                   "sha": (g.iloc[0].git_sha or "")[:7]})
        title = f"{bench} at {R.params_text(meta.get('headline_params') or {})} across runs"
        rel = ctx.plot(f"{project}-{bench}-progress.png", charts.progress, pd.DataFrame(points),
                       rows.iloc[0].metric_unit, title)
        out += [f"![{bench}: headline metric across runs]({R.rel_link(page, rel)})", ""]
    return ["## Progress across runs", "", *out] if out else []


def _environment(rows: pd.DataFrame, heads: list[S.Headline], site: R.Site) -> list[str]:
    runs = [h.candidate["run_id"] for h in heads] or [rows.sort_values("created_at").iloc[-1].run_id]
    out = []
    for run_id in dict.fromkeys(runs):
        rec = rows[rows.run_id == run_id].iloc[0].record
        envd, git = rec.get("env") or {}, rec.get("git") or {}
        gpu = envd.get("gpu") or {}
        items = [("GPU", R.gpu_text(gpu)),
                 ("CUDA / torch / triton", f"{envd.get('cuda')} / {envd.get('torch')} / {envd.get('triton')}"),
                 ("Python, CPU", f"{envd.get('python')}, {envd.get('cpu')}"),
                 ("Measured ceilings", R.md_escape(pages.ceilings_text(envd.get("ceilings") or {}))),
                 ("Commit", f"{site.commit_link(git.get('sha'))} ({git.get('branch')}, dirty={git.get('dirty')}, "
                            f"from {git.get('source')})"),
                 ("Source digest", f"`{git.get('source_digest')}`")]
        table = T.table(["", ""], [[k, v] for k, v in items])
        out += [f'??? info "Environment of run {run_id}"', "", textwrap.indent(table, "    "), ""]
    cmds = list(dict.fromkeys(rows[rows.run_id.isin(runs)].record.map(lambda r: pages.display_command(r.get("command")))))
    out += ["## Reproduce", "", "```bash", *cmds, "```", ""]
    return ["## Environment", "", *out]
