"""PNG charts (matplotlib, Agg: no display, no fonts fetched): bars at the headline config, lines across
sizes, a roofline against the run's measured ceilings and the datasheet, bandwidth bars, progress over runs, and a
serving bench's latency-throughput frontier.

Each function takes frame rows already chosen by the caller (one run, one GPU) and a path to write. Every PNG is
drawn at twice its display resolution (the pages mark it ``2x``, so it is sharp on high-density screens); a
legend sits below its axes, never cut at the image edge, and holds at most ``MAX_LEGEND`` entries (the rest of
the lines are drawn in grey under one entry).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
import pandas as pd  # noqa: E402

from . import records as R  # noqa: E402
from .roofline import DATASHEETS  # noqa: E402

# The H200 datasheet peaks a measured ceiling is read against (roofline.DATASHEETS: the one copy of them).
DATASHEET = DATASHEETS["NVIDIA H200"]

CANDIDATE = "#3949ab"
BASELINE = "#9e9e9e"
LOSER = "#e53935"
PALETTE = ["#3949ab", "#00897b", "#f4511e", "#8e24aa", "#c0ca33", "#6d4c41", "#1e88e5", "#d81b60", "#43a047",
           "#fb8c00", "#5e35b1", "#00acc1"]

DISPLAY_DPI = 110  # the size a chart is shown at; savefig draws twice as many pixels (srcset 2x on the page)
MAX_LEGEND = 8
OTHERS = "#bdbdbd"
BASELINE_LINES = ["#757575", "#a1887f", "#ef6c00", "#00838f", "#ad1457", "#9e9d24", "#5d4037", "#546e7a"]

plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 2 * DISPLAY_DPI, "font.size": 9, "axes.spines.top": False,
                     "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "svg.hashsalt": "gpufolio"})


def _save(fig, path: Path, left: float = 0.09, right: float = 0.97, bottom: float | None = None) -> Path:
    """Fixed margins, not tight_layout: tight_layout draws every figure twice, and charts dominate render time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    h = fig.get_figheight()
    fig.subplots_adjust(left=left, right=right, bottom=bottom if bottom is not None else min(0.45, 0.55 / h),
                        top=1 - min(0.4, (0.18 + 0.17 * _title_lines(fig)) / h))
    # zlib level 1: a 2x chart compresses in a third of the default level's time, for a few percent more bytes
    fig.savefig(path, format="png", metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    plt.close(fig)
    return path


def _title_lines(fig) -> int:
    return max(1, max((ax.get_title(loc="left").count("\n") + 1 for ax in fig.axes), default=1))


def _wrap(title: str, width: int = 88) -> str:
    """Titles carry params and GPU names of any length: wrap rather than run off the figure."""
    return textwrap.fill(title, width)


def _legend_rows(labels: list[str], ncol: int = 2, width: int = 48) -> int:
    """Text lines a legend below the axes takes (labels wrapped at ``width`` characters, ``ncol`` per row)."""
    heights = [str(t).count("\n") + 1 for t in labels]
    return sum(max(heights[i:i + ncol]) for i in range(0, len(heights), ncol))


def _legend_below(fig, ax, ncol: int = 2, handles: list | None = None) -> None:
    """The axes' legend (or the ``handles`` given) at the foot of the figure, under the x label: the caller
    reserves its height (``_legend_height``) in the figure size and the bottom margin, so it is never cut at the edge."""
    handles, labels = (handles, [h.get_label() for h in handles]) if handles else ax.get_legend_handles_labels()
    if not handles:
        return
    assert len(handles) <= MAX_LEGEND, f"{len(handles)} legend entries (at most {MAX_LEGEND})"
    fig.legend(handles, labels, fontsize=7, frameon=False, ncol=ncol, loc="lower left",
               bbox_to_anchor=(0.01, 0.01), borderaxespad=0.2)


def _legend_height(labels: list[str], ncol: int = 2) -> float:
    return 0.16 * _legend_rows(labels, ncol) + 0.15 if labels else 0.0


def _keep_for_legend(groups: list[tuple[str, pd.DataFrame]], room: int, higher: bool) -> set[str]:
    """The ``room`` candidate variants with the best value anywhere in the chart (the others go grey)."""
    best = {v: (g.value.max() if higher else -g.value.min()) for v, g in groups}
    return set(sorted(best, key=best.get, reverse=True)[:room])


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
    """The headline metric against one param, a line per variant (baselines dashed). At most MAX_LEGEND legend
    entries: the best candidates keep a colour, the rest are grey under one entry. One x value is no line: the
    variants are drawn as bars at it."""
    rows = rows[(rows.status == "ok") & rows.is_headline_metric.astype(bool)].copy()
    if rows.x.nunique() < 2:
        return headline_bars(path, rows, None, title)
    higher = bool(rows.iloc[0].higher_is_better)
    groups = sorted(rows.groupby("variant"), key=lambda t: t[0])
    bases = [v for v, g in groups if g.iloc[0].role == "baseline"]
    cands = [(v, g) for v, g in groups if g.iloc[0].role != "baseline"]
    room = MAX_LEGEND - len(bases)
    keep = {v for v, _ in cands} if len(cands) <= room else _keep_for_legend(cands, room - 1, higher)
    n_other = len(cands) - len([v for v, _ in cands if v in keep])
    labels = [_wrap(g.iloc[0].label, 48) for v, g in groups if v in keep or v in bases]
    labels += [f"other variants ({n_other})"] if n_other else []
    legend_h = _legend_height(labels)
    fig, ax = plt.subplots(figsize=(7.5, 3.4 + legend_h))
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rows.x)
    colour = iter(PALETTE)
    other_labelled = False
    for v, g in groups:
        g = g.sort_values("x")
        xs = g.x if numeric else g.x.astype(str)
        if v in bases:  # dashed, squares, each its own muted colour (five SDPA backends must stay apart)
            ax.plot(xs, g.value, marker="s", ms=4, ls="--", color=BASELINE_LINES[bases.index(v) % len(BASELINE_LINES)],
                    label=_wrap(g.iloc[0].label, 48), zorder=3)
        elif v in keep:
            ax.plot(xs, g.value, marker="o", ms=4, color=next(colour), label=_wrap(g.iloc[0].label, 48), zorder=2)
        else:
            ax.plot(xs, g.value, lw=0.8, color=OTHERS, zorder=1,
                    label=None if other_labelled else f"other variants ({n_other})")
            other_labelled = True
    if numeric and rows.x.max() / max(rows.x.min(), 1e-9) >= 8:
        ax.set_xscale("log", base=2)
    if higher:
        ax.set_ylim(bottom=0)  # a throughput axis that starts at zero does not inflate differences
    ax.set_xlabel(x)
    ax.set_ylabel(rows.iloc[0].metric_unit)
    ax.set_title(_wrap(title, 88), fontsize=9, loc="left")
    _legend_below(fig, ax)
    return _save(fig, path, right=0.97, bottom=(0.55 + legend_h) / fig.get_figheight())


def roofline(path: Path, points: pd.DataFrame, ceilings: dict, gpu: str, title: str) -> Path:
    """``points``: label ("bench: variant"), ai (FLOP/byte), tflops, role. Roofs: measured (solid) and datasheet
    (dotted). One colour per bench (candidates round, baselines square, the best candidate named beside it), so
    the legend lists roofs and benches, not every point."""
    points = points.assign(bench=points.label.str.split(": ", n=1).str[0],
                           variant=points.label.str.split(": ", n=1).str[-1])
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
    benches = sorted(points.bench.unique())
    room = MAX_LEGEND - len(roofs) - int((points.role == "baseline").any())
    named = benches if len(benches) <= room else benches[:room - 1]
    labels = [r[0] for r in roofs] + named + (["other benches"] if len(named) < len(benches) else []) + ["baselines"]
    legend_h = _legend_height(labels)
    fig, ax = plt.subplots(figsize=(7.5, 3.8 + legend_h))
    for i, (name, peak, gbps, ls) in enumerate(roofs):
        ax.plot(xs, [min(peak, a * gbps / 1000) for a in xs], ls=ls, color="#616161" if ls == ":" else "#212121",
                lw=1, label=name, alpha=0.9 - 0.15 * i)
    for i, bench in enumerate(benches):
        g = points[points.bench == bench]
        colour = PALETTE[i % len(PALETTE)] if bench in named else OTHERS
        cand, base = g[g.role != "baseline"], g[g.role == "baseline"]
        label = bench if bench in named else ("other benches" if bench == benches[len(named)] else None)
        ax.scatter(cand.ai, cand.tflops, s=26, zorder=3, color=colour, marker="o", label=label)
        ax.scatter(base.ai, base.tflops, s=30, zorder=3, color=BASELINE, marker="s", edgecolors=colour,
                   label="baselines" if i == 0 and len(base) else None)
        if len(cand):
            top = cand.loc[cand.tflops.idxmax()]
            ax.annotate(textwrap.shorten(str(top.variant), 32), (top.ai, top.tflops), textcoords="offset points",
                        xytext=(-7, -3), ha="right", fontsize=6, color="#212121")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte, minimum traffic)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(_wrap(title), fontsize=9, loc="left")
    _legend_below(fig, ax)
    return _save(fig, path, right=0.97, bottom=(0.55 + legend_h) / fig.get_figheight())


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
    lines = sorted(series.groupby("line"), key=lambda t: t[0])[:MAX_LEGEND]  # roles x GPU models: a few
    legend_h = _legend_height([name for name, _ in lines])
    fig, ax = plt.subplots(figsize=(7.5, 3.2 + legend_h))
    for i, (line, g) in enumerate(lines):
        g = g.sort_values("created_at")
        t = pd.to_datetime(g.created_at, utc=True)
        ax.plot(t, g.value, marker="o", ms=4, label=line, color=PALETTE[i % len(PALETTE)],
                ls="--" if "baseline" in line else "-")
        for tx, v, sha in zip(t, g.value, g.sha):
            ax.annotate(sha, (tx, v), textcoords="offset points", xytext=(0, 5), fontsize=6, ha="center")
    ax.set_ylabel(unit)
    ax.set_title(_wrap(title, 88), fontsize=9, loc="left")
    _legend_below(fig, ax)
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
    return _save(fig, path, right=0.97, bottom=(0.55 + legend_h) / fig.get_figheight())


# A serving bench's records carry these latencies (ms, <latency>_<percentile>) beside their tokens/s; its page
# draws them against the tokens/s reached, one point per offered load (frontier_points in project.py).
FRONTIER_LATENCIES = {"ttft": "time to first token (ms)", "tpot": "time per output token (ms)"}
FRONTIER_PERCENTILES = {"p50": "-", "p99": "--"}  # percentile -> line style
# Saturation: the lowest offered load whose throughput reaches this share of the highest the variant reached,
# when a higher load follows it: past that point more load adds queueing (latency), not throughput.
SATURATION_FRACTION = 0.95


def saturation_index(throughputs: list[float]) -> int | None:
    """The saturation point of one variant's sweep (throughputs in offered-load order); None when the sweep's
    last point is the first to come near its top (still rising: no saturation seen)."""
    top = max(throughputs)
    first = next(i for i, t in enumerate(throughputs) if t >= SATURATION_FRACTION * top)
    return first if first < len(throughputs) - 1 else None


def frontier(path: Path, points: pd.DataFrame, unit: str, title: str) -> Path:
    """``points``: variant, label, x (the offered load), tput (the headline throughput) and any of the
    FRONTIER_LATENCIES x FRONTIER_PERCENTILES columns (a missing column or value leaves that line out). One panel
    per latency, a colour per variant (p50 solid, p99 dashed), the saturation point starred and named by its load."""
    variants = sorted(points.variant.unique())
    room = MAX_LEGEND - len(FRONTIER_PERCENTILES) - 1  # the percentile styles and the saturation star
    handles = [Line2D([], [], color=PALETTE[i % len(PALETTE)], marker="o", ms=4,
                      label=_wrap(str(points[points.variant == v].label.iloc[0]), 48))
               for i, v in enumerate(variants[:room])]
    handles += [Line2D([], [], color="#424242", ls=ls, label=pct) for pct, ls in FRONTIER_PERCENTILES.items()]
    groups = [points[points.variant == v].sort_values("x") for v in variants]
    sats = [saturation_index(list(g.tput)) for g in groups]
    handles.append(Line2D([], [], color="#424242", marker="*", ms=9, ls="",
                          label=f"saturation: first load at {SATURATION_FRACTION:.0%} of the top {unit}"
                          if any(i is not None for i in sats) else f"no saturation: {unit} still rising at the top load"))
    legend_h = _legend_height([h.get_label() for h in handles])
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4 + legend_h))
    for ax, (lat, ylabel) in zip(axes, FRONTIER_LATENCIES.items()):
        drawn = []
        for i, (g, sat) in enumerate(zip(groups, sats)):
            colour = PALETTE[i % len(PALETTE)] if i < room else OTHERS
            for pct, ls in FRONTIER_PERCENTILES.items():
                col = f"{lat}_{pct}"
                if col not in g or g[col].isna().all():
                    continue
                ax.plot(g.tput, g[col], ls=ls, marker="o" if pct == "p50" else "s", ms=3.5, color=colour, zorder=2)
                drawn += list(g[col].dropna())
                if sat is not None and pd.notna(g[col].iloc[sat]):
                    ax.plot(g.tput.iloc[sat], g[col].iloc[sat], marker="*", ms=11, color=colour, mec="#212121",
                            mew=0.6, ls="", zorder=3)
            if lat == "ttft" and "ttft_p50" in g:  # the offered load beside each p50 point, once
                for px, py, load in zip(g.tput, g.ttft_p50, g.x):
                    if pd.notna(py):
                        ax.annotate(f"{load:g}/s", (px, py), textcoords="offset points", xytext=(3, -9),
                                    fontsize=6, color=colour)
        if drawn and min(drawn) > 0:
            ax.set_yscale("log")  # queueing past saturation lifts latency by orders of magnitude
            plain = mticker.FuncFormatter(lambda v, _: f"{v:g}")
            ax.yaxis.set_major_formatter(plain)
            # within one decade the minor ticks are the only labels; across several they would crowd
            ax.yaxis.set_minor_formatter(plain if max(drawn) / min(drawn) < 10 else mticker.NullFormatter())
        ax.set_xlim(left=0)
        ax.set_xlabel(f"achieved {unit}")
        ax.set_ylabel(ylabel)
    axes[0].set_title(_wrap(title, 88), fontsize=9, loc="left")
    _legend_below(fig, axes[0], handles=handles)
    fig.subplots_adjust(wspace=0.32)
    return _save(fig, path, left=0.1, right=0.97, bottom=(0.55 + legend_h) / fig.get_figheight())
