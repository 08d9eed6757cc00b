"""PNG charts (matplotlib, Agg: no display, no fonts fetched): bars at the headline config, lines across
sizes, a roofline against the run's measured ceilings and the datasheet, bandwidth bars, progress over runs.

Each function takes frame rows already chosen by the caller (one run, one GPU) and a path to write.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from . import records as R  # noqa: E402

# NVIDIA H200 datasheet (dense): the peaks a measured ceiling is read against. Measured ceilings come from
# each record's env.ceilings (a copy kernel and cuBLAS in the same run), never from here.
DATASHEET = {"source": "NVIDIA H200 datasheet", "bf16_tflops": 989.0, "fp32_tflops": 67.0, "hbm_gbps": 4800.0}

CANDIDATE = "#3949ab"
BASELINE = "#9e9e9e"
LOSER = "#e53935"
PALETTE = ["#3949ab", "#00897b", "#f4511e", "#8e24aa", "#c0ca33", "#6d4c41", "#1e88e5", "#d81b60", "#43a047",
           "#fb8c00", "#5e35b1", "#00acc1"]

plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 110, "font.size": 9, "axes.spines.top": False,
                     "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "svg.hashsalt": "gpufolio"})


def _save(fig, path: Path, left: float = 0.09, right: float = 0.97, bottom: float | None = None) -> Path:
    """Fixed margins, not tight_layout: tight_layout draws every figure twice, and charts dominate render time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    h = fig.get_figheight()
    fig.subplots_adjust(left=left, right=right, bottom=bottom if bottom is not None else min(0.45, 0.55 / h),
                        top=1 - min(0.4, (0.18 + 0.17 * _title_lines(fig)) / h))
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
    return path


def _title_lines(fig) -> int:
    return max(1, max((ax.get_title(loc="left").count("\n") + 1 for ax in fig.axes), default=1))


def _wrap(title: str, width: int = 88) -> str:
    """Titles carry params and GPU names of any length: wrap rather than run off the figure."""
    return textwrap.fill(title, width)


def slim(rows: pd.DataFrame, x: str | None = None) -> pd.DataFrame:
    """Only what a chart draws: small to pickle for a worker, and a stable key for the chart cache."""
    cols = ["variant", "role", "label", "value", "metric_unit", "higher_is_better", "status", "is_headline_metric"]
    out = rows[cols].reset_index(drop=True).copy()
    if x is not None:
        out["x"] = [p.get(x) for p in rows.params]
    return out


def _bar_labels(labels) -> list[str]:
    """Variant labels can be sentences ("our engine (paged KV, continuous batching, CUDA graphs)"): wrap them."""
    return [textwrap.fill(str(t), 30) for t in labels]


def _label_margin(labels) -> float:
    """Left margin for horizontal bars: room for the longest (wrapped) label line at 8 pt."""
    longest = max((len(line) for t in labels for line in str(t).split("\n")), default=4)
    return min(0.5, 0.04 + 0.0105 * longest)


def headline_bars(path: Path, rows: pd.DataFrame, base_name: str | None, title: str) -> Path:
    """Horizontal bars, one per variant at one config of one run; the baseline grey, losers red."""
    rows = rows[(rows.status == "ok") & rows.is_headline_metric.astype(bool)].copy()
    higher = bool(rows.iloc[0].higher_is_better)
    rows = rows.sort_values("value", ascending=higher)
    base = rows[rows.variant == base_name]
    base_value = base.iloc[0].value if len(base) else None
    colors = []
    for r in rows.itertuples():
        if r.role == "baseline":
            colors.append(BASELINE)
        elif base_value is not None and (R.speedup(r.value, base_value, higher) or 0) < 1:
            colors.append(LOSER)
        else:
            colors.append(CANDIDATE)
    rows["label"] = _bar_labels(rows.label)
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 0.15 * rows.label.str.count("\n").sum() + 1.2))
    ax.barh(rows.label, rows.value, color=colors)
    unit = rows.iloc[0].metric_unit
    for y, r in enumerate(rows.itertuples()):
        text = f" {R.fmt_value(r.value)}"
        if base_value is not None and r.role == "candidate":
            text += f"  ({R.fmt_ratio(R.speedup(r.value, base_value, higher))})"
        ax.text(r.value, y, text, va="center", fontsize=8)
    if base_value is not None:
        ax.axvline(base_value, color=BASELINE, ls="--", lw=1)
    ax.set_xlabel(f"{unit} ({'higher' if higher else 'lower'} is better)")
    ax.set_title(_wrap(title, int((0.95 - _label_margin(rows.label)) * 110)), fontsize=9, loc="left")
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, rows.value.max() * 1.3)
    return _save(fig, path, left=_label_margin(rows.label), right=0.95)


def variant_lines(path: Path, rows: pd.DataFrame, x: str, title: str) -> Path:
    """The headline metric against one param, a line per variant (baselines dashed)."""
    rows = rows[(rows.status == "ok") & rows.is_headline_metric.astype(bool)].copy()
    fig, ax = plt.subplots(figsize=(8.5, 4))  # room on the right for long variant labels in the legend
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rows.x)
    for i, (_, g) in enumerate(sorted(rows.groupby("variant"), key=lambda t: t[0])):
        g = g.sort_values("x")
        base = g.iloc[0].role == "baseline"
        ax.plot(g.x if numeric else g.x.astype(str), g.value, marker="o", ms=4, label=g.iloc[0].label,
                color=BASELINE if base and i == 0 else PALETTE[i % len(PALETTE)], ls="--" if base else "-")
    if numeric and rows.x.max() / max(rows.x.min(), 1e-9) >= 8:
        ax.set_xscale("log", base=2)
    if bool(rows.iloc[0].higher_is_better):
        ax.set_ylim(bottom=0)  # a throughput axis that starts at zero does not inflate differences
    ax.set_xlabel(x)
    ax.set_ylabel(rows.iloc[0].metric_unit)
    ax.set_title(_wrap(title, 70), fontsize=9, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path, right=0.66, bottom=0.13)


def roofline(path: Path, points: pd.DataFrame, ceilings: dict, gpu: str, title: str) -> Path:
    """``points``: label, ai (FLOP/byte), tflops, role. Roofs: measured (solid) and datasheet (dotted)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ai_min = min(points.ai.min() / 4, 1.0)
    ai_max = max(points.ai.max() * 4, 1000.0)
    xs = [ai_min * (ai_max / ai_min) ** (i / 200) for i in range(201)]
    roofs = []
    bw = ceilings.get("copy_gbps")
    for key, name in (("bf16_tflops", "bf16"), ("fp32_tflops", "fp32")):
        if ceilings.get(key) and bw:
            roofs.append((f"measured {name} ({R.fmt_value(ceilings[key])} TFLOP/s, copy {R.fmt_value(bw)} GB/s)",
                          ceilings[key], bw, "-"))
    if "H200" in (gpu or ""):
        roofs.append((f"{DATASHEET['source']}: bf16 {DATASHEET['bf16_tflops']:.0f} TFLOP/s, "
                      f"{DATASHEET['hbm_gbps'] / 1000:.1f} TB/s", DATASHEET["bf16_tflops"], DATASHEET["hbm_gbps"], ":"))
        roofs.append((f"{DATASHEET['source']}: fp32 {DATASHEET['fp32_tflops']:.0f} TFLOP/s",
                      DATASHEET["fp32_tflops"], DATASHEET["hbm_gbps"], ":"))
    for i, (name, peak, gbps, ls) in enumerate(roofs):
        ax.plot(xs, [min(peak, a * gbps / 1000) for a in xs], ls=ls, color="#616161" if ls == ":" else "#212121",
                lw=1, label=name, alpha=0.9 - 0.15 * i)
    for i, r in enumerate(points.itertuples()):
        ax.scatter(r.ai, r.tflops, s=28, zorder=3, color=BASELINE if r.role == "baseline" else PALETTE[i % len(PALETTE)],
                   marker="s" if r.role == "baseline" else "o", label=r.label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte, minimum traffic)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(_wrap(title), fontsize=9, loc="left")
    ax.legend(fontsize=6.5, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path, right=0.62, bottom=0.13)


def bandwidth_bars(path: Path, rows: pd.DataFrame, copy_gbps: float | None, gpu: str, title: str) -> Path:
    """Memory-bound benches: achieved GB/s per variant against the measured copy bandwidth and the datasheet."""
    rows = rows.sort_values("value").assign(label=lambda r: _bar_labels(r.label))
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 0.15 * rows.label.str.count("\n").sum() + 1.9))
    ax.barh(rows.label, rows.value, color=[BASELINE if r == "baseline" else CANDIDATE for r in rows.role])
    top = rows.value.max()
    if copy_gbps:
        ax.axvline(copy_gbps, color="#212121", lw=1, label=f"measured copy {R.fmt_value(copy_gbps)} GB/s")
        top = max(top, copy_gbps)
    if "H200" in (gpu or ""):
        ax.axvline(DATASHEET["hbm_gbps"], color="#616161", ls=":", lw=1,
                   label=f"{DATASHEET['source']} {DATASHEET['hbm_gbps']:.0f} GB/s")
        top = max(top, DATASHEET["hbm_gbps"])
    for y, r in enumerate(rows.itertuples()):
        pct = f" ({100 * r.value / copy_gbps:.0f}% of copy)" if copy_gbps else ""
        ax.text(r.value, y, f" {R.fmt_value(r.value)}{pct}", va="center", fontsize=8)
    ax.set_xlim(0, top * 1.3)
    ax.set_xlabel("GB/s")
    ax.set_title(_wrap(title, int((0.95 - _label_margin(rows.label)) * 110)), fontsize=9, loc="left")
    ax.grid(axis="y", visible=False)
    fig.legend(fontsize=7, frameon=False, loc="lower left", bbox_to_anchor=(0.02, 0.0), ncol=2)
    return _save(fig, path, left=_label_margin(rows.label), right=0.95, bottom=0.95 / fig.get_figheight())


def progress(path: Path, series: pd.DataFrame, unit: str, title: str) -> Path:
    """``series``: created_at, value, line (e.g. "best candidate, NVIDIA H200"), short sha. One line per GPU
    model and role, so numbers from different GPUs are never joined by a line."""
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for i, (line, g) in enumerate(sorted(series.groupby("line"), key=lambda t: t[0])):
        g = g.sort_values("created_at")
        t = pd.to_datetime(g.created_at, utc=True)
        ax.plot(t, g.value, marker="o", ms=4, label=line, color=PALETTE[i % len(PALETTE)],
                ls="--" if "baseline" in line else "-")
        for tx, v, sha in zip(t, g.value, g.sha):
            ax.annotate(sha, (tx, v), textcoords="offset points", xytext=(0, 5), fontsize=6, ha="center")
    ax.set_ylabel(unit)
    ax.set_title(_wrap(title, 70), fontsize=9, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    # minticks below the default 5: a few hours of runs has too few hour ticks, and at minute steps too many for
    # maxticks, so the locator found no interval at all (and warned) for every same-day history.
    locator = mdates.AutoDateLocator(minticks=3, maxticks=7)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.margins(x=0.08, y=0.15)
    times = pd.to_datetime(series.created_at, utc=True)
    if times.max() - times.min() < pd.Timedelta(minutes=1):
        # One run (or runs seconds apart): a zero-width date range leaves the date locator nothing to divide.
        ax.set_xlim(times.min() - pd.Timedelta(hours=1), times.max() + pd.Timedelta(hours=1))
    return _save(fig, path, right=0.7, bottom=0.13)
