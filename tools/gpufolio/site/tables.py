"""Markdown tables: the home headline table, a project's headline table, per-variant tables, not-counted.

Every number in a table links to its run on the runs page; every comparison is within one run and one GPU
(``select`` guarantees it), and a losing candidate carries a "slower" badge instead of being left out. A record
that does not count (``records.counted``) is never a number in a table: its cell says why.
"""
from __future__ import annotations

import pandas as pd

from . import records as R
from . import roofline as RL
from . import select as S


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(header: list[str], rows: list[list], align: str | None = None) -> str:
    """``align``: one char per column, l/r/c."""
    align = align or "l" * len(header)
    sep = {"l": ":--", "r": "--:", "c": ":-:"}
    return "\n".join([_row(header), _row(sep[a] for a in align), *(_row(r) for r in rows)])


def run_link(row: dict, page: str, text: str | None = None) -> str:
    return f"[{text or row['date']}]({R.rel_link(page, R.RUNS_PAGE)}#{row['anchor']})"


def value_link(row: dict, page: str) -> str:
    """A number that links to the run it came from."""
    return f"[{R.fmt_value(row['value'])} {row['metric_unit']}]({R.rel_link(page, R.RUNS_PAGE)}#{row['anchor']})"


def ratio_cell(h: S.Headline) -> str:
    if h.baseline is None:
        return f"no {h.meta.get('headline_baseline')} in the run"
    text = f"**{R.fmt_ratio(h.ratio)}** {R.md_escape(h.baseline['label'])}"
    text += " " + R.badge("loses", "slower", "the candidate loses to the baseline") if h.loses else ""
    if h.best_baseline is not None:
        text += (f"<br>{R.fmt_ratio(h.best_ratio)} {R.md_escape(h.best_baseline['label'])} (fastest baseline)"
                 + (" " + R.badge("loses", "slower", "the candidate loses to this baseline") if h.loses_to_best else ""))
    return text


def roofline_cell(h: S.Headline, page: str, ceilings_page: str = "index.md") -> str:
    """The headline's place against its run's measured ceiling and the datasheet, linked to the ceilings table."""
    link = f"{R.rel_link(page, ceilings_page)}#{RL.CEILINGS_ANCHOR}"
    return f'<span class="gf-roof">[{RL.text(RL.place(h.candidate))}]({link})</span>'


def flags(h: S.Headline) -> str:
    return R.badge("stale", "stale", "the sources changed since this run") if h.stale else ""


def home_table(df: pd.DataFrame, site: R.Site, page: str = "index.md") -> str:
    """One row per project, always six: a project with nothing counted says so instead of showing a number."""
    rows = []
    for p in R.projects():
        link = f"[{R.project_title(p)}]({R.rel_link(page, R.project_page(p))})"
        h = S.home_headline(df, p)
        if h is None:
            has = not df[df.project == p].empty
            note = R.badge("none", "no counted result yet") if has else R.badge("none", "not yet measured")
            rows.append([link, note, "—", "—", "—", "—", "—"])
            continue
        c = h.candidate
        result = f"{h.bench}: {R.md_escape(c['label'])} {flags(h)}".strip()
        rows.append([link, result, value_link(c, page) + "<br>" + roofline_cell(h, page), ratio_cell(h),
                     c["gpu_name"], c["date"], site.commit_link(c["git_sha"])])
    return table(["Project", "Headline", "Result", "vs baseline (same run)", "GPU", "Date", "Commit"], rows,
                 "llrllll")


def headline_table(df: pd.DataFrame, project: str, site: R.Site, page: str, gpu: str | None = None) -> str:
    """``gpu``: whose headlines (default: the portfolio's GPU model)."""
    heads = S.project_headlines(df, project, gpu)
    rows = []
    for h in heads:
        c, b = h.candidate, h.baseline
        bench = f"`{h.bench}` {flags(h)}".strip() + f'<br><span class="gf-params">{R.md_escape(c["params_text"])}</span>'
        rows.append([bench, R.md_escape(c["label"]), value_link(c, page), value_link(b, page) if b else "—",
                     ratio_cell(h), roofline_cell(h, page), f"{c['gpu_name']}<br>{site.commit_link(c['git_sha'])}"])
    if not rows:
        return ""
    return table(["Bench, params", "Best candidate", "Result", "Baseline", "Ratio", "Roofline", "GPU, commit"], rows,
                 "llrrlll")


def other_gpu_sections(df: pd.DataFrame, project: str, site: R.Site, page: str) -> list[str]:
    """One section per other GPU model with sound records: its own headlines against its own baselines, never
    against the portfolio GPU's."""
    out = []
    for gpu in S.other_gpus(df, project):
        body = headline_table(df, project, site, page, gpu)
        if body:
            out += [f"## On {gpu}", "", f"*Measured on {R.md_escape(gpu)}: compared only with baselines measured on "
                    f"it, never with the {R.portfolio_gpu()} numbers above.*", "", body, ""]
    return out


def ceilings_section(df: pd.DataFrame, heads: list[S.Headline] | None = None, level: str = "##") -> str:
    """One table of hardware ceilings per GPU model: the measured ones of each headline's run, their range over
    every run, and the datasheet. The roofline cells of the headline tables link here."""
    gpus = [R.portfolio_gpu(), *S.other_gpus(df)]
    if heads is None:
        heads = [h for p in R.projects() for g in gpus for h in S.project_headlines(df, p, g)]
    parts = [f'{level} Hardware ceilings {{#{RL.CEILINGS_ANCHOR}}}', "",
             "Each run measures its own ceilings before its benches (a device-to-device copy and cuBLAS at "
             "8192³ or 4096³); every headline's roofline place is read against its own run's ceiling and "
             "against the datasheet.", ""]
    for gpu in gpus:
        runs = list(dict.fromkeys(h.candidate["run_id"] for h in heads if h.candidate["gpu_name"] == gpu))
        rows = RL.ceilings_rows(df, gpu, runs)
        if not rows:
            continue
        parts += [f"{level}# {gpu}", "", table(["Source", "Copy bandwidth, GB/s", "cuBLAS bf16, TFLOP/s",
                                                 "cuBLAS fp32, TFLOP/s"], rows, "lrrr"), ""]
    return "\n".join(parts)


def _varying(params: list[dict]) -> list[str]:
    keys = sorted({k for p in params for k in p})
    return [k for k in keys if len({R.norm_value(p.get(k)) for p in params}) > 1]


# A cell whose p20–p80 timing band is wider than this share of its median time is marked as noisy: on a quiet
# GPU a kernel's band is a few percent; wider ones come from clock changes, contention or a host-bound launch.
WIDE_BAND = 0.10


def noisy_band(r: dict) -> float | None:
    """A record's p20–p80 timing band as a share of its median time, when wider than ``WIDE_BAND``; None for a
    quiet number or one without timing."""
    try:
        width = (float(r["p80_ms"]) - float(r["p20_ms"])) / float(r["median_ms"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return width if width > WIDE_BAND else None  # NaN (no timing) compares false


def variant_table(run: pd.DataFrame, ctx) -> str:
    """One run of one bench: a row per variant, a column per config; each cell the headline metric and its
    ratio to the headline baseline at that config. Non-ok cells say what happened instead of a number."""
    page = ctx.page
    gpu = R.run_gpu(run)  # the GPU model this table is about; a record of another model is not a number here
    recs = run[run.is_headline_metric.astype(bool)].to_dict("records")  # plain dicts: cell lookups stay cheap
    for r in recs:
        r["why_not"] = R.cell_reason(r, gpu)
    first = next((r for r in recs if r["why_not"] is None), recs[0])
    meta = first["record"].get("bench_meta") or {}
    base_name = meta.get("headline_baseline")
    cell_of = {(r["variant"], r["params_key"]): r for r in recs}
    params_of = {r["params_key"]: r["params"] for r in recs}
    configs = sorted(params_of, key=lambda k: tuple((p, _num(v)) for p, v in sorted(params_of[k].items())))
    vary = _varying(list(params_of.values())) or sorted(params_of[configs[0]])
    header = ["Variant"] + [", ".join(f"{k}={params_of[c].get(k)}" for k in vary) for c in configs]
    first_of = {}
    for r in recs:
        first_of.setdefault(r["variant"], r)
    order = sorted(first_of, key=lambda v: (first_of[v]["role"] == "baseline", v))
    runs_link = R.rel_link(page, R.RUNS_PAGE)
    body = []
    noisy = False
    for v in order:
        is_base = first_of[v]["role"] == "baseline"
        cells = [R.md_escape(first_of[v]["label"]) + (" *(baseline)*" if is_base else "")]
        for c in configs:
            r = cell_of.get((v, c))
            if r is None:
                cells.append("")
                continue
            if r["why_not"] is not None:
                cells.append(R.badge("notcounted", r["why_not"]))
                continue
            cell = f"[{R.fmt_value(r['value'])}]({runs_link}#{r['anchor']})"
            base = cell_of.get((base_name, c))
            if not is_base and base is not None and base["why_not"] is None:  # baselines are references
                ratio = R.speedup(r["value"], base["value"], bool(r["higher_is_better"]))
                # a loss in a per-size table: the ratio in the loss colour, not a badge per cell (a ladder's
                # table would hold hundreds); the headline tables keep the "slower" badge
                cell += (f' <span class="gf-ratio-loses" title="slower than {base_name}">({R.fmt_ratio(ratio)})</span>'
                         if ratio and ratio < 1 else f" ({R.fmt_ratio(ratio)})")
            width = noisy_band(r)
            if width is not None:
                noisy = True
                cell += (f' <span class="gf-wide-band" title="p20–p80 band {width:.0%} of the median time">'
                         f'±{width / 2:.0%}</span>')
            cells.append(cell)
        body.append(cells)
    constant = {k: v for k, v in params_of[configs[0]].items() if k not in vary}
    # the bench's declared metric, not the first row's (a skipped first row has no unit)
    unit = meta.get("unit") or next((r["metric_unit"] for r in recs if r["metric_unit"]), "")
    higher = meta.get("higher_is_better", next((r["higher_is_better"] for r in recs if r["metric_unit"]), True))
    caption = (f"*{unit}, {'higher' if higher else 'lower'} is better; "
               f"ratio to {base_name} in the same run.* {gpu or first['gpu_name']}, "
               f"{run_link(first, page, 'run ' + first['run_id'])}"
               + (f", {R.md_escape(R.params_text(constant))}" if constant else "")
               + (" " + R.badge("stale", "stale") if first["stale"] else "")
               + (f" *±: a noisy number, its p20–p80 timing band wider than {WIDE_BAND:.0%} of its median (half"
                  " the band shown).*" if noisy else ""))
    return table(header, body, "l" + "r" * len(configs)) + "\n\n" + caption


def _num(v):
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def not_counted_table(rows: pd.DataFrame, page: str, with_project: bool = True) -> str:
    if rows.empty:
        return "*Nothing: every record is counted.*"
    body = []
    for r in rows.to_dict("records"):
        cells = [f"[{R.project_title(r['project'])}]({R.rel_link(page, R.project_page(r['project']))})"] if with_project else []
        cells += [f"`{r['bench']}`", R.md_escape(r["label"]), R.md_escape(r["params_text"]), r["status"],
                  R.badge("notcounted", r["reason"]) + (" " + R.md_escape(r["message"]) if r["message"] else ""),
                  run_link(r, page)]
        body.append(cells)
    header = (["Project"] if with_project else []) + ["Bench", "Variant", "Params", "Status", "Reason", "Run"]
    return table(header, body)
