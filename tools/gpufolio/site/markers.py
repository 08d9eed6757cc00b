"""Result markers in writeups: parsed, checked against the store, replaced by numbers with their provenance.

    <!-- result: project=P bench=B variant=V metric=M k=v ... [run=RUN_ID] -->
    <!-- results-table: project=P bench=B [k=v ...] [run=RUN_ID] -->
    <!-- results-chart: project=P bench=B [x=PARAM] [k=v ...] [run=RUN_ID] -->

Any other ``k=v`` is a params filter (4096 matches 4096 and "4096"). A marker that names an unknown project,
bench, variant or metric, or that matches no ok record, raises MarkerError naming the file and line: a writeup
can never silently lose a number. Markers inside fenced code blocks or inline code are left alone (that is how
a page shows the syntax).
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import records as R

KINDS = ("result", "results-table", "results-chart")
MARKER_RE = re.compile(r"<!--\s*(results?(?:-[a-z]+)?)\s*:(.*?)-->")
OPEN_RE = re.compile(r"<!--\s*results?\b")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
REQUIRED = {"result": ("project", "bench", "variant", "metric"), "results-table": ("project", "bench"),
            "results-chart": ("project", "bench")}
RESERVED = {"project", "bench", "variant", "metric", "run", "x"}


class MarkerError(ValueError):
    """A marker that cannot be resolved; str() is ``file:line: what is wrong``."""


@dataclass
class Marker:
    kind: str
    args: dict[str, str]
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def filters(self) -> dict[str, str]:
        return {k: v for k, v in self.args.items() if k not in RESERVED}

    def fail(self, msg: str) -> MarkerError:
        return MarkerError(f"{self.where}: {msg}")


@dataclass
class Context:
    """What a resolver needs: the prepared frame, the page being written (for relative links), and a chart
    writer ``chart(marker, rows, x_param) -> docs-relative PNG path``."""

    df: pd.DataFrame
    page: str
    site: R.Site
    chart: Callable[[Marker, pd.DataFrame, str | None], str] | None = None
    used_runs: set[str] = field(default_factory=set)
    # None: the first bad marker raises. A list: every bad marker is collected there (``--all-errors``).
    errors: list[str] | None = None


def parse_args(text: str, where: str) -> dict[str, str]:
    args = {}
    for tok in text.split():
        if "=" not in tok or tok.startswith("="):
            raise MarkerError(f"{where}: expected key=value, got {tok!r}")
        k, v = tok.split("=", 1)
        if k in args:
            raise MarkerError(f"{where}: {k} given twice")
        args[k] = v
    return args


def _code_free_spans(line: str) -> list[tuple[int, int]]:
    """Spans of a line outside inline code (`...`), where markers count."""
    spans, start, inside = [], 0, False
    for m in re.finditer(r"`+", line):
        if not inside:
            spans.append((start, m.start()))
        start, inside = m.end(), not inside
    if not inside:
        spans.append((start, len(line)))
    return spans


def find(text: str, file: str) -> list[tuple[Marker, int, int, int]]:
    """(marker, line index, start, end) for every marker outside code."""
    out, fenced = [], False
    for i, line in enumerate(text.split("\n")):
        if FENCE_RE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for a, b in _code_free_spans(line):
            opened = OPEN_RE.search(line, a, b)
            if opened and "-->" not in line[opened.end():b]:
                raise MarkerError(f"{file}:{i + 1}: a marker must open and close (-->) on one line")
            for m in MARKER_RE.finditer(line, a, b):
                where = f"{file}:{i + 1}"
                kind = m.group(1)
                if kind not in KINDS:
                    raise MarkerError(f"{where}: unknown marker {kind!r}; markers are {', '.join(KINDS)}")
                args = parse_args(m.group(2), where)
                marker = Marker(kind, args, file, i + 1)
                missing = [k for k in REQUIRED[kind] if k not in args]
                if missing:
                    raise marker.fail(f"{kind} marker needs {', '.join(missing)}")
                out.append((marker, i, m.start(), m.end()))
    return out


def resolve_text(text: str, file: str, ctx: Context) -> str:
    """Replace every marker in ``text``; raises MarkerError on the first one that does not resolve."""
    lines = text.split("\n")
    found = find(text, file)
    outs = []
    for marker, *_ in found:  # top to bottom, so the first error reported is the first in the file
        try:
            outs.append(RESOLVERS[marker.kind](marker, ctx))
        except MarkerError as e:
            if ctx.errors is None:
                raise
            ctx.errors.append(str(e))
            outs.append("**unresolved marker**")
    for (_, i, a, b), out in reversed(list(zip(found, outs))):  # right to left keeps earlier offsets valid
        lines[i] = lines[i][:a] + out + lines[i][b:]
    return "\n".join(lines)


def resolve_file(path: Path, ctx: Context, display: str | None = None) -> str:
    return resolve_text(path.read_text(encoding="utf-8"), display or str(path), ctx)


# ---- checking names against the store ---------------------------------------------------------------------

def _bench_rows(marker: Marker, df: pd.DataFrame) -> pd.DataFrame:
    project, bench = marker.args["project"], marker.args["bench"]
    if project not in R.projects():
        raise marker.fail(f"unknown project {project!r}; projects are {', '.join(R.projects())}")
    prow = df[df.project == project]
    if prow.empty:
        raise marker.fail(f"project {project!r} has no records yet")
    rows = prow[prow.bench == bench]
    if rows.empty:
        raise marker.fail(f"unknown bench {bench!r} in {project}; benches are {', '.join(sorted(prow.bench.unique()))}")
    if "run" in marker.args:
        run = marker.args["run"]
        if run not in set(rows.run_id):
            raise marker.fail(f"no run {run!r} of {project}/{bench}")
    return rows


def _pick_run(marker: Marker, rows: pd.DataFrame, what: str) -> pd.DataFrame:
    """The rows of one run: run= if given, else the newest run with a countable match, else any ok match."""
    rows = rows[[R.params_match(p, marker.filters) for p in rows.params]]
    if "run" in marker.args:
        rows = rows[rows.run_id == marker.args["run"]]
    ok = rows[rows.status == "ok"]
    if ok.empty:
        filt = " ".join(f"{k}={v}" for k, v in marker.filters.items()) or "(no filters)"
        raise marker.fail(f"no ok record of {what} at {filt}")
    good = ok[ok.reason.isna()]
    pool = good if not good.empty else ok
    newest = pool.sort_values("created_at").iloc[-1].run_id
    return rows[rows.run_id == newest]


def _provenance(row: dict, ctx: Context) -> str:
    link = R.rel_link(ctx.page, R.RUNS_PAGE) + "#" + row["anchor"]
    ctx.used_runs.add(row["run_id"])
    flags = ""
    if row["reason"]:
        flags += " " + R.badge("notcounted", row["reason"], "not counted as a headline number")
    if row["stale"]:
        flags += " " + R.badge("stale", "stale", "the sources changed since this run")
    return f"{row['gpu_name'] or 'no GPU'}, [run {row['date']}]({link}){flags}"


def resolve_result(marker: Marker, ctx: Context) -> str:
    a = marker.args
    rows = _bench_rows(marker, ctx.df)
    if a["variant"] not in set(rows.variant):
        raise marker.fail(f"unknown variant {a['variant']!r} of {a['project']}/{a['bench']}; "
                          f"variants are {', '.join(sorted(rows.variant.unique()))}")
    names = set(rows.metric_name.dropna())
    if a["metric"] not in names:
        raise marker.fail(f"unknown metric {a['metric']!r} of {a['project']}/{a['bench']}; "
                          f"metrics are {', '.join(sorted(names))}")
    mine = rows[(rows.variant == a["variant"]) & (rows.metric_name == a["metric"])]
    run = _pick_run(marker, mine, f"{a['project']}/{a['bench']}/{a['variant']} metric {a['metric']}")
    run = run[run.status == "ok"]
    if run.params_key.nunique() > 1:
        raise marker.fail(f"ambiguous: {run.params_key.nunique()} configs match ({'; '.join(sorted(run.params_key))}); "
                          "add k=v filters")
    row = run.iloc[0].to_dict()
    text = f"**{R.fmt_value(row['value'])} {row['metric_unit']}**"
    meta = R.bench_meta(ctx.df, a["project"], a["bench"])
    base_name = meta.get("headline_baseline")
    detail = []
    if a["variant"] == base_name:
        detail.append("the baseline")
    else:
        base = rows[(rows.run_id == row["run_id"]) & (rows.variant == base_name) & (rows.status == "ok")
                    & (rows.params_key == row["params_key"]) & (rows.metric_name == a["metric"])
                    & (rows.gpu_name == row["gpu_name"])]
        if len(base):
            b = base.iloc[0].to_dict()
            ratio = R.speedup(row["value"], b["value"], bool(row["higher_is_better"]))
            lose = " " + R.badge("loses", "slower") if ratio is not None and ratio < 1 else ""
            detail.append(f"{R.fmt_ratio(ratio)} {b['label']}{lose}")
        else:
            detail.append(f"no {base_name} in this run")
    detail.append(_provenance(row, ctx))
    return f"{text} ({', '.join(detail)})"


def resolve_table(marker: Marker, ctx: Context) -> str:
    from .tables import variant_table  # tables imports markers' helpers; keep the cycle lazy

    rows = _bench_rows(marker, ctx.df)
    run = _pick_run(marker, rows, f"{marker.args['project']}/{marker.args['bench']}")
    ctx.used_runs.add(run.iloc[0].run_id)
    return variant_table(run, ctx)


def resolve_chart(marker: Marker, ctx: Context) -> str:
    a = marker.args
    rows = _bench_rows(marker, ctx.df)
    run = _pick_run(marker, rows, f"{a['project']}/{a['bench']}")
    meta = R.bench_meta(ctx.df, a["project"], a["bench"])
    x = a.get("x") or meta.get("x_param")
    if x and not any(x in p for p in run.params):
        raise marker.fail(f"x={x} is not a param of {a['project']}/{a['bench']}")
    if ctx.chart is None:
        raise marker.fail("charts are not available in this context")
    path = ctx.chart(marker, run, x)
    row = run.iloc[0].to_dict()
    alt = f"{meta.get('metric', 'metric')} of each {a['bench']} variant against {x or 'variant'}, {row['gpu_name']}"
    return f"![{alt}]({R.rel_link(ctx.page, path)})\n\n<span class=\"gf-caption\">{_provenance(row, ctx)}</span>"


RESOLVERS = {"result": resolve_result, "results-table": resolve_table, "results-chart": resolve_chart}


def chart_name(marker: Marker) -> str:
    """A stable file name per marker, so rebuilding does not churn images."""
    key = " ".join(f"{k}={v}" for k, v in sorted(marker.args.items()))
    return f"{marker.args['project']}-{marker.args['bench']}-{hashlib.sha1(key.encode()).hexdigest()[:8]}.png"
