"""The store as the site sees it: one prepared frame, the honesty verdict per record, and small formatters.

``prepare(frame, is_stale)`` adds to ``gpufolio.store.load_frame()``'s long frame:
    quality  None when the record itself is sound (ok, correct, clean tree, full SHA, a GPU), else why not
    reason   the one "counts" verdict: ``quality``, or "another GPU model (...)" when the record is sound but
             not on the portfolio's GPU model (``portfolio_gpu()``); None when it counts
    counts   ``reason is None``: the only filter a table, chart, headline or marker uses for numbers
    stale    the sources behind the record changed since its run (``provenance.StaleCheck``; a badge, still
             counted)
    date     the run's date (YYYY-MM-DD), anchor (the run's anchor on the runs page), label (variant label)
Every page, table and marker reads this one frame, so the rules live in one place.
"""
from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import PROJECTS, project_facts
from ..provenance import SHA_RE

STATUS_REASONS = {
    "failed_correctness": "failed correctness check",
    "dry_run": "dry run (CPU, tiny sizes)",
    "oom": "out of memory",
    "error": "error",
    "timeout": "timed out",
    "skipped": "skipped",
}

NUMERIC = {"counts", "value", "median_ms", "p20_ms", "p80_ms", "min_ms", "max_ms", "n_reps", "line"}
RUNS_PAGE = "runs.md"
NOT_COUNTED_PAGE = "not-counted.md"


def project_page(project: str) -> str:
    return f"projects/{project}.md"


# The GPU model the portfolio's numbers are on when the site configuration (gpufolio.yml, ``config``) does not
# say: its ``gpu`` statement ("one NVIDIA H200") names the model after a count.
DEFAULT_GPU = "NVIDIA H200"
_COUNT_RE = re.compile(r"^(?:one|two|four|eight|a|an|\d+)\s*(?:x|×)?\s+", re.I)


@functools.lru_cache(maxsize=1)
def portfolio_gpu() -> str:
    """The portfolio's GPU model: the model named by the site configuration's GPU statement, else DEFAULT_GPU.
    Records of any other model never count here; they get sections of their own."""
    from .. import store
    from . import config  # late: reading the configuration is only needed here, and costs a YAML parse

    site = config.load(store.repo_root())
    model = getattr(site, "gpu_model", None)  # should the configuration name the model itself one day
    return (model if isinstance(model, str) and model else _COUNT_RE.sub("", (site.gpu or "").strip())) or DEFAULT_GPU


def record_quality(row: Mapping[str, Any]) -> str | None:
    """What is wrong with a record on any GPU; None when it is sound. Order: the worst problem first."""
    status = row["status"]
    if status != "ok":
        return STATUS_REASONS.get(status, status)
    if row["correctness_passed"] is not True:
        return "correctness not checked"
    sha = row["git_sha"]
    if not (isinstance(sha, str) and SHA_RE.match(sha)):
        return "unknown commit"
    if row["git_dirty"] is not False:
        return "dirty tree" if row["git_dirty"] else "tree state unknown"
    if not row["gpu_name"]:
        return "no GPU recorded"
    return None


def other_gpu_reason(gpu_name: str) -> str:
    return f"another GPU model ({gpu_name})"


def reason_not_counted(row: Mapping[str, Any], gpu: str | None = None) -> str | None:
    """Why a record does not count on ``gpu`` (default: the portfolio's); None when it counts."""
    quality = record_quality(row)
    if quality is not None:
        return quality
    if row["gpu_name"] != (gpu or portfolio_gpu()):
        return other_gpu_reason(row["gpu_name"])
    return None


def counted(rows: pd.DataFrame, gpu: str | None = None) -> pd.DataFrame:
    """The rows that count on ``gpu`` (default: the portfolio's): sound records of that GPU model, nothing else.
    Every number on the site comes through here (or through the ``counts`` column, which is this on the
    portfolio's GPU)."""
    if rows.empty:
        return rows
    return rows[rows.quality.isna() & (rows.gpu_name == (gpu or portfolio_gpu()))]


def run_gpu(run: pd.DataFrame) -> str | None:
    """The GPU model a run's numbers are read on: the portfolio's when any sound record of the run is on it,
    else the most common model among its sound records (a run measured elsewhere is its own section)."""
    sound = run[run.quality.isna() & run.gpu_name.notna()]
    if sound.empty:
        return None
    names = sound.gpu_name
    return portfolio_gpu() if (names == portfolio_gpu()).any() else names.value_counts().index[0]


def cell_reason(row: Mapping[str, Any], gpu: str | None) -> str | None:
    """Why one record is not a number in a section about ``gpu``; None when it is."""
    return reason_not_counted(row, gpu) if gpu else record_quality(row)


def run_anchor(run_id: str) -> str:
    return "run-" + re.sub(r"[^a-z0-9_-]", "-", run_id.lower())


def prepare(frame: pd.DataFrame, is_stale: Callable[[str, dict[str, Any]], bool]) -> pd.DataFrame:
    """Add the site's columns. ``is_stale(project, git)``: a ``provenance.StaleCheck`` of the current tree."""
    df = frame.copy()
    if df.empty:
        for col in ("quality", "reason", "counts", "stale", "date", "anchor", "label", "params_text"):
            df[col] = pd.Series(dtype=object)
        return df
    gpu = portfolio_gpu()
    rows = df.to_dict("records")
    quality = [record_quality(r) for r in rows]  # a list: a frame column would hold None as NaN (truthy)
    df["quality"] = quality
    df["reason"] = [q or (None if r["gpu_name"] == gpu else other_gpu_reason(r["gpu_name"]))
                    for q, r in zip(quality, rows)]
    df["counts"] = df.reason.isna()
    df["stale"] = [bool(is_stale(p, {"source_digest": d, "sha": sha, "dirty": dirty}))
                   for p, d, sha, dirty in zip(df.project, df.source_digest, df.git_sha, df.git_dirty)]
    df["date"] = df.created_at.str.slice(0, 10)
    df["anchor"] = df.run_id.map(run_anchor)
    df["label"] = [variant_label(rec, v) for rec, v in zip(df.record, df.variant)]
    df["params_text"] = df.params.map(params_text)
    return _none_for_missing(df)


def _none_for_missing(df: pd.DataFrame) -> pd.DataFrame:
    """pandas 3 stores missing text as NaN (truthy, and "nan" when printed): every non-number column gets None."""
    for col in df.columns:
        if col not in NUMERIC:
            df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df


def records_view(df: pd.DataFrame) -> pd.DataFrame:
    """One row per record (its headline-metric row, or its no-number row)."""
    return df[df.is_headline_metric.astype(bool)]


def bench_meta(df: pd.DataFrame, project: str, bench: str) -> dict:
    """The newest record's bench metadata: the site never imports a project to learn about its benches."""
    rows = df[(df.project == project) & (df.bench == bench)].sort_values("created_at")
    return dict(rows.iloc[-1].record.get("bench_meta") or {}) if len(rows) else {}


def variant_label(record: Mapping[str, Any], variant: str) -> str:
    labels = (record.get("bench_meta") or {}).get("variant_labels") or {}
    return labels.get(variant) or variant


def benches(df: pd.DataFrame, project: str) -> list[str]:
    return sorted(df[df.project == project].bench.unique())


def project_title(project: str) -> str:
    """The TITLE its project.py states (the folder name when it states none)."""
    return project_facts.facts(project).title


def projects() -> tuple[str, ...]:
    return PROJECTS


# ---- matching params ------------------------------------------------------------------------------------------

def norm_value(v: Any) -> str:
    """Compare marker text with record values: 4096 == "4096" == 4096.0, True == "true"."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        f = float(v)
        return str(int(f)) if f.is_integer() else repr(f)
    text = str(v).strip()
    low = text.lower()
    if low in ("true", "false"):
        return low
    try:
        return norm_value(float(text))
    except ValueError:
        return text


def params_match(params: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(k in params and norm_value(params[k]) == norm_value(v) for k, v in wanted.items())


def newest_metric(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows measured in the newest row's headline metric (name and unit): a bench whose headline changed
    (fsdp_mfu's train_step went from tok/s to MFU) must not draw both on one axis across runs."""
    if rows.empty:
        return rows
    last = rows.sort_values("created_at").iloc[-1]
    return rows[(rows.metric_name == last.metric_name) & (rows.metric_unit == last.metric_unit)]


def params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={params[k]}" for k in sorted(params)) or "—"


# ---- formatting -----------------------------------------------------------------------------------------------

def fmt_value(value: float | None) -> str:
    """Three significant figures without scientific notation for the numbers a reader scans."""
    if value is None or pd.isna(value):
        return "—"
    a = abs(value)
    if a >= 1000:
        return f"{value:,.0f}"
    if a >= 100:
        return f"{value:.0f}"
    if a >= 10:
        return f"{value:.1f}"
    if a >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def fmt_ratio(ratio: float | None) -> str:
    return "—" if ratio is None or pd.isna(ratio) else f"{ratio:.2f}×"


def speedup(value: float, baseline: float, higher_is_better: bool) -> float | None:
    """Candidate over baseline, oriented so that > 1 always means the candidate wins."""
    if value is None or baseline is None or pd.isna(value) or pd.isna(baseline) or value <= 0 or baseline <= 0:
        return None
    return value / baseline if higher_is_better else baseline / value


def rel_link(from_page: str, to_path: str) -> str:
    """A link from one docs page to another docs path, as MkDocs resolves it (relative to the source file)."""
    return posixpath.relpath(to_path, posixpath.dirname(from_page) or ".")


def badge(kind: str, text: str, title: str = "") -> str:
    t = f' title="{title}"' if title else ""
    return f'<span class="gf-badge gf-{kind}"{t}>{text}</span>'


def gpu_text(gpu: Mapping[str, Any] | None) -> str:
    """One line for a record's env.gpu; clocks stay on the runs page's raw stamp."""
    if not gpu:
        return "none"
    cc = str(gpu.get("compute_capability") or "").replace(".", "")
    return (f"{gpu.get('name')} ×{gpu.get('count')}, {gpu.get('sm_count')} SMs, {gpu.get('memory_gib')} GiB, "
            f"sm_{cc}, driver {gpu.get('driver')}")


def md_escape(text: Any) -> str:
    """Table-cell safe text: pipes and newlines would break a Markdown table row."""
    return str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


@dataclass(frozen=True)
class Site:
    """Where things go: the docs dir being written, and the repository URL (commit links)."""

    repo_url: str
    branch: str = "main"

    def commit_link(self, sha: str | None) -> str:
        if not (isinstance(sha, str) and SHA_RE.match(sha)):
            return "unknown"
        return f"[`{sha[:7]}`]({self.repo_url.rstrip('/')}/commit/{sha})"

    def blob_url(self, path: str) -> str:
        return f"{self.repo_url.rstrip('/')}/blob/{self.branch}/{path}"
