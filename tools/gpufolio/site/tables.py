"""Markdown tables: the home headline table, a project's headline table, per-variant tables, not-counted.

Every number in a table links to its run on the runs page; every comparison is within one run and one GPU
(``select`` guarantees it), and a losing candidate carries a "slower" badge instead of being left out.
"""
from __future__ import annotations

import pandas as pd

from . import records as R
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
    text = f"**{R.fmt_ratio(h.ratio)}** {h.baseline['label']}"
    return text + (" " + R.badge("loses", "slower", "the candidate loses to the baseline") if h.loses else "")


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
        rows.append([link, result, value_link(c, page), ratio_cell(h), c["gpu_name"], c["date"],
                     site.commit_link(c["git_sha"])])
    return table(["Project", "Headline", "Result", "vs baseline (same run)", "GPU", "Date", "Commit"], rows,
                 "llrllll")


def headline_table(df: pd.DataFrame, project: str, site: R.Site, page: str) -> str:
    heads = S.project_headlines(df, project)
    rows = []
    for h in heads:
        c, b = h.candidate, h.baseline
        rows.append([f"`{h.bench}` {flags(h)}".strip(), R.md_escape(c["label"]), value_link(c, page),
                     value_link(b, page) if b else "—", ratio_cell(h), R.md_escape(c["params_text"]),
                     c["gpu_name"], site.commit_link(c["git_sha"])])
    if not rows:
        return ""
    return table(["Bench", "Best candidate", "Result", "Baseline", "Ratio", "Params", "GPU", "Commit"], rows,
                 "llrrllll")


def _varying(params: list[dict]) -> list[str]:
    keys = sorted({k for p in params for k in p})
    return [k for k in keys if len({R.norm_value(p.get(k)) for p in params}) > 1]


def variant_table(run: pd.DataFrame, ctx) -> str:
    """One run of one bench: a row per variant, a column per config; each cell the headline metric and its
    ratio to the headline baseline at that config. Non-ok cells say what happened instead of a number."""
    page = ctx.page
    rows = run[run.is_headline_metric.astype(bool)]
    first = rows.iloc[0].to_dict()
    meta = first["record"].get("bench_meta") or {}
    base_name = meta.get("headline_baseline")
    configs = sorted(rows.params_key.unique(), key=lambda k: _config_sort_key(rows, k))
    params_of = {k: rows[rows.params_key == k].iloc[0].params for k in configs}
    vary = _varying(list(params_of.values())) or sorted(params_of[configs[0]])
    header = ["Variant"] + [", ".join(f"{k}={params_of[c].get(k)}" for k in vary) for c in configs]
    roles = rows.drop_duplicates("variant").set_index("variant").role
    order = sorted(roles.index, key=lambda v: (roles[v] == "baseline", v))
    body = []
    for v in order:
        cells = [R.md_escape(rows[rows.variant == v].iloc[0].label) + (" *(baseline)*" if roles[v] == "baseline" else "")]
        for c in configs:
            hit = rows[(rows.variant == v) & (rows.params_key == c)]
            if hit.empty:
                cells.append("")
                continue
            r = hit.iloc[0].to_dict()
            if r["status"] != "ok":
                cells.append(R.badge("notcounted", R.STATUS_REASONS.get(r["status"], r["status"])))
                continue
            cell = f"[{R.fmt_value(r['value'])}]({R.rel_link(page, R.RUNS_PAGE)}#{r['anchor']})"
            base = rows[(rows.variant == base_name) & (rows.params_key == c) & (rows.status == "ok")]
            if v != base_name and len(base):
                ratio = R.speedup(r["value"], base.iloc[0].value, bool(r["higher_is_better"]))
                cell += f" ({R.fmt_ratio(ratio)})" + (" " + R.badge("loses", "slower") if ratio and ratio < 1 else "")
            cells.append(cell)
        body.append(cells)
    constant = {k: v for k, v in params_of[configs[0]].items() if k not in vary}
    caption = (f"*{first['metric_unit']}, {'higher' if first['higher_is_better'] else 'lower'} is better; "
               f"ratio to {base_name} in the same run.* {first['gpu_name']}, {run_link(first, page, 'run ' + first['run_id'])}"
               + (f", {R.md_escape(R.params_text(constant))}" if constant else "")
               + (" " + R.badge("notcounted", first["reason"]) if first["reason"] and first["status"] == "ok" else "")
               + (" " + R.badge("stale", "stale") if first["stale"] else ""))
    return table(header, body, "l" + "r" * len(configs)) + "\n\n" + caption


def _config_sort_key(rows: pd.DataFrame, key: str):
    params = rows[rows.params_key == key].iloc[0].params
    return tuple((k, _num(params[k])) for k in sorted(params))


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
