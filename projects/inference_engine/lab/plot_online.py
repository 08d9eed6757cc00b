"""Draws the online bench's latency–throughput plot from stamped records (no number is typed here):
TTFT and TPOT (p50 and p99) against the output tokens/s the engine reached, one point per arrival rate, one line
per variant (in process, and through the HTTP server when the run has it). The saturation point, marked, is the
lowest rate whose tokens/s reaches 95% of the highest the variant reached in the sweep, when a higher rate follows
it: past it more offered load only adds queueing. The site's results-chart draws a bench's headline metric only, so this plot is made here.

    python -m gpufolio_projects.inference_engine.lab.plot_online [--run RUN_ID] [--records GLOB]
        reads projects/inference_engine/results/*.jsonl, writes evidence/<run date>-online-latency.png
"""
from __future__ import annotations

import argparse
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)


VARIANTS = {"engine": "in process", "engine_http": "HTTP server"}  # variant -> legend label
SATURATION_FRACTION = 0.95


def online_records(run: str | None, pattern: str) -> dict[str, list[dict]]:
    """The ok ``online`` records of one run (the given one, else the latest with any): variant -> records by rate."""
    recs = []
    for path in sorted(glob.glob(pattern)):
        with open(path) as f:
            recs += [r for r in map(json.loads, f) if r["bench"] == "online" and r["status"] == "ok"
                     and r["variant"] in VARIANTS]
    if not recs:
        raise SystemExit("no ok online records in results/")
    run = run or max(r["run_id"] for r in recs)
    by_variant: dict[str, list[dict]] = {}
    for r in sorted((r for r in recs if r["run_id"] == run), key=lambda r: r["params"]["rate"]):
        by_variant.setdefault(r["variant"], []).append(r)
    return by_variant


def saturation_index(tput: list[float]) -> int:
    """The first point (in rate order) whose throughput reaches SATURATION_FRACTION of the sweep's highest."""
    top = max(tput)
    return next(i for i, t in enumerate(tput) if t >= SATURATION_FRACTION * top)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run")
    ap.add_argument("--records", default=os.path.join(PROJECT, "results", "*.jsonl"))
    ap.add_argument("--out", help="default: evidence/<run date>-online-latency.png")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_variant = online_records(args.run, args.records)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, what in zip(axes, ("ttft", "tpot")):
        for variant, recs in by_variant.items():
            extra = [{m["name"]: m["value"] for m in r["extra_metrics"]} for r in recs]
            tput = [r["metric"]["value"] for r in recs]
            line = "-" if variant == "engine" else ":"
            for pct, marker in (("p50", "o"), ("p99", "s")):
                ax.plot(tput, [e[f"{what}_{pct}"] for e in extra], marker + line,
                        label=f"{what.upper()} {pct}, {VARIANTS[variant]}")
            for x, e, r in zip(tput, extra, recs):
                ax.annotate(f"{r['params']['rate']:g} req/s", (x, e[f"{what}_p50"]), textcoords="offset points",
                            xytext=(4, -12), fontsize=7)
            sat = saturation_index(tput)
            if sat == len(tput) - 1:
                continue  # still rising at the sweep's last rate: no saturation seen
            ax.axvline(tput[sat], color="grey", linestyle=line, alpha=0.6)
            ax.annotate(f"saturation ({VARIANTS[variant]})", (tput[sat], ax.get_ylim()[1]), rotation=90,
                        va="top", ha="right", fontsize=7, color="grey")
        ax.set_xlabel("output tokens/s (whole run)")
        ax.set_ylabel("ms")
        ax.set_title({"ttft": "time to first token", "tpot": "time per output token"}[what])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    r0 = next(iter(by_variant.values()))[0]
    fig.suptitle(f"online: Poisson arrivals, {r0['params']['num_requests']} requests per rate, "
                 f"run {r0['run_id']}, {r0['env']['gpu']['name']}", fontsize=10)
    fig.tight_layout()
    run = r0["run_id"]  # 20261202T233704Z-020a6d: the plot is named by its run's date, like all evidence
    out = args.out or os.path.join(PROJECT, "evidence", f"{run[:4]}-{run[4:6]}-{run[6:8]}-online-latency.png")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main()
