"""The site-wide pages: home (from site_src/templates/home.md), runs, not counted, worklog posts, and the nav."""
from __future__ import annotations

import re
import textwrap

import pandas as pd
import yaml

from . import records as R
from . import select as S
from . import tables as T
from . import writeup
from .context import RenderCtx

HOME_TEMPLATE = "templates/home.md"
HOME_SLOT = "<!-- gpufolio:home-table -->"
WORKLOG_POSTS = "worklog/posts"
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$")


def render_home(ctx: RenderCtx) -> None:
    template = (ctx.docs_dir / HOME_TEMPLATE).read_text(encoding="utf-8")
    if HOME_SLOT not in template:
        raise ValueError(f"{ctx.docs_dir / HOME_TEMPLATE}: missing {HOME_SLOT}")
    n_runs = ctx.df.run_id.nunique()
    n_records = len(R.records_view(ctx.df))
    summary = (f"*{n_records} record{'s' * (n_records != 1)} from {n_runs} run{'s' * (n_runs != 1)}; "
               f"[{len(S.not_counted(ctx.df))} not counted]"
               f"({R.NOT_COUNTED_PAGE}) as headline numbers.*" if n_records else
               "*No results yet: every project is not yet measured.*")
    ctx.write("index.md", template.replace(HOME_SLOT, T.home_table(ctx.df, ctx.site) + "\n\n" + summary))


def render_runs(ctx: RenderCtx) -> None:
    """Every run's full stamp, newest first; each run's heading carries the anchor every number links to."""
    page = R.RUNS_PAGE
    parts = ["# Runs", "", "Every run in the store, newest first: where each number on this site came from.", ""]
    recs = R.records_view(ctx.df)
    if recs.empty:
        parts.append("*No runs yet.*")
    order = recs.sort_values("created_at", ascending=False).run_id.unique()
    for run_id in order:
        run = recs[recs.run_id == run_id].sort_values(["bench", "variant", "params_key"])
        first = run.iloc[0].to_dict()
        rec = first["record"]
        envd, git = rec.get("env") or {}, rec.get("git") or {}
        gpu = envd.get("gpu") or {}
        parts += [f"## {run_id} {{#{first['anchor']}}}", ""]
        stamp = [
            ("Project", f"[{R.project_title(first['project'])}]({R.rel_link(page, R.project_page(first['project']))})"),
            ("Created", first["created_at"]),
            ("GPU", R.md_escape(R.gpu_text(gpu))),
            ("Clocks (start → end)", R.md_escape(f"{gpu.get('clocks_start')} → {gpu.get('clocks_end')}")
             if gpu and (gpu.get("clocks_start") or gpu.get("clocks_end")) else "—"),
            ("Software", R.md_escape(f"CUDA {envd.get('cuda')}, torch {envd.get('torch')}, triton {envd.get('triton')}, "
                                     f"Python {envd.get('python')}, {envd.get('platform') or ''} {envd.get('cpu') or ''}")),
            ("Measured ceilings", R.md_escape(R.params_text(envd.get("ceilings") or {}))),
            ("Commit", f"{ctx.site.commit_link(git.get('sha'))} branch {git.get('branch')}, dirty={git.get('dirty')}, "
                       f"from {git.get('source')}" + (f", diff {git.get('diff_digest')}" if git.get("diff_digest") else "")),
            ("Source digest", f"`{git.get('source_digest')}`" + (" " + R.badge("stale", "stale") if first["stale"] else "")),
            ("Command", f"`{R.md_escape(rec.get('command'))}`"),
        ]
        parts += [T.table(["Stamp", ""], [list(s) for s in stamp]), ""]
        body = []
        for r in run.to_dict("records"):
            rr = r["record"]
            t = rr.get("timing") or {}
            corr = rr.get("correctness") or {}
            extras = ", ".join(f"{m['name']} {R.fmt_value(m['value'])} {m['unit']}" for m in rr.get("extra_metrics") or [])
            value = f"{R.fmt_value(r['value'])} {r['metric_unit']}" if r["value"] is not None and not pd.isna(r["value"]) else "—"
            timing = (f"{t['median_ms']:.4g} [{t['p20_ms']:.4g}–{t['p80_ms']:.4g}] ×{t['n']}" if t else "—")
            check = ("—" if not corr else ("pass" if corr.get("passed") else "**fail**")
                     + (f" ({corr.get('reference')}, max abs {corr.get('max_abs_err'):.2g})"
                        if corr.get("max_abs_err") is not None else ""))
            status = r["status"] if r["reason"] is None else R.badge("notcounted", r["reason"])
            variant = R.md_escape(r["label"]) + (" *(baseline)*" if r["role"] == "baseline" else "")
            body.append([f"`{r['bench']}`", variant, R.md_escape(r["params_text"]), status,
                         value + (f"; {R.md_escape(extras)}" if extras else ""), timing, check])
        parts += [T.table(["Bench", "Variant", "Params", "Status", "Metric", "Median ms [p20–p80] ×reps",
                           "Check"], body), ""]
    ctx.write(page, "\n".join(parts))


def render_not_counted(ctx: RenderCtx) -> None:
    rows = S.not_counted(ctx.df)
    text = textwrap.dedent("""\
        # Not counted

        Records that are never headline numbers, and why: a failed correctness check, a dry run, an out-of-memory,
        error or timeout, a skipped variant, an unknown commit, or a dirty tree. They stay in the store (it is
        append-only) and in the [runs](runs.md) they belong to.

        """) + T.not_counted_table(rows, R.NOT_COUNTED_PAGE)
    ctx.write(R.NOT_COUNTED_PAGE, text)


def render_worklog(ctx: RenderCtx) -> list[str]:
    """Copy worklog/YYYY-MM-DD-slug.md into the blog's posts folder with markers resolved (the source of truth
    stays in worklog/). Returns the docs paths written."""
    src_dir = ctx.repo_root / "worklog"
    written = []
    for src in sorted(src_dir.glob("*.md")) if src_dir.is_dir() else []:
        if not DATE_RE.match(src.name):
            continue  # README.md and other notes about the worklog are not posts
        page = f"{WORKLOG_POSTS}/{src.name}"
        _, text = writeup.render(src, page, ctx, readme=False)
        ctx.write(page, text)
        written.append(page)
    return written


def write_nav(ctx: RenderCtx, extra: dict[str, list[tuple[str, str]]]) -> None:
    """The nav, written where the mkdocs hook picks it up (a dotfile: MkDocs does not publish it)."""
    projects = []
    for p in R.projects():
        pages = extra.get(p) or []
        if pages:
            projects.append({R.project_title(p): [{"Overview": R.project_page(p)}, *({t: path} for t, path in pages)]})
        else:
            projects.append({R.project_title(p): R.project_page(p)})
    nav = [{"Home": "index.md"}, {"Projects": projects}, {"Worklog": ["worklog/index.md"]}, {"Runs": R.RUNS_PAGE},
           {"Not counted": R.NOT_COUNTED_PAGE},
           {"Notebooks": [{"Results explorer": "notebooks/results_explorer.ipynb"}]}]
    ctx.write(".nav.yml", yaml.safe_dump(nav, sort_keys=False, allow_unicode=True))
