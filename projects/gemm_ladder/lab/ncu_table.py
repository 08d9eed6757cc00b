"""Turn an `ncu --csv --log-file` report into the evidence table the ladder writeups link to.

    python -m gpufolio_projects.gemm_ladder.lab.ncu_table evidence/2026-12-02-sgemm-ncu-4096.csv \
        --order evidence/2026-12-02-sgemm-ncu-4096-order.txt --metric "Compute (SM) Throughput" --metric "Achieved Occupancy" > evidence/2026-12-02-sgemm-ncu-4096.md

The profiling scripts (sgemm_profile.py, bf16_profile.py) launch one kernel per variant, in the order
they print; `--order` takes that stdout and labels the i-th profiled kernel with the i-th variant. When the
counts differ (a variant launched two kernels) the table says so and falls back to the kernels' own names.
Metrics are matched by their display name (sections) or raw name (--metrics), whichever the report holds.
"""
from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path


def read_report(path: Path) -> list[dict]:
    """One dict per profiled kernel, in launch order: {"kernel": name, metric: "value unit", ...}."""
    lines = path.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError(f"{path}: no ncu CSV header (was ncu run with --csv --log-file?)")
    kernels: dict[str, dict] = {}
    for row in csv.DictReader(lines[start:]):
        k = kernels.setdefault(row["ID"], {"kernel": row["Kernel Name"]})
        unit = row.get("Metric Unit", "")
        k[row["Metric Name"]] = f"{row['Metric Value']} {unit}".strip()
    return [kernels[i] for i in sorted(kernels, key=int)]


def labels_from(order_text: str) -> list[str]:
    """Variant names from a profiling script's stdout ('profiled 07_grouped_raster ...' or '07 label: 4096^3')."""
    out = []
    for line in order_text.splitlines():
        m = re.match(r"profiled (\S+)", line) or re.match(r"([^:]+): \d+\^3", line)
        if m:
            out.append(m.group(1).strip())
    return out


def short_name(kernel: str) -> str:
    name = re.sub(r"\(.*", "", kernel)  # drop the argument list
    return name if len(name) <= 60 else name[:57] + "..."


def table(kernels: list[dict], labels: list[str], metrics: list[str]) -> str:
    use_labels = len(labels) == len(kernels)
    head = ["variant" if use_labels else "kernel", *metrics]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, k in enumerate(kernels):
        first = labels[i] if use_labels else f"`{short_name(k['kernel'])}`"
        rows.append("| " + " | ".join([first, *(k.get(m, "n/a") for m in metrics)]) + " |")
    note = "" if use_labels else (f"\n\n{len(kernels)} kernels for {len(labels)} variants: labelled by kernel "
                                  "name instead of variant.")
    return "\n".join(rows) + note + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report", type=Path)
    p.add_argument("--order", type=Path, help="the profiling script's stdout")
    p.add_argument("--metric", action="append", default=[], help="metric to show (repeat); default: all")
    a = p.parse_args(argv)
    try:
        kernels = read_report(a.report)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    labels = labels_from(a.order.read_text()) if a.order else []
    metrics = a.metric or sorted({m for k in kernels for m in k if m != "kernel"})
    sys.stdout.write(table(kernels, labels, metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
