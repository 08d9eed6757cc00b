"""Draws the online bench's latency–throughput frontier from stamped records into evidence/, with the site's own
chart (gpufolio.site.charts.frontier: TTFT and TPOT, p50 and p99, against the output tokens/s reached, one point
per arrival rate, one line per variant, the saturation point starred). No number is typed here.

    python -m gpufolio_projects.inference_engine.lab.plot_online [--run RUN_ID] [--records GLOB] [--out PNG]
        reads projects/inference_engine/results/*.jsonl, writes evidence/<run date>-online-latency.png
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)


def online_records(run: str | None, pattern: str) -> list[dict]:
    """The ok ``online`` records of one run: the given one, else the latest with any."""
    recs = []
    for path in sorted(glob.glob(pattern)):
        with open(path) as f:
            recs += [r for r in map(json.loads, f) if r["bench"] == "online" and r["status"] == "ok"]
    run = run or max((r["run_id"] for r in recs), default=None)
    return [r for r in recs if r["run_id"] == run]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpufolio_projects.inference_engine.lab.plot_online")
    ap.add_argument("--run")
    ap.add_argument("--records", default=os.path.join(PROJECT, "results", "*.jsonl"))
    ap.add_argument("--out", help="default: evidence/<run date>-online-latency.png")
    args = ap.parse_args(argv)
    from gpufolio import store
    from gpufolio.site import charts, project
    from gpufolio.site.records import variant_label

    recs = online_records(args.run, args.records)
    if not recs:
        print(f"error: no ok online records{' of run ' + args.run if args.run else ''} in {args.records}",
              file=sys.stderr)
        return 2
    rows = store.frame(recs)
    rows["label"] = [variant_label(r, v) for r, v in zip(rows.record, rows.variant)]
    run, gpu = recs[0]["run_id"], recs[0]["env"]["gpu"]["name"]
    # 20261202T233704Z-020a6d: the plot is named by its run's date, like all evidence
    out = args.out or os.path.join(PROJECT, "evidence", f"{run[:4]}-{run[4:6]}-{run[6:8]}-online-latency.png")
    charts.frontier(Path(out), project.frontier_points(rows, "rate"), recs[0]["metric"]["unit"],
                    f"online: Poisson arrivals, run {run}, {gpu}")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
