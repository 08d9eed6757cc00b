"""Draft a worklog entry: ``python -m gpufolio worklog new "title" --project P`` (or ``nox -s worklog -- new ...``).

Writes ``worklog/YYYY-MM-DD-slug.md`` with the blog's front matter and the project's latest run already embedded
as markers pinned to that run (``run=RUN_ID``), so the entry keeps showing the numbers it was written about
after newer runs arrive. It is a draft (``draft: true``) until its author removes that line.

``--before RUN --after RUN`` (run ids, ``latest~N`` or commits, as ``gpufolio compare`` reads them) drafts the
entry about a change instead: the front matter pins the after run (``runs: {P: AFTER}``), the before run's
markers name it (``run=BEFORE``), and the comparison of the two (``gpufolio.compare``) is in it as a table.
"""
from __future__ import annotations

import argparse
import re
import sys
from datetime import date
from pathlib import Path

from . import PROJECTS, store
from . import compare as C


def slugify(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:60].rstrip("-") or "entry"


def latest_run_markers(project: str, root: Path | None = None) -> tuple[str | None, list[str]]:
    """(run id, markers) for the project's newest run that has an ok record; (None, []) if there is none."""
    records = [r for r in store.load_records(root) if r["project"] == project]
    ok = [r for r in records if r["status"] == "ok"]
    if not ok:
        return None, []
    run_id = max(ok, key=lambda r: r["created_at"])["run_id"]
    benches = sorted({r["bench"] for r in ok if r["run_id"] == run_id})
    markers = []
    for bench in benches:
        markers += [f"### `{bench}`", "", f"<!-- results-table: project={project} bench={bench} run={run_id} -->", "",
                    f"<!-- results-chart: project={project} bench={bench} run={run_id} -->", ""]
    return run_id, markers


def draft(title: str, project: str, root: Path | None = None, day: date | None = None) -> tuple[Path, str]:
    if project not in PROJECTS:
        raise ValueError(f"unknown project {project!r}; projects are {', '.join(PROJECTS)}")
    root = root or store.repo_root()
    day = day or date.today()
    path = root / "worklog" / f"{day.isoformat()}-{slugify(title)}.md"
    run_id, markers = latest_run_markers(project, root)
    if run_id is None:
        results = ["*No ok record of this project yet: add markers once a run is committed.*", ""]
    else:
        results = [f"Measured in run `{run_id}`. Quote one number inline with", "",
                   f"`<!-- result: project={project} bench=BENCH variant=VARIANT metric=METRIC k=v run={run_id} -->`",
                   "", *markers]
    text = "\n".join([
        "---", f"date: {day.isoformat()}", "categories:", f"  - {project}", "draft: true", "---", "",
        f"# {title}", "",
        "What was the bottleneck, what changed, and what did the profiler say? (One paragraph: it is the excerpt.)",
        "", "<!-- more -->", "", "## Results", "", *results,
        "## What the profile says", "", "## What is next", "",
    ])
    return path, text


def _bench_markers(project: str, benches: list[str], run_id: str, pin: bool) -> list[str]:
    """A results table per bench; ``pin``: name the run on the marker (else the front matter's runs: pins it)."""
    run = f" run={run_id}" if pin else ""
    return [line for b in benches for line in
            (f"#### `{b}`", "", f"<!-- results-table: project={project} bench={b}{run} -->", "")]


def comparison_table(cmp: C.Comparison) -> list[str]:
    """The comparison as Markdown: one row per case, B/A and the verdict, then what only one run has."""
    rows = [[f"`{c.bench}`", c.variant + (" *(baseline)*" if c.role == "baseline" else ""), c.params,
             f"{c.a:.4g} [{c.a_band[0]:.4g}–{c.a_band[1]:.4g}]", f"{c.b:.4g} [{c.b_band[0]:.4g}–{c.b_band[1]:.4g}]",
             c.unit, f"{c.ratio:.3f}", "—" if c.vs_baseline_ratio is None else f"{c.vs_baseline_ratio:.3f}", c.verdict]
            for c in cmp.cases]
    head = ["Bench", "Variant", "Params", "Before [p20–p80]", "After [p20–p80]", "Unit", "After / before",
            "… vs its baseline", "Verdict"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in rows]
    out += [""]
    for what, items in (("Only before", cmp.only_in_a), ("Only after", cmp.only_in_b)):
        if items:
            out += [f"{what}: " + "; ".join(f"`{i['bench']}` {i['variant']} {i['params']} ({i['status']})"
                                            for i in items), ""]
    return out


def draft_change(title: str, project: str, before: str, after: str, root: Path | None = None,
                 day: date | None = None) -> tuple[Path, str]:
    """The entry about a change measured as two runs of ``project``. Raises CompareError for a bad run."""
    if project not in PROJECTS:
        raise ValueError(f"unknown project {project!r}; projects are {', '.join(PROJECTS)}")
    root = root or store.repo_root()
    day = day or date.today()
    runs = C.read_runs(root=root)
    a_id, b_id = C.resolve(before, runs, project), C.resolve(after, runs, project)
    a = [r for r in runs[a_id] if r["project"] == project]
    b = [r for r in runs[b_id] if r["project"] == project]
    cmp = C.compare(a, b)
    ok_benches = [sorted({r["bench"] for r in recs if r["status"] == "ok"}) for recs in (a, b)]  # what resolves
    text = "\n".join([
        "---", f"date: {day.isoformat()}", "categories:", f"  - {project}", "runs:", f"  {project}: {b_id}",
        "draft: true", "---", "",
        f"# {title}", "",
        "What was the bottleneck, what changed, and what did the profiler say? (One paragraph: it is the excerpt.)",
        "", "<!-- more -->", "", "## Before and after", "",
        f"Before: run `{a_id}` (commit `{(cmp.a.commit or 'unknown')[:10]}`); after: run `{b_id}` (commit "
        f"`{(cmp.b.commit or 'unknown')[:10]}`), both on {cmp.b.gpu or 'no GPU'}. "
        f"From `python -m gpufolio compare {a_id} {b_id} --project {project}`; "
        + C.RULE.format(pct=cmp.threshold * 100) + ".", "",
        *comparison_table(cmp),
        "## After", "", *_bench_markers(project, ok_benches[1], b_id, pin=False),
        "## Before", "", *_bench_markers(project, ok_benches[0], a_id, pin=True),
        "## What the profile says", "", "## What is next", "",
    ])
    return root / "worklog" / f"{day.isoformat()}-{slugify(title)}.md", text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpufolio worklog")
    sub = ap.add_subparsers(dest="cmd", required=True)
    new = sub.add_parser("new", help="draft worklog/YYYY-MM-DD-slug.md with the project's latest run in it "
                                     "(or two runs compared: --before, --after)")
    new.add_argument("title")
    new.add_argument("--project", required=True, choices=PROJECTS)
    new.add_argument("--date", type=date.fromisoformat, help="YYYY-MM-DD (default: today)")
    new.add_argument("--before", metavar="RUN", help="the run before the change (with --after: compare them)")
    new.add_argument("--after", metavar="RUN", help="the run after it (run id, latest, latest~N or a commit)")
    args = ap.parse_args(argv)
    if (args.before is None) != (args.after is None):
        print("gpufolio worklog: --before and --after go together", file=sys.stderr)
        return 2
    try:
        if args.before:
            path, text = draft_change(args.title, args.project, args.before, args.after, day=args.date)
        else:
            path, text = draft(args.title, args.project, day=args.date)
    except (ValueError, store.RecordError) as e:
        print(f"gpufolio worklog: {e}", file=sys.stderr)
        return 2
    if path.exists():
        print(f"gpufolio worklog: {path} already exists; pick another title", file=sys.stderr)
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
