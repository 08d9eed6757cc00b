"""The scaling curve from the ``scaling`` bench's records: efficiency and MFU against the GPU count, one line per
strategy, weak and strong scaling side by side, one figure per model.

    python -m gpufolio_projects.fsdp_mfu.lab.plot_scaling --out projects/fsdp_mfu/results \\
        [--records projects/fsdp_mfu/results/<run>.jsonl ...]   # default: every record of the project

A line is one model, one kind of scaling and one strategy: the weak points at per-rank batch B, or the strong
points at global batch G, with the one-GPU point of the same batch. Efficiency is against the line's smallest
measured GPU count (scaling.efficiency); HSDP, which only exists at 8 GPUs, is read against FSDP2's line (on one
sharding group the two are the same thing). Where one point was measured in several runs the newest counts.
``loss_vs_base`` is the difference of the mean loss after the first LOSS_STEPS steps from the base point's:
on a strong-scaling line every point trains on the same tokens, so it must be rounding-sized.
"""
from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from ..scaling import STRATEGIES, efficiency
from ..scaling_bench import LOSS_STEPS

LOSS = f"loss_step{LOSS_STEPS}"


def _metrics(rec: dict) -> dict[str, float]:
    out = {m["name"]: m["value"] for m in rec.get("extra_metrics") or []}
    if rec.get("metric"):
        out[rec["metric"]["name"]] = rec["metric"]["value"]
    return out


def _line_of(params: dict) -> tuple[str, str, int] | None:
    """(model, scaling, batch) of a point's line; None for the base point, which belongs to two."""
    if params["scaling"] == "base":
        return None
    return params["model"], params["scaling"], params["B"] if params["scaling"] == "weak" else params["G"]


def table(records: Iterable[dict]) -> list[dict]:
    """One row per measured point: model, scaling, batch, strategy, gpus, tok_s, mfu, efficiency, loss_vs_base."""
    newest: dict[tuple, dict] = {}
    for r in records:
        if (r.get("project"), r.get("bench"), r.get("status")) != ("fsdp_mfu", "scaling", "ok"):
            continue
        key = (r["variant"], tuple(sorted(r["params"].items())))
        if key not in newest or r["created_at"] > newest[key]["created_at"]:
            newest[key] = r
    points = []
    for r in newest.values():
        p, m = r["params"], _metrics(r)
        lines = [_line_of(p)] if p["scaling"] != "base" else [(p["model"], "weak", p["B"]), (p["model"], "strong", p["G"])]
        for model, scaling, batch in lines:
            points.append({"model": model, "scaling": scaling, "batch": batch, "strategy": r["variant"],
                           "gpus": p["gpus"], "tok_s": m["tok_s"], "mfu": m.get("mfu"), "loss": m.get(LOSS)})
    rows = []
    for row in points:
        line_strategy = "fsdp2" if row["strategy"] == "hsdp" else row["strategy"]
        same_line = [q for q in points if (q["model"], q["scaling"], q["batch"], q["strategy"]) ==
                     (row["model"], row["scaling"], row["batch"], line_strategy)]
        base = min(same_line, key=lambda q: q["gpus"], default=None)
        if base is None:
            continue  # no point of its line to scale from
        rows.append(dict(row, base_gpus=base["gpus"],
                         efficiency=efficiency(row["tok_s"], row["gpus"], base["tok_s"], base["gpus"]),
                         loss_vs_base=None if row["loss"] is None or base["loss"] is None else row["loss"] - base["loss"]))
    return sorted(rows, key=lambda q: (q["model"], q["scaling"], q["batch"], STRATEGIES.index(q["strategy"]),
                                       q["gpus"]))


def draw(rows: list[dict], model: str, path: Path) -> Path:
    """Efficiency (top) and MFU (bottom) against GPUs, weak (left) and strong (right), a line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mine = [r for r in rows if r["model"] == model]
    if not mine:
        raise ValueError(f"no measured scaling point for {model}")
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True, squeeze=False)
    for col, scaling in enumerate(("weak", "strong")):
        for strategy in STRATEGIES:
            pts = sorted((r for r in mine if r["scaling"] == scaling and r["strategy"] == strategy),
                         key=lambda r: r["gpus"])
            if not pts:
                continue
            style = {"marker": "o", "label": strategy, "linestyle": "-" if len(pts) > 1 else "none"}
            axes[0][col].plot([r["gpus"] for r in pts], [100 * r["efficiency"] for r in pts], **style)
            axes[1][col].plot([r["gpus"] for r in pts], [r["mfu"] for r in pts], **style)
        batch = sorted({r["batch"] for r in mine if r["scaling"] == scaling})
        what = "per-rank batch" if scaling == "weak" else "global batch"
        axes[0][col].set_title(f"{model}, {scaling} scaling ({what} {', '.join(map(str, batch)) or '-'})")
        axes[0][col].axhline(100, color="grey", linewidth=0.8, linestyle=":")
        axes[0][col].set_ylabel("scaling efficiency (%)")
        axes[1][col].set_ylabel("MFU per GPU (% of datasheet bf16 peak)")
        axes[1][col].set_xlabel("GPUs")
        axes[1][col].set_xscale("log", base=2)
        axes[1][col].set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
        for ax in (axes[0][col], axes[1][col]):
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[1]:
                ax.legend(loc="lower left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    from gpufolio import store

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", nargs="*", type=Path, help="results files (default: the whole store)")
    p.add_argument("--out", type=Path, required=True, help="folder for scaling_<model>.png")
    a = p.parse_args(argv)
    rows = table(store.load_records(paths=a.records or None))
    if not rows:
        p.error("no ok record of the scaling bench in these results: nothing to draw")
    for model in sorted({r["model"] for r in rows}):
        print(draw(rows, model, a.out / f"scaling_{model}.png"))
    for r in rows:
        loss = "" if r["loss_vs_base"] is None else f", loss - base {r['loss_vs_base']:+.4f}"
        print(f"{r['model']} {r['scaling']} {r['strategy']} x{r['gpus']}: {r['tok_s']:,.0f} tok/s, "
              f"MFU {r['mfu']:.1f}%, efficiency {100 * r['efficiency']:.1f}% (vs {r['base_gpus']} GPU){loss}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
