"""Draws the online bench's latency–throughput plot from stamped records (no number is typed here):
TTFT and TPOT (p50 and p99) against the output tokens/s the engine reached, one point per arrival rate.
The site's results-chart draws a bench's headline metric only, so this plot is made here, from the records.

    python projects/inference_engine/evidence/plot_online.py [--run RUN_ID] [--records GLOB]
        reads projects/inference_engine/results/*.jsonl, writes evidence/online_latency.png
"""
from __future__ import annotations

import argparse
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)


def online_records(run: str | None, pattern: str) -> list[dict]:
    """The ok ``online`` records of one run (the given one, else the latest with any), sorted by rate."""
    recs = []
    for path in sorted(glob.glob(pattern)):
        with open(path) as f:
            recs += [r for r in map(json.loads, f) if r["bench"] == "online" and r["status"] == "ok"
                     and r["variant"] == "engine"]
    if not recs:
        raise SystemExit("no ok online records in results/")
    run = run or max(r["run_id"] for r in recs)
    recs = [r for r in recs if r["run_id"] == run]
    return sorted(recs, key=lambda r: r["params"]["rate"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run")
    ap.add_argument("--records", default=os.path.join(PROJECT, "results", "*.jsonl"))
    ap.add_argument("--out", default=os.path.join(HERE, "online_latency.png"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = online_records(args.run, args.records)
    extra = [{m["name"]: m["value"] for m in r["extra_metrics"]} for r in recs]
    tput = [r["metric"]["value"] for r in recs]
    rates = [r["params"]["rate"] for r in recs]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, what in zip(axes, ("ttft", "tpot")):
        for pct, style in (("p50", "o-"), ("p99", "s--")):
            ax.plot(tput, [e[f"{what}_{pct}"] for e in extra], style, label=f"{what.upper()} {pct}")
        for x, e, rate in zip(tput, extra, rates):
            ax.annotate(f"{rate:g} req/s", (x, e[f"{what}_p50"]), textcoords="offset points", xytext=(4, -12),
                        fontsize=8)
        ax.set_xlabel("output tokens/s (whole run)")
        ax.set_ylabel("ms")
        ax.set_title({"ttft": "time to first token", "tpot": "time per output token"}[what])
        ax.grid(alpha=0.3)
        ax.legend()
    r0 = recs[0]
    fig.suptitle(f"online: Poisson arrivals, {r0['params']['num_requests']} requests per rate, "
                 f"run {r0['run_id']}, {r0['env']['gpu']['name']}", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(args.out)


if __name__ == "__main__":
    main()
