"""Site pages for the OSS-PR notes: a contributions table and one page per note.

The site build calls ``write_pages(docs_dir, frame)`` and puts what it returns into the nav. Every number on these
pages comes from ``frame`` (the store's long-format records) through ``results.pairs``: a note that names no run,
or a run the store does not hold, shows "not yet measured" — never a typed number.
"""
from __future__ import annotations

import html
import math
from pathlib import Path

from .notes import Note, load_notes, validate_note
from .results import headline, pairs

OUT_SUBDIR = "contributions"
_BADGE_COLOURS = {  # status -> (background, text): readable without any extra CSS
    "idea": ("#e0e0e0", "#333"),
    "prepared": ("#fff3cd", "#664d03"),
    "open": ("#cfe2ff", "#084298"),
    "merged": ("#d1e7dd", "#0f5132"),
    "closed": ("#f8d7da", "#842029"),
}
_BADGE_HELP = {
    "idea": "an idea, nothing written upstream yet",
    "prepared": "patch and repro ready, not submitted",
    "open": "pull request open upstream",
    "merged": "merged upstream",
    "closed": "closed upstream without merging",
}


def badge(status: str) -> str:
    bg, fg = _BADGE_COLOURS.get(status, ("#e0e0e0", "#333"))
    return (f'<span class="gf-badge gf-badge-{html.escape(status)}" title="{_BADGE_HELP.get(status, "")}" '
            f'style="background:{bg};color:{fg};padding:0 .45em;border-radius:.6em;font-size:.85em;'
            f'white-space:nowrap">{html.escape(status)}</span>')


def fmt(value: float | None) -> str:
    """Three significant figures, no exponent for the magnitudes a benchmark gives."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if value == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
    return f"{value:,.{digits}f}"


def params_text(params) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(dict(params).items()))


def pr_link(note: Note) -> str:
    url = (note.meta.get("pr") or {}).get("url")
    number = (note.meta.get("pr") or {}).get("number")
    return f"[#{number}]({url})" if url else "not submitted"


def repo_link(repo: str) -> str:
    return f"[{repo}](https://github.com/{repo})"


def before_after(note: Note, frame) -> str:
    """'1.23 → 2.34 GB/s (1.90×)' at the headline shape, from the records; or why there is none."""
    res = note.meta.get("results") or {}
    if not res.get("run_id"):
        return "not yet measured"
    h = headline(frame, res)
    if h is None:
        return f"run `{res['run_id']}` not in the store"
    ratio = f" ({h['speedup']:.2f}×)" if h["speedup"] else ""
    return f"{fmt(h['before'])} → {fmt(h['after'])} {h['metric_unit']}{ratio}"


def table_page(notes: list[Note], frame) -> str:
    lines = [
        "# Contributions upstream",
        "",
        "Changes prepared for, or made to, open-source projects we use. The status says how far each got; a note "
        "is only marked open, merged or closed with its pull request's URL. Before → after is upstream's "
        "implementation against the patched one, measured in one run on the same GPU, at the note's headline "
        "shape; the numbers are read from the stamped records.",
        "",
        "| contribution | upstream | status | before → after | pull request |",
        "|---|---|---|---|---|",
    ]
    order = {s: i for i, s in enumerate(("merged", "open", "prepared", "closed", "idea"))}
    for note in sorted(notes, key=lambda n: (order.get(n.status, 9), n.slug)):
        lines.append(f"| [{note.meta.get('title', note.slug)}]({note.slug}.md) | "
                     f"{repo_link(note.meta['upstream']['repo'])} | {badge(note.status)} | "
                     f"{before_after(note, frame)} | {pr_link(note)} |")
    if not notes:
        lines.append("| (no notes yet) | | | | |")
    return "\n".join(lines) + "\n"


def _results_section(note: Note, frame) -> list[str]:
    res = note.meta.get("results") or {}
    lines = ["## Before and after", ""]
    if not res.get("run_id"):
        return lines + [f"> **Not yet measured.** The repro bench `{res.get('bench')}` has no stamped run for this "
                        "note yet.", ""]
    table = pairs(frame, res)
    if table.empty:
        return lines + [f"> **Records missing.** Run `{res['run_id']}` is not in this build's results store.", ""]
    unit = table.iloc[0]["metric_unit"]
    hib = bool(table.iloc[0]["higher_is_better"])
    lines += [f"`{res['before']}` is upstream's implementation, `{res['after']}` the patch; both from run "
              f"`{res['run_id']}` of bench `{res['bench']}` ({'higher' if hib else 'lower'} is better; "
              "speedup > 1 means the patch is faster).", "",
              f"| shape | GPU | before ({unit}) | after ({unit}) | speedup |", "|---|---|---|---|---|"]
    for _, r in table.iterrows():
        speed = f"{r['speedup']:.2f}×" if r["speedup"] else "—"
        lines.append(f"| {params_text(r['params'])} | {r['gpu_name']} | {fmt(r['before'])} | {fmt(r['after'])} | {speed} |")
    slower = table[table["speedup"].astype(float) < 1.0]
    if len(slower):
        lines += ["", f"Where the patch loses: the ratio is below 1 at {len(slower)} of {len(table)} shapes ("
                  + "; ".join(params_text(p) for p in slower["params"]) + ")."]
    return lines + _other_variants(frame, res) + [""]


def _other_variants(frame, res) -> list[str]:
    """Other candidates of the same run (a constant's neighbours, our own kernel), each against ``before``."""
    run = frame[(frame["run_id"] == res["run_id"]) & (frame["bench"] == res["bench"]) & (frame["status"] == "ok")]
    others = [v for v in dict.fromkeys(run["variant"]) if v not in (res["before"], res["after"])]
    rows = []
    for variant in others:
        for _, r in pairs(frame, {**res, "after": variant}).iterrows():
            speed = f"{r['speedup']:.2f}×" if r["speedup"] else "—"
            rows.append(f"| `{variant}` | {params_text(r['params'])} | {fmt(r['after'])} | {speed} |")
    if not rows:
        return []
    return ["", f"Other variants measured in the same run, against `{res['before']}`:", "",
            f"| variant | shape | {run.iloc[0]['metric_unit']} | vs `{res['before']}` |", "|---|---|---|---|", *rows]


def note_page(note: Note, frame) -> str:
    m = note.meta
    change, dates, upstream = m.get("change") or {}, m.get("dates") or {}, m.get("upstream") or {}
    date_text = ", ".join(f"{k} {v}" for k, v in dates.items() if v)
    files = ", ".join(f"`{f['path']}` (+{f['insertions']} −{f['deletions']})" for f in change.get("files", [])) or "—"
    lines = [
        f"# {m['title']}",
        "",
        f"{badge(note.status)} · {repo_link(upstream['repo'])} · pull request: {pr_link(note)}",
        "",
        "| | |",
        "|---|---|",
        f"| upstream files | {', '.join(f'`{p}`' for p in upstream.get('files', [])) or '—'} |",
    ]
    if upstream.get("api"):
        lines.append(f"| upstream API | {', '.join(f'`{a}`' for a in upstream['api'])} |")
    if upstream.get("base_ref"):
        lines.append(f"| against | `{upstream['base_ref']}` |")
    lines += [
        f"| change | {change.get('files_changed', 0)} file(s), +{change.get('insertions', 0)} "
        f"−{change.get('deletions', 0)}: {files} |",
        f"| dates | {date_text} |",
        f"| hardware | {m['hardware']} |",
        "",
    ]
    lines += _results_section(note, frame)
    lines += ["## How correctness was checked", "", m["correctness"].strip(), ""]
    lines += [note.body.strip(), ""]
    if change.get("commits"):
        lines += ["## Commits", ""] + [f"- `{c['sha']}` {c['summary']} ({c['author']}, {c['date']})"
                                       for c in change["commits"]] + [""]
    lines += ["## Review lessons", ""]
    lines += [f"- {x}" for x in m.get("review_lessons") or []] or ["None yet."]
    return "\n".join(lines) + "\n"


def write_pages(docs_dir: Path, frame, notes: list[Note] | None = None) -> list[tuple[str, str]]:
    """Write ``contributions/index.md`` and ``contributions/<slug>.md``; return (title, path under docs_dir)."""
    if notes is None:
        notes, errors = load_notes()
        if errors:
            raise ValueError("OSS-PR notes that cannot be read: " + "; ".join(errors))
    # Fail the build loudly rather than publish a note that claims what it cannot back (STYLE: docs fail loudly).
    errors = [e for note in notes for e in validate_note(note, frame)]
    if errors:
        raise ValueError("invalid OSS-PR notes:\n" + "\n".join(errors))
    out = Path(docs_dir) / OUT_SUBDIR
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.md").write_text(table_page(notes, frame), encoding="utf-8")
    nav = [("Contributions", f"{OUT_SUBDIR}/index.md")]
    for note in sorted(notes, key=lambda n: n.slug):
        (out / f"{note.slug}.md").write_text(note_page(note, frame), encoding="utf-8")
        nav.append((note.meta["title"], f"{OUT_SUBDIR}/{note.slug}.md"))
    return nav
