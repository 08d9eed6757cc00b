"""Draw the linear + cross-entropy trade-off from stamped records: time against peak extra memory, one point
per variant of one run (ours as a line, torch.compile / Liger / eager as labelled points), one panel per token
count the run measured (T = 2d, the headline, and T = d, where every token fits the head).

    python -m gpufolio_projects.fused_kernels.lab.plot_lce RUN_ID   # writes evidence/<run date>-lce-tradeoff.png

Reads projects/fused_kernels/results/*.jsonl only; every number drawn comes from the named run.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
SHAPE = {"d": 4096, "V": 128256, "label_smoothing": 0.0}
TOKENS = (8192, 4096)


def load(run_id: str, T: int) -> list[dict]:
    """(variant, role, time ms, peak extra GiB) of every ok LCE record of the run at SHAPE with T tokens."""
    want = dict(SHAPE, T=T)
    rows = []
    for path in sorted((PROJECT / "results").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if (r["run_id"] != run_id or r["bench"] != "linear_cross_entropy" or r["status"] != "ok"
                    or any(r["params"].get(k) != v for k, v in want.items())):
                continue
            mem = {m["name"]: m["value"] for m in r["extra_metrics"]}.get("peak_extra_mem")
            rows.append({"variant": r["variant"], "role": r["role"], "ms": r["metric"]["value"], "gib": mem,
                         "gpu": r["env"]["gpu"]["name"]})
    if not rows:
        raise SystemExit(f"no ok linear_cross_entropy records of run {run_id} at {want}")
    return rows


def _panel(ax, T: int, rows: list[dict]) -> None:
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    ours = sorted((r for r in rows if r["role"] == "candidate"), key=lambda r: r["gib"])
    ax.plot([r["gib"] for r in ours], [r["ms"] for r in ours], "o-", color="#3949ab", label="ours")
    for r in ours:
        ax.annotate(r["variant"], (r["gib"], r["ms"]), textcoords="offset points", xytext=(5, 4), fontsize=8)
    for r in rows:
        if r["role"] == "baseline":
            ax.plot(r["gib"], r["ms"], "s", color="#9e9e9e")
            ax.annotate(r["variant"], (r["gib"], r["ms"]), textcoords="offset points", xytext=(5, -10), fontsize=8)
    base = {r["variant"]: r for r in rows}
    if "torch_compile" in base:
        ax.axhline(base["torch_compile"]["ms"], color="#e53935", lw=0.8, ls="--", label="torch.compile time")
    if "liger" in base:
        ax.axvline(base["liger"]["gib"], color="#00897b", lw=0.8, ls="--", label="Liger memory")
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ax.set_xticks([t for t in (1, 1.5, 2, 3, 5, 8, 12) if lo <= t <= hi])
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("peak extra memory per call, GiB (log; includes grad_x and grad_W)")
    ax.set_ylabel("forward + backward, ms")
    ax.set_title(f"T = {T} tokens", fontsize=9, loc="left")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")


def plot(run_id: str, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(T, load(run_id, T)) for T in TOKENS]
    fig, axes = plt.subplots(1, len(panels), figsize=(12.0, 4.4))
    for ax, (T, rows) in zip(axes, panels):
        _panel(ax, T, rows)
    fig.suptitle(f"linear + cross-entropy, d=4096 V=128256 bf16, forward + backward — {panels[0][1][0]['gpu']}, "
                 f"run {run_id}", fontsize=10, x=0.01, ha="left")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return out


if __name__ == "__main__":
    run_id = sys.argv[1]  # 20261202T163441Z-1b2f21: the chart is named by its run's date, like all evidence
    print(plot(run_id, PROJECT / "evidence" / f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}-lce-tradeoff.png"))
