"""A note's before/after numbers, read from the store's long-format frame (never typed into the note).

A note's ``results`` names one run of one bench and two variants of it: ``before`` (upstream's implementation,
a baseline) and ``after`` (the patch, a candidate). They are paired only within that run, on the same params and
the same GPU — the rule every comparison on the site follows.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _matches(params: Mapping[str, Any], subset: Mapping[str, Any]) -> bool:
    return all(k in params and str(params[k]) == str(v) for k, v in subset.items())


def pairs(frame, res: Mapping[str, Any], headline_only: bool = False):
    """One row per params of the run: before/after headline values, their unit, the ratio after/before.

    Columns: params_key, params, gpu_name, metric_name, metric_unit, higher_is_better, before, after, speedup,
    correctness_passed (both sides). Empty when the run is not in the frame."""
    import pandas as pd

    cols = ["params_key", "params", "gpu_name", "metric_name", "metric_unit", "higher_is_better", "before", "after",
            "speedup", "correctness_passed"]
    if frame is None or not len(frame) or not res.get("run_id"):
        return pd.DataFrame(columns=cols)
    rows = frame[(frame["run_id"] == res["run_id"]) & (frame["project"] == res.get("project"))
                 & (frame["bench"] == res.get("bench")) & (frame["status"] == "ok") & frame["is_headline_metric"].astype(bool)]
    if headline_only and res.get("headline_params"):
        rows = rows[rows["params"].map(lambda p: _matches(p, res["headline_params"]))]
    before = rows[rows["variant"] == res.get("before")]
    after = rows[rows["variant"] == res.get("after")]
    keys = ["params_key", "gpu_name", "metric_name"]
    merged = before.merge(after, on=keys, suffixes=("_b", "_a"))
    out = []
    for _, r in merged.iterrows():
        hib = bool(r["higher_is_better_a"])
        b, a = float(r["value_b"]), float(r["value_a"])
        # speedup > 1 means the patch is better whichever way the metric points
        speedup = (a / b if hib else b / a) if a and b else None
        out.append({"params_key": r["params_key"], "params": r["params_a"], "gpu_name": r["gpu_name"],
                    "metric_name": r["metric_name"], "metric_unit": r["metric_unit_a"], "higher_is_better": hib,
                    "before": b, "after": a, "speedup": speedup,
                    "correctness_passed": bool(r["correctness_passed_b"]) and bool(r["correctness_passed_a"])})
    return pd.DataFrame(out, columns=cols)


def headline(frame, res: Mapping[str, Any]):
    """The pair the contributions table quotes: ``headline_params`` if given, else the run's first shape; or None."""
    table = pairs(frame, res, headline_only=True)
    if table.empty:
        return None
    return table.iloc[0].to_dict()
