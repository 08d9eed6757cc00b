"""Result markers in writeups: parsed, checked against the store, replaced by numbers with their provenance.

    <!-- result: project=P bench=B variant=V metric=M k=v ... [run=RUN_ID] -->
    <!-- results-table: project=P bench=B [k=v ...] [run=RUN_ID] -->
    <!-- results-chart: project=P bench=B [x=PARAM] [k=v ...] [run=RUN_ID] -->

Any other ``k=v`` is a params filter (4096 matches 4096 and "4096"). A marker that names an unknown project,
bench, variant or metric, or that matches no counted record, raises MarkerError naming the file and line: a
writeup can never silently lose a number, and a record that does not count (``records.counted``) is never one.
Markers inside fenced code blocks or inline code are left alone (that is how a page shows the syntax).

Which run a marker reads:

- ``run=`` on the marker, else the document's front matter ``runs:`` (a mapping project -> run id, or a list
  of run ids when the project's benches ran separately: the one that holds the marker's bench);
- a dated document (front matter ``date:``, i.e. a worklog entry) stops there: its numbers are those of the
  runs it names, so a marker that would follow the newest run fails the build naming file and line;
- otherwise (a project README) the marker follows the newest run, and every such marker of one section (the
  text under one heading) of one project reads the same run: the newest run in which all of them resolve and
  every quoted candidate has its baseline, else the newest in which all of them resolve. A section whose
  markers resolve in no single run fails: a paragraph never mixes runs.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from . import records as R

KINDS = ("result", "results-table", "results-chart")
MARKER_RE = re.compile(r"<!--\s*(results?(?:-[a-z]+)?)\s*:(.*?)-->")
OPEN_RE = re.compile(r"<!--\s*results?\b")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
HEADING_RE = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FRONT_RE = re.compile(r"\A---\n(.*?)\n---\n", re.S)
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
    section: str = ""        # the heading the marker sits under ("" before the first)
    section_at: int = 0      # that heading's line: two sections may share a heading's text
    pin: str | None = None   # the run it reads: run=, the front matter's, or the one its section agreed on

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def filters(self) -> dict[str, str]:
        return {k: v for k, v in self.args.items() if k not in RESERVED}

    def fail(self, msg: str) -> MarkerError:
        return MarkerError(f"{self.where}: {msg}")


class Split:
    """The frame split once by project and by (project, bench): every marker filters these small frames instead
    of the whole store (hundreds of markers against thousands of rows were most of a build)."""

    def __init__(self, df: pd.DataFrame):
        self.df = df
        self._projects = {k: g for k, g in df.groupby("project", sort=False)} if len(df) else {}
        self._benches: dict[tuple[str, str], pd.DataFrame] = {}
        self._meta: dict[tuple[str, str], dict] = {}
        self._gpu: dict[tuple[str, str], str | None] = {}

    def project(self, project: str) -> pd.DataFrame:
        return self._projects.get(project, self.df.iloc[0:0])

    def bench(self, project: str, bench: str) -> pd.DataFrame:
        key = (project, bench)
        if key not in self._benches:
            rows = self.project(project)
            self._benches[key] = rows[rows.bench == bench]
        return self._benches[key]

    def run_gpu(self, project: str, run_id: str) -> str | None:
        """The GPU model a run is read on (``records.run_gpu``)."""
        key = (project, run_id)
        if key not in self._gpu:
            rows = self.project(project)
            self._gpu[key] = R.run_gpu(rows[rows.run_id == run_id])
        return self._gpu[key]

    def meta(self, project: str, bench: str) -> dict:
        key = (project, bench)
        if key not in self._meta:
            self._meta[key] = R.bench_meta(self.bench(project, bench), project, bench)
        return self._meta[key]


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
    # A dated document's markers must name their runs. None: dated when the front matter has ``date:``.
    dated: bool | None = None
    _split: Split | None = field(default=None, repr=False)

    @property
    def split(self) -> Split:
        if self._split is None or self._split.df is not self.df:
            self._split = Split(self.df)
        return self._split


def front_matter(text: str, file: str) -> dict:
    m = FRONT_RE.match(text)
    if not m:
        return {}
    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as e:
        raise MarkerError(f"{file}:1: front matter is not YAML: {' '.join(str(e).split())}") from e
    return meta if isinstance(meta, dict) else {}


def front_runs(meta: dict, file: str) -> dict[str, list[str]]:
    """The front matter's ``runs:`` (project -> run id, or a list of them), checked for shape."""
    runs = meta.get("runs") or {}
    out = {k: [v] if isinstance(v, str) else v for k, v in runs.items()} if isinstance(runs, dict) else None
    if out is None or not all(isinstance(v, list) and v and all(isinstance(r, str) for r in v) for v in out.values()):
        raise MarkerError(f"{file}:1: front matter runs: must map each project to a run id or a list of them")
    unknown = sorted(set(out) - set(R.projects()))
    if unknown:
        raise MarkerError(f"{file}:1: front matter runs: unknown project {unknown[0]!r}")
    return out


def _front_pin(marker: Marker, named: list[str] | None, st: Split) -> str | None:
    """The run of the front matter's list that holds the marker's bench (a single run is taken as it is)."""
    if not named or len(named) == 1:
        return named[0] if named else None
    a = marker.args
    have = set(st.bench(a["project"], a["bench"]).run_id)
    hits = [r for r in named if r in have]
    if len(hits) != 1:
        raise marker.fail(f"{'none' if not hits else len(hits)} of the runs the front matter names for "
                          f"{a['project']} ({', '.join(named)}) hold {a['bench']}: pin run= on the marker")
    return hits[0]


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
    out, fenced, section, section_at = [], False, "", 0
    front = FRONT_RE.match(text)
    skip = front.group(0).count("\n") if front else 0
    for i, line in enumerate(text.split("\n")):
        if i < skip:
            continue
        if FENCE_RE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = HEADING_RE.match(line)
        if heading:
            section, section_at = heading.group(1), i + 1
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
                marker = Marker(kind, args, file, i + 1, section, section_at)
                missing = [k for k in REQUIRED[kind] if k not in args]
                if missing:
                    raise marker.fail(f"{kind} marker needs {', '.join(missing)}")
                out.append((marker, i, m.start(), m.end()))
    return out


def resolve_text(text: str, file: str, ctx: Context) -> str:
    """Replace every marker in ``text``; raises MarkerError on the first one that does not resolve."""
    lines = text.split("\n")
    found = find(text, file)
    if not found:
        return text
    meta = front_matter(text, file)
    runs = front_runs(meta, file)
    dated = ctx.dated if ctx.dated is not None else "date" in meta
    first_error = len(ctx.errors) if ctx.errors is not None else 0
    failed: set[int] = set()  # id() of the markers that failed before resolving (reported once, here)
    floating: dict[tuple[int, str], list[Marker]] = {}
    for marker, *_ in found:
        try:
            _check_names(marker, ctx.split)
            marker.pin = marker.args.get("run") or _front_pin(marker, runs.get(marker.args["project"]), ctx.split)
            if marker.pin is None and dated:
                raise marker.fail(
                    f"a dated entry's numbers never change: name the run (run=RUN_ID on the marker, or front matter "
                    f"runs: {{{marker.args['project']}: RUN_ID}}); this marker would follow the newest run")
        except MarkerError as e:
            _fail(e, ctx)
            failed.add(id(marker))
            continue
        if marker.pin is None:
            floating.setdefault((marker.section_at, marker.args["project"]), []).append(marker)
    for group in floating.values():
        try:
            run = choose_run(group, ctx.split)
        except MarkerError as e:
            _fail(e, ctx)
            failed.update(id(m) for m in group)
            continue
        for m in group:
            m.pin = run
    outs = []
    for marker, *_ in found:  # top to bottom, so the first error reported is the first in the file
        if id(marker) in failed:
            outs.append("**unresolved marker**")
            continue
        try:
            outs.append(RESOLVERS[marker.kind](marker, ctx))
        except MarkerError as e:
            _fail(e, ctx)
            outs.append("**unresolved marker**")
    if ctx.errors is not None:  # errors found before resolving (names, pins, sections) join in line order
        ctx.errors[first_error:] = sorted(ctx.errors[first_error:], key=_line_of)
    for (_, i, a, b), out in reversed(list(zip(found, outs))):  # right to left keeps earlier offsets valid
        lines[i] = lines[i][:a] + out + lines[i][b:]
    return "\n".join(lines)


def _line_of(error: str) -> int:
    m = re.match(r"^.*?:(\d+): ", error)
    return int(m.group(1)) if m else 0


def _fail(e: MarkerError, ctx: Context) -> None:
    """Collect the error (``--all-errors``) or raise it."""
    if ctx.errors is None:
        raise e
    ctx.errors.append(str(e))


def resolve_file(path: Path, ctx: Context, display: str | None = None) -> str:
    return resolve_text(path.read_text(encoding="utf-8"), display or str(path), ctx)


# ---- checking names against the store ---------------------------------------------------------------------

def _bench_rows(marker: Marker, st: Split) -> pd.DataFrame:
    project, bench = marker.args["project"], marker.args["bench"]
    if project not in R.projects():
        raise marker.fail(f"unknown project {project!r}; projects are {', '.join(R.projects())}")
    prow = st.project(project)
    if prow.empty:
        raise marker.fail(f"project {project!r} has no records yet")
    rows = st.bench(project, bench)
    if rows.empty:
        raise marker.fail(f"unknown bench {bench!r} in {project}; benches are {', '.join(sorted(prow.bench.unique()))}")
    if marker.pin is not None and marker.pin not in set(rows.run_id):
        named = "" if "run" in marker.args else " (named in the front matter)"
        raise marker.fail(f"no run {marker.pin!r} of {project}/{bench}{named}")
    return rows


def _check_names(marker: Marker, st: Split) -> pd.DataFrame:
    """The bench's rows, after checking every name the marker gives (project, bench, variant, metric)."""
    a = marker.args
    pin, marker.pin = marker.pin, a.get("run")
    rows = _bench_rows(marker, st)
    marker.pin = pin
    if marker.kind != "result":
        return rows
    if a["variant"] not in set(rows.variant):
        raise marker.fail(f"unknown variant {a['variant']!r} of {a['project']}/{a['bench']}; "
                          f"variants are {', '.join(sorted(rows.variant.unique()))}")
    names = set(rows.metric_name.dropna())
    if a["metric"] not in names:
        raise marker.fail(f"unknown metric {a['metric']!r} of {a['project']}/{a['bench']}; "
                          f"metrics are {', '.join(sorted(names))}")
    return rows


def _what(marker: Marker) -> str:
    a = marker.args
    what = f"{a['project']}/{a['bench']}"
    return what + (f"/{a['variant']} metric {a['metric']}" if marker.kind == "result" else "")


def _filt(marker: Marker) -> str:
    return " ".join(f"{k}={v}" for k, v in marker.filters.items()) or "(no filters)"


def _matching(marker: Marker, rows: Split | pd.DataFrame) -> pd.DataFrame:
    """Every row of ``rows`` (the marker's bench by default) that the marker could read: its params filters, and
    variant/metric for a result."""
    a = marker.args
    rows = rows.bench(a["project"], a["bench"]) if isinstance(rows, Split) else rows
    if marker.kind == "result":
        rows = rows[(rows.variant == a["variant"]) & (rows.metric_name == a["metric"])]
    return rows[[R.params_match(p, marker.filters) for p in rows.params]]


def _has_baseline(marker: Marker, st: Split, run: pd.DataFrame, gpu: str) -> bool:
    """Whether ``run`` (counted rows of one run) holds the baseline the marker's candidate is read against."""
    base_name = st.meta(marker.args["project"], marker.args["bench"]).get("headline_baseline")
    if not base_name or marker.args.get("variant") == base_name:
        return True
    rows = st.bench(marker.args["project"], marker.args["bench"])
    bench = R.counted(rows[(rows.run_id == run.iloc[0].run_id) & (rows.variant == base_name)], gpu)
    if marker.kind != "result":
        return not bench[[R.params_match(p, marker.filters) for p in bench.params]].empty
    return bool(set(run.params_key) & set(bench[bench.metric_name == marker.args["metric"]].params_key))


def choose_run(markers: list[Marker], st: Split) -> str:
    """The one run every floating marker of a section (all of one project) reads: the newest in which each of
    them has a counted record and each quoted candidate its baseline; else the newest in which each resolves."""
    gpu = R.portfolio_gpu()
    matches = [R.counted(_matching(m, st), gpu) for m in markers]
    for m, rows in zip(markers, matches):
        if rows.empty:
            raise m.fail(f"no counted record of {_what(m)} at {_filt(m)} on {gpu}")
    project = st.project(markers[0].args["project"])
    order = project.drop_duplicates("run_id").sort_values("created_at", ascending=False).run_id
    fits = []
    for run_id in order:
        runs = [rows[rows.run_id == run_id] for rows in matches]
        if all(len(r) for r in runs):
            if all(_has_baseline(m, st, r, gpu) for m, r in zip(markers, runs)):
                return run_id
            fits.append(run_id)
    if fits:
        return fits[0]
    m = markers[0]
    heading = f"section {m.section!r}" if m.section else "the text before the first heading"
    raise m.fail(f"the {len(markers)} markers of {m.args['project']} in {heading} resolve in no single run "
                 "(a paragraph never mixes runs): pin run= on the ones that quote another run, or move them")


def _pinned_rows(marker: Marker, st: Split) -> tuple[pd.DataFrame, str | None]:
    """(every matching row of the marker's run, the GPU model that run is read on)."""
    rows = st.bench(marker.args["project"], marker.args["bench"])
    rows = _matching(marker, rows[rows.run_id == marker.pin])
    return rows, st.run_gpu(marker.args["project"], marker.pin)


def _counted_in_run(marker: Marker, st: Split) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """(all matching rows of the run, the counted ones, the run's GPU); fails when nothing counts."""
    rows, gpu = _pinned_rows(marker, st)
    good = R.counted(rows, gpu) if gpu else rows.iloc[0:0]
    if good.empty:
        ok = rows[rows.status == "ok"]
        if ok.empty:
            raise marker.fail(f"no ok record of {_what(marker)} at {_filt(marker)} in run {marker.pin}")
        why = sorted({R.cell_reason(r, gpu) or "" for r in ok.to_dict("records")} - {""})
        raise marker.fail(f"{_what(marker)} at {_filt(marker)} in run {marker.pin} does not count "
                          f"({'; '.join(why)}): a number that does not count is never shown")
    return rows, good, gpu


def _provenance(row: dict, ctx: Context) -> str:
    link = R.rel_link(ctx.page, R.RUNS_PAGE) + "#" + row["anchor"]
    ctx.used_runs.add(row["run_id"])
    flags = ""
    if row["stale"]:
        flags += " " + R.badge("stale", "stale", "the sources changed since this run")
    return f"{row['gpu_name'] or 'no GPU'}, [run {row['date']}]({link}){flags}"


def resolve_result(marker: Marker, ctx: Context) -> str:
    a = marker.args
    rows = _check_names(marker, ctx.split)
    _bench_rows(marker, ctx.split)  # the pinned run exists for this bench
    _, run, gpu = _counted_in_run(marker, ctx.split)
    if run.params_key.nunique() > 1:
        raise marker.fail(f"ambiguous: {run.params_key.nunique()} configs match ({'; '.join(sorted(run.params_key))}); "
                          "add k=v filters")
    row = run.iloc[0].to_dict()
    text = f"**{R.fmt_value(row['value'])} {row['metric_unit']}**"
    meta = ctx.split.meta(a["project"], a["bench"])
    base_name = meta.get("headline_baseline")
    detail = []
    if a["variant"] == base_name:
        detail.append("the baseline")
    else:
        base = R.counted(rows[(rows.run_id == row["run_id"]) & (rows.variant == base_name)
                              & (rows.params_key == row["params_key"]) & (rows.metric_name == a["metric"])], gpu)
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

    _bench_rows(marker, ctx.split)
    run, _, _ = _counted_in_run(marker, ctx.split)
    ctx.used_runs.add(marker.pin)
    return variant_table(run, ctx)


def resolve_chart(marker: Marker, ctx: Context) -> str:
    a = marker.args
    _bench_rows(marker, ctx.split)
    run, good, _ = _counted_in_run(marker, ctx.split)
    meta = ctx.split.meta(a["project"], a["bench"])
    x = a.get("x") or meta.get("x_param")
    if x and not any(x in p for p in run.params):
        raise marker.fail(f"x={x} is not a param of {a['project']}/{a['bench']}")
    if ctx.chart is None:
        raise marker.fail("charts are not available in this context")
    path = ctx.chart(marker, run, x)
    row = good.iloc[0].to_dict()
    alt = f"{meta.get('metric', 'metric')} of each {a['bench']} variant against {x or 'variant'}, {row['gpu_name']}"
    return f"![{alt}]({R.rel_link(ctx.page, path)})\n\n<span class=\"gf-caption\">{_provenance(row, ctx)}</span>"


RESOLVERS = {"result": resolve_result, "results-table": resolve_table, "results-chart": resolve_chart}


def chart_name(marker: Marker) -> str:
    """A stable file name per marker, so rebuilding does not churn images."""
    key = " ".join(f"{k}={v}" for k, v in sorted(marker.args.items()))
    return f"{marker.args['project']}-{marker.args['bench']}-{hashlib.sha1(key.encode()).hexdigest()[:8]}.png"
