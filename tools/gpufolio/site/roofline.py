"""Where a headline sits against the hardware: its run's measured ceiling and the GPU's datasheet peak.

Every headline is placed the same way, in the same words, on every page (``place`` then ``text``):

    memory-bound (GB/s, or only bytes counted)   against the run's copy bandwidth and the datasheet HBM bandwidth
    compute-bound (TFLOP/s, or FLOPs counted)     against the run's cuBLAS rate of the record's dtype and the
                                                  datasheet dense peak of that dtype

The measured ceilings come from each record's env stamp (``env.ceilings``: a copy kernel and cuBLAS timed in the
same run), never from here; the datasheet figures from gpufolio.datasheets, their one table.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..datasheets import DATASHEETS
from . import records as R

# (measured ceiling key, its name, datasheet key, its name) per kind of bound; the only wording used anywhere.
BOUNDS = {
    "memory": ("copy_gbps", "copy bandwidth", "hbm_gbps", "HBM bandwidth"),
    "bf16": ("bf16_tflops", "cuBLAS bf16", "bf16_tflops", "bf16 dense peak"),
    "fp32": ("fp32_tflops", "cuBLAS fp32", "fp32_tflops", "fp32 peak"),
}
CEILINGS_ANCHOR = "ceilings"


@dataclass(frozen=True)
class Place:
    bound: str                 # a BOUNDS key
    achieved: float            # in ``unit``
    unit: str                  # GB/s or TFLOP/s
    measured: float | None     # the run's own ceiling, same unit
    datasheet: float | None    # the GPU model's datasheet peak, same unit
    gpu: str

    @property
    def measured_pct(self) -> float | None:
        return 100 * self.achieved / self.measured if self.measured else None

    @property
    def datasheet_pct(self) -> float | None:
        return 100 * self.achieved / self.datasheet if self.datasheet else None


def _precision(params: Mapping[str, Any]) -> str:
    return "fp32" if str(params.get("dtype", "")).lower() in ("float32", "fp32", "torch.float32") else "bf16"


def place(row: Mapping[str, Any]) -> Place | None:
    """A frame row's place against its ceilings; None when the record counts neither FLOPs nor bytes."""
    rec = row["record"]
    work = rec.get("work") or {}
    ms = row.get("median_ms")
    has_ms = ms is not None and not pd.isna(ms) and ms > 0
    unit = row.get("metric_unit")
    if unit == "GB/s":
        bound, achieved = "memory", row["value"]
    elif unit == "TFLOP/s":
        bound, achieved = _precision(row["params"]), row["value"]
    elif work.get("flops") and has_ms:
        bound, achieved = _precision(row["params"]), work["flops"] / (ms * 1e-3) / 1e12
    elif work.get("bytes") and has_ms:
        bound, achieved = "memory", work["bytes"] / (ms * 1e-3) / 1e9
    else:
        return None
    if achieved is None or pd.isna(achieved):
        return None
    unit = "GB/s" if bound == "memory" else "TFLOP/s"
    key, _, sheet_key, _ = BOUNDS[bound]
    ceilings = (rec.get("env") or {}).get("ceilings") or {}
    gpu = row.get("gpu_name") or ""
    return Place(bound, float(achieved), unit, ceilings.get(key), DATASHEETS.get(gpu, {}).get(sheet_key), gpu)


def text(p: Place | None) -> str:
    """The one wording: "82% of measured copy bandwidth (4,251 GB/s) · 73% of datasheet HBM bandwidth (4,800 GB/s)"."""
    if p is None:
        return "no roofline: the bench counts neither FLOPs nor bytes"
    _, measured_name, _, sheet_name = BOUNDS[p.bound]
    if not p.measured:
        parts = [f"measured {measured_name} not stamped"]
    elif p.measured_pct > 100:  # a ceiling stamped under other conditions than the case: say so, never "106%"
        parts = [f"above the run's stamped {measured_name} ({R.fmt_value(p.measured)} {p.unit}); "
                 "compare with the same run's baseline"]
    else:
        parts = [f"{p.measured_pct:.0f}% of measured {measured_name} ({R.fmt_value(p.measured)} {p.unit})"]
    parts.append(f"{p.datasheet_pct:.0f}% of datasheet {sheet_name} ({R.fmt_value(p.datasheet)} {p.unit})"
                 if p.datasheet else f"no datasheet for {p.gpu or 'this GPU'}")
    return " · ".join(parts)


def ceilings_rows(df: pd.DataFrame, gpu: str, runs: list[str]) -> list[list[str]]:
    """Rows of a GPU model's ceilings table: each named run's measured ceilings, the range over every run that
    counts on that model, and the datasheet."""
    mine = R.counted(R.records_view(df), gpu)

    def stamp(rows: pd.DataFrame) -> dict[str, float]:
        c = (rows.iloc[0].record.get("env") or {}).get("ceilings") or {}
        return {k: c.get(k) for k in ("copy_gbps", "bf16_tflops", "fp32_tflops")}

    out = []
    for run_id in runs:
        run = mine[mine.run_id == run_id]
        if run.empty:
            continue
        first = run.iloc[0]
        c = stamp(run)
        out.append([f"{R.project_title(first.project)}, run {run_id}", *(R.fmt_value(c[k]) for k in c)])
    per_run = pd.DataFrame([stamp(g) for _, g in mine.groupby("run_id")])
    if len(per_run):
        out.append([f"every run on this GPU ({len(per_run)})",
                    *(f"{R.fmt_value(per_run[k].min())}–{R.fmt_value(per_run[k].max())}" if per_run[k].notna().any()
                      else "—" for k in ("copy_gbps", "bf16_tflops", "fp32_tflops"))])
    sheet = DATASHEETS.get(gpu)
    if sheet:
        out.append([sheet["source"], *(R.fmt_value(sheet[k]) for k in ("hbm_gbps", "bf16_tflops", "fp32_tflops"))])
    return out
