"""The README's headline table, regenerated between two marker comments (as SGEMM_CUDA does): a table nobody
types cannot drift from the data. On GitHub there is no runs page, so each number links to its results file."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import records as R
from . import roofline as RL
from . import select as S
from .tables import table

START = "<!-- gpufolio:headline:start -->"
END = "<!-- gpufolio:headline:end -->"


class ReadmeError(ValueError):
    pass


def headline_table(df: pd.DataFrame, site: R.Site) -> str:
    rows = []
    for p in R.projects():
        link = f"[{R.project_title(p)}](projects/{p}/README.md)"
        h = S.home_headline(df, p)
        if h is None:
            note = "no counted result yet" if len(df[df.project == p]) else "not yet measured"
            rows.append([link, note, "—", "—", "—", "—", "—", "—"])
            continue
        c = h.candidate
        src = f"projects/{p}/results/{c['run_id']}.jsonl"
        value = f"[{R.fmt_value(c['value'])} {c['metric_unit']}]({src})"
        if h.baseline is None:
            ratio = f"no {h.meta.get('headline_baseline')} in the run"
        else:
            ratio = f"{R.fmt_ratio(h.ratio)} {R.md_escape(h.baseline['label'])}" + (" (slower)" if h.loses else "")
            if h.best_baseline is not None:
                ratio += (f"; {R.fmt_ratio(h.best_ratio)} {R.md_escape(h.best_baseline['label'])} (fastest baseline"
                          + (", slower)" if h.loses_to_best else ")"))
        name = f"{h.bench}: {R.md_escape(c['label'])}" + (" (stale: sources changed since)" if h.stale else "")
        rows.append([link, name, value, ratio, RL.text(RL.place(c)), c["gpu_name"], c["date"],
                     site.commit_link(c["git_sha"])])
    return table(["Project", "Headline", "Result", "vs baseline (same run)", "Roofline", "GPU", "Date", "Commit"],
                 rows, "llrlllll")


def splice(text: str, block: str, where: str = "README.md") -> str:
    """``text`` with everything between START and END replaced by ``block``."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ReadmeError(f"{where}: needs exactly one {START} followed by one {END}")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{block.strip()}\n{END}{tail}"


def update(path: Path, df: pd.DataFrame, site: R.Site, check: bool = False) -> bool:
    """Rewrite the table in place; with ``check``, only say whether it is current. Returns True if current."""
    text = path.read_text(encoding="utf-8")
    new = splice(text, headline_table(df, site), str(path))
    if new == text:
        return True
    if not check:
        path.write_text(new, encoding="utf-8")
    return False
