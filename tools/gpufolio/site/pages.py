"""The site-wide pages: home (from site_src/templates/home.md), runs, not counted, worklog posts, and the nav."""
from __future__ import annotations

import re
import textwrap

import pandas as pd
import yaml

from . import about, writeup
from . import records as R
from . import roofline as RL
from . import select as S
from . import tables as T
from .context import RenderCtx

HOME_TEMPLATE = "templates/home.md"
HOME_SLOT = "<!-- gpufolio:home-table -->"
AUTHOR_SLOT = "<!-- gpufolio:author -->"   # optional: who made it (gpufolio.yml)
GPU_SLOT = "<!-- gpufolio:gpu -->"         # optional: the configured GPU statement
WORKLOG_POSTS = "worklog/posts"
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$")
EXCERPT = "<!-- more -->"


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
    text = (template.replace(AUTHOR_SLOT, about.author_line(ctx.site)).replace(GPU_SLOT, ctx.site.gpu)
            .replace(HOME_SLOT, phone_cards(T.home_table(ctx.df, ctx.site)) + "\n\n" + summary + "\n\n"
                     + T.ceilings_section(ctx.df)))
    ctx.write("index.md", text)


def phone_cards(table: str, css_class: str = "gf-cards") -> str:
    """A Markdown table that becomes one card per row on a phone (site_src/assets/gpufolio.css): each cell on its
    own line, named by its column (the labels come from the table's own header, so they cannot drift)."""
    header = [h.strip() for h in table.split("\n", 1)[0].strip().strip("|").split("|")]
    rules = "".join(f'.{css_class} td:nth-child({i})::before{{content:"{h}: "}}'
                    for i, h in enumerate(header, 1) if h and i > 1)
    # the first column (the project) is the card's title and needs no label
    return (f"<style>@media screen and (max-width:44.984375em){{{rules}}}</style>\n\n"
            f'<div class="{css_class}" markdown>\n\n{table}\n\n</div>')


def render_runs(ctx: RenderCtx) -> None:
    """Every run, newest first: a heading (the anchor every number links to), one line that says what the run
    is, and its stamp and records folded below it, so the page reads as a list of runs."""
    page = R.RUNS_PAGE
    parts = ["# Runs", "", "Every run in the store, newest first: where each number on this site came from. Open a "
             "run for its full stamp (GPU, clocks, software, measured ceilings, commit, command) and every record.", ""]
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
        counted = int(run.reason.isna().sum())
        summary = (f"[{R.project_title(first['project'])}]({R.rel_link(page, R.project_page(first['project']))}) · "
                   f"{first['created_at'][:16].replace('T', ' ')} UTC · {first['gpu_name'] or 'no GPU'} · "
                   f"commit {ctx.site.commit_link(git.get('sha'))} · {len(run)} record{'s' * (len(run) != 1)}, "
                   f"{counted} counted" + (" " + R.badge("stale", "stale") if first["stale"] else ""))
        stamp = [
            ("GPU", R.md_escape(R.gpu_text(gpu))),
            ("Clocks, power, temperature (start → end)", R.md_escape(clocks_text(gpu))),
            ("Software", R.md_escape(f"CUDA {envd.get('cuda')}, torch {envd.get('torch')}, triton {envd.get('triton')}, "
                                     f"Python {envd.get('python')}, {envd.get('platform') or ''} {envd.get('cpu') or ''}")),
            ("Measured ceilings", R.md_escape(ceilings_text(envd.get("ceilings") or {}))),
            ("Commit", f"{ctx.site.commit_link(git.get('sha'))} on {git.get('branch')}, "
                       f"{'dirty tree' if git.get('dirty') else 'clean tree'}"
                       + (f", diff {git.get('diff_digest')}" if git.get("diff_digest") else "")),
            ("Source digest", f"`{git.get('source_digest')}`" + (" " + R.badge("stale", "stale") if first["stale"] else "")),
            ("Command", f"`{R.md_escape(display_command(rec.get('command')))}`"),
        ]
        body = [_record_row(r) for r in run.to_dict("records")]
        records = T.table(["Bench", "Variant", "Params", "Status", "Metric", "Median ms [p20–p80] ×reps", "Check"], body)
        parts += [f"## {run_id} {{#{first['anchor']}}}", "", summary, "",
                  '??? info "Stamp"', "", textwrap.indent(T.table(["", ""], [list(x) for x in stamp]), "    "), "",
                  f'??? note "Every record ({len(run)})"', "", textwrap.indent(records, "    "), ""]
    ctx.write(page, "\n".join(parts))


def _record_row(r: dict) -> list[str]:
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
    return [f"`{r['bench']}`", variant, R.md_escape(r["params_text"]), status,
            value + (f"; {R.md_escape(extras)}" if extras else ""), timing, check]


def clocks_text(gpu: dict) -> str:
    """``env.gpu``'s clocks_start/clocks_end as one sentence instead of two dicts."""
    a, b = gpu.get("clocks_start") or {}, gpu.get("clocks_end") or {}
    if not (a or b):
        return "—"
    parts = []
    for key, name, unit in (("sm_clock_mhz", "SM", "MHz"), ("mem_clock_mhz", "memory", "MHz"),
                            ("power_w", "power", "W"), ("temperature_c", "temperature", "°C")):
        x, y = a.get(key), b.get(key)
        if x is None and y is None:
            continue
        span = f"{R.fmt_value(x)} → {R.fmt_value(y)}" if x != y else R.fmt_value(x)
        parts.append(f"{name} {span} {unit}")
    limit = a.get("power_limit_w") or b.get("power_limit_w")
    return ", ".join(parts) + (f" (power limit {R.fmt_value(limit)} W)" if limit else "")


# the measured ceilings by the names every roofline place uses (roofline.BOUNDS)
CEILING_NAMES = {key: (f"measured {name}", "GB/s" if bound == "memory" else "TFLOP/s")
                 for bound, (key, name, _, _) in RL.BOUNDS.items()}


def ceilings_text(ceilings: dict) -> str:
    """The run's own ceilings (``env.ceilings``) by name: "measured copy bandwidth 4,249 GB/s, ..."."""
    out = [f"{name} {R.fmt_value(ceilings[k])} {unit}" for k, (name, unit) in CEILING_NAMES.items() if ceilings.get(k)]
    if ceilings.get("bf16_size"):
        out.append(f"cuBLAS measured at {int(ceilings['bf16_size'])}³")
    rest = {k: v for k, v in ceilings.items() if k not in CEILING_NAMES and k != "bf16_size"}
    return ", ".join(out + ([R.params_text(rest)] if rest else [])) or "—"


# A bench command's --out names where that machine wrote its records (a scratch folder); the records land in
# projects/<p>/results/ whatever it was, so the command a reader runs leaves it out.
OUT_ARG_RE = re.compile(r"\s--out[ =]\S+")


def display_command(command: str | None) -> str:
    return OUT_ARG_RE.sub("", command or "").strip() or "—"


def render_not_counted(ctx: RenderCtx) -> None:
    rows = S.not_counted(ctx.df)
    text = textwrap.dedent("""\
        # Not counted

        Records that are never headline numbers, and why: a failed correctness check, a dry run, an out-of-memory,
        error or timeout, a skipped variant, an unknown commit, a dirty tree, or another GPU model than the
        portfolio's (its sound records have a section of their own on the project page, compared only with
        baselines measured on it). They stay in the store (it is append-only) and in the [runs](runs.md) they
        belong to.

        """) + T.not_counted_table(rows, R.NOT_COUNTED_PAGE)
    ctx.write(R.NOT_COUNTED_PAGE, text)


def render_worklog(ctx: RenderCtx) -> list[str]:
    """Copy worklog/YYYY-MM-DD-slug.md into the blog's posts folder with markers resolved (the source of truth
    stays in worklog/), the configured author added. Every post needs a category, an excerpt (``<!-- more -->``)
    and a date-time no other post shares (same-day posts give a time, so the index lists them in the order they
    happened). Returns the docs paths written."""
    src_dir = ctx.repo_root / "worklog"
    written, when = [], {}
    for src in sorted(src_dir.glob("*.md")) if src_dir.is_dir() else []:
        if not DATE_RE.match(src.name):
            continue  # README.md and other notes about the worklog are not posts
        page = f"{WORKLOG_POSTS}/{src.name}"
        meta = check_post(src, ctx.repo_root)
        when.setdefault(str(meta["date"]), []).append(src.name)
        _, text = writeup.render(src, page, ctx, readme=False)
        front = POST_FRONT_RE.match(text)
        if ctx.site.author.name and "authors" not in meta and front:
            text = f"{text[:front.end(1)]}\nauthors:\n  - {about.AUTHOR_ID}{text[front.end(1):]}"
        ctx.write(page, text)
        written.append(page)
    check_post_times(when)
    return written


def check_post_times(when: dict[str, list[str]]) -> None:
    """``when``: date-time -> posts. Posts that share one would be listed in file-name order, not as they happened."""
    for date, names in when.items():
        if len(names) > 1:
            raise writeup.WriteupError(
                f"worklog/{names[0]}:1: {len(names)} posts dated {date} ({', '.join(names)}): give each a time "
                f"(date: {date[:10]}T09:30:00) so the worklog lists them in the order they happened")


POST_FRONT_RE = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def check_post(src, repo_root) -> dict:
    """A worklog entry's front matter, checked for what the blog needs: date, category, excerpt."""
    text = src.read_text(encoding="utf-8")
    where = src.relative_to(repo_root).as_posix() if src.is_relative_to(repo_root) else str(src)
    m = POST_FRONT_RE.match(text)
    try:
        meta = yaml.safe_load(m.group(1)) if m else None
    except yaml.YAMLError as e:
        raise writeup.WriteupError(f"{where}:1: front matter is not YAML: {' '.join(str(e).split())}") from e
    if not isinstance(meta, dict) or not meta.get("date"):
        raise writeup.WriteupError(f"{where}:1: a post opens with front matter holding its date (---\\ndate: ...)")
    if not meta.get("categories"):
        raise writeup.WriteupError(f"{where}:1: no categories: name the project (categories: [gemm_ladder])")
    if EXCERPT not in text:
        raise writeup.WriteupError(f"{where}: no excerpt: put {EXCERPT} after the opening paragraph (the worklog "
                                   "index shows what is above it)")
    return meta


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
           {"Notebooks": [{"Results explorer": "notebooks/results_explorer.ipynb"}]}, {"About": about.ABOUT_PAGE}]
    ctx.write(".nav.yml", yaml.safe_dump(nav, sort_keys=False, allow_unicode=True))
