"""The results store: append-only JSON lines, validated against schema v1 on write and on load.

Layout: ``projects/<project>/results/<run_id>.jsonl``, one record per line, committed. A crash mid-write can
leave at most a torn last line; the loader reports it and keeps every complete record.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from . import PROJECTS, project_facts

SCHEMA_VERSION = 1


class RecordError(ValueError):
    """A record that does not satisfy schema v1; the message names the file, line and field."""


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(resources.files("gpufolio").joinpath("schema/record-v1.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    """The schema's validator; None where jsonschema is not installed (an offline GPU box): records written
    there are validated in full wherever they are loaded with it, and CI loads every committed record."""
    try:
        import jsonschema
    except ImportError:
        return None
    cls = jsonschema.validators.validator_for(schema())
    return cls(schema(), format_checker=cls.FORMAT_CHECKER)


def validate(record: dict, where: str = "record") -> None:
    """Raise RecordError naming the first violated field (without jsonschema: the first missing required key)."""
    validator = _validator()
    if validator is None:
        missing = [k for k in schema()["required"] if k not in record]
        if missing:
            raise RecordError(f"{where}: (top level): {missing[0]!r} is a required property")
    else:
        errors = sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
        if errors:
            err = errors[0]
            path = "/".join(str(p) for p in err.absolute_path) or "(top level)"
            raise RecordError(f"{where}: {path}: {err.message}")
    # The projects are discovered (project_facts), so the schema cannot list them: checked here, named the same way.
    if record["project"] not in PROJECTS:
        raise RecordError(f"{where}: project: {record['project']!r} is not one of {list(PROJECTS)}")


repo_root = project_facts.repo_root  # the checkout (GPUFOLIO_ROOT wins): where the projects are discovered


def results_dir(project: str, root: Path | None = None) -> Path:
    if project not in PROJECTS:
        raise KeyError(f"unknown project {project!r}; projects are {', '.join(PROJECTS)}")
    return (root or repo_root()) / "projects" / project / "results"


def _non_finite(value: Any, path: str = "") -> str | None:
    """The path of the first NaN or infinity inside ``value`` (JSON has no spelling for them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(top level)"
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        hit = _non_finite(v, f"{path}/{k}" if path else str(k))
        if hit:
            return hit
    return None


def append(path: Path, record: dict) -> None:
    """Validate, then append one line with flush+fsync, so a killed run loses at most the line in flight."""
    bad = _non_finite(record)
    if bad:
        raise RecordError(f"{path}: {bad}: not a finite number")
    validate(record, where=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True, allow_nan=False) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def write_atomic(path: Path, text: str) -> None:
    """Write a summary file through a temp file and rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@dataclass
class LoadReport:
    records: list[dict]
    problems: list[str]


def iter_result_files(root: Path | None = None) -> Iterator[Path]:
    base = (root or repo_root()) / "projects"
    for project in PROJECTS:
        yield from sorted((base / project / "results").glob("*.jsonl"))


def stray_result_files(root: Path | None = None) -> list[Path]:
    """Results files under ``projects/<name>/results/`` whose ``name`` is not a project: never read, so said."""
    base = (root or repo_root()) / "projects"
    return sorted(p for p in base.glob("*/results/*.jsonl") if p.parent.parent.name not in PROJECTS)


def read_file(path: Path, strict: bool = True) -> LoadReport:
    """Parse and validate one results file. A torn *last* line (a crash mid-write) is a problem, not a crash."""
    records, problems = [], []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{i}"
        try:
            rec = json.loads(line)
        except ValueError:
            problems.append(f"{where}: not JSON" + (" (torn last line)" if i == len(lines) else ""))
            continue
        try:
            validate(rec, where)
        except RecordError as e:
            problems.append(str(e))
            continue
        project_dir = path.parent.parent.name
        if path.parent.name == "results" and project_dir in PROJECTS and rec["project"] != project_dir:
            problems.append(f"{where}: project {rec['project']!r} filed under projects/{project_dir}")
            continue
        rec["_file"], rec["_line"] = str(path), i
        records.append(rec)
    if strict and problems:
        raise RecordError("; ".join(problems))
    return LoadReport(records, problems)


def load_records(root: Path | None = None, paths: Iterable[Path] | None = None, strict: bool = True) -> list[dict]:
    """Every record in the store (or in ``paths``), validated. ``strict`` raises on any bad line."""
    out = []
    for path in paths if paths is not None else iter_result_files(root):
        out.extend(read_file(Path(path), strict=strict).records)
    return out


def params_key(params: dict[str, Any]) -> str:
    """Canonical text for a params dict: keys sorted, ``k=v`` joined by commas."""
    return ",".join(f"{k}={params[k]}" for k in sorted(params))


def _rows(rec: dict) -> Iterator[dict]:
    timing = rec.get("timing") or {}
    corr = rec.get("correctness") or {}
    gpu = (rec.get("env") or {}).get("gpu") or {}
    git = rec.get("git") or {}
    base = {
        "run_id": rec["run_id"], "created_at": rec["created_at"], "project": rec["project"], "bench": rec["bench"],
        "variant": rec["variant"], "role": rec["role"], "status": rec["status"], "params": rec["params"],
        "params_key": params_key(rec["params"]),
        "median_ms": timing.get("median_ms"), "p20_ms": timing.get("p20_ms"), "p80_ms": timing.get("p80_ms"),
        "min_ms": timing.get("min_ms"), "max_ms": timing.get("max_ms"), "n_reps": timing.get("n"),
        "gpu_name": gpu.get("name"), "git_sha": git.get("sha"), "git_dirty": git.get("dirty"),
        "source_digest": git.get("source_digest"), "correctness_passed": corr.get("passed"),
        "message": rec.get("message"), "file": rec.get("_file"), "line": rec.get("_line"), "record": rec,
    }
    metrics = [(rec["metric"], True)] if rec.get("metric") else []
    metrics += [(m, False) for m in rec.get("extra_metrics") or []]
    if not metrics:  # a record with no number still shows up (as not counted) with its status
        yield {**base, "metric_name": None, "metric_unit": None, "value": None, "higher_is_better": None,
               "is_headline_metric": True}
    for m, headline in metrics:
        yield {**base, "metric_name": m["name"], "metric_unit": m["unit"], "value": m["value"],
               "higher_is_better": m["higher_is_better"], "is_headline_metric": headline}


FRAME_COLUMNS = [
    "run_id", "created_at", "project", "bench", "variant", "role", "status", "params", "params_key",
    "metric_name", "metric_unit", "value", "higher_is_better", "is_headline_metric", "median_ms", "p20_ms",
    "p80_ms", "min_ms", "max_ms", "n_reps", "gpu_name", "git_sha", "git_dirty", "source_digest",
    "correctness_passed", "message", "file", "line", "record",
]


def frame(records: Iterable[dict]):
    """Records -> one long-format DataFrame, a row per (record, metric) (Liger's benchmark table shape)."""
    import pandas as pd

    rows = [row for rec in records for row in _rows(rec)]
    return pd.DataFrame(rows, columns=FRAME_COLUMNS)


def load_frame(root: Path | None = None, strict: bool = True):
    return frame(load_records(root, strict=strict))
