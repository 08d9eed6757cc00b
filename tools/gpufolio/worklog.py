"""Draft a worklog entry: ``python -m gpufolio worklog new "title" --project P`` (or ``nox -s worklog -- new ...``).

Writes ``worklog/YYYY-MM-DD-slug.md`` with the blog's front matter and the project's latest run already embedded
as markers pinned to that run (``run=RUN_ID``), so the entry keeps showing the numbers it was written about
after newer runs arrive. It is a draft (``draft: true``) until its author removes that line.
"""
from __future__ import annotations

import argparse
import re
import sys
from datetime import date
from pathlib import Path

from . import PROJECTS, store


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpufolio worklog")
    sub = ap.add_subparsers(dest="cmd", required=True)
    new = sub.add_parser("new", help="draft worklog/YYYY-MM-DD-slug.md with the project's latest run in it")
    new.add_argument("title")
    new.add_argument("--project", required=True, choices=PROJECTS)
    new.add_argument("--date", type=date.fromisoformat, help="YYYY-MM-DD (default: today)")
    args = ap.parse_args(argv)
    try:
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
