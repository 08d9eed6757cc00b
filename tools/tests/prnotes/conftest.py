"""Fixtures: a valid note for any status, a notes folder in tmp, and a small store frame with one run."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

RUN_ID = "20261202T140501Z-abc123"
REPO = "linkedin/Liger-Kernel"


def _base_meta(status: str) -> dict:
    meta = {
        "schema_version": 1,
        "slug": "fused_add_rmsnorm",
        "title": "Multi-row forward kernel for fused add + RMSNorm",
        "status": status,
        "upstream": {"repo": REPO, "files": ["src/liger_kernel/ops/fused_add_rms_norm.py"]},
        "pr": {"number": None, "url": None},
        "dates": {"created": "2026-11-20", "opened": None, "merged": None, "closed": None},
        "change": {"files_changed": 1, "insertions": 80, "deletions": 3,
                   "files": [{"path": "src/liger_kernel/ops/fused_add_rms_norm.py", "insertions": 80, "deletions": 3}]},
        "hardware": "NVIDIA H200",
        "results": {"project": "oss_pr_notes", "bench": "fused_add_rmsnorm", "run_id": None,
                    "before": "upstream", "after": "patched"},
        "correctness": "Outputs compared with an fp64 reference at bf16 tolerances by the harness.",
        "review_lessons": [],
    }
    if status in ("open", "merged", "closed"):
        meta["pr"] = {"number": 123, "url": f"https://github.com/{REPO}/pull/123"}
        meta["dates"]["opened"] = "2026-11-21"
        meta["results"]["run_id"] = RUN_ID
    if status == "merged":
        meta["dates"]["merged"] = "2026-11-25"
    if status == "closed":
        meta["dates"]["closed"] = "2026-11-25"
    return meta


@pytest.fixture
def note_meta():
    """note_meta(status) -> a deep copy of a valid front matter with that status."""
    return lambda status="prepared": copy.deepcopy(_base_meta(status))


@pytest.fixture
def write_note(tmp_path):
    """write_note(meta, body) -> path of <repo>/projects/oss_pr_notes/notes/<slug>/note.md under tmp_path."""
    import yaml

    def write(meta: dict, body: str = "\n## What changes\n\nA multi-row kernel.\n") -> Path:
        path = tmp_path / "projects" / "oss_pr_notes" / "notes" / meta["slug"] / "note.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n" + body, encoding="utf-8")
        return path

    return write


def _record(variant: str, role: str, params: dict, gbps: float, status: str = "ok") -> dict:
    return {
        "run_id": RUN_ID, "created_at": "2026-12-02T14:05:01Z", "project": "oss_pr_notes",
        "bench": "fused_add_rmsnorm", "variant": variant, "role": role, "params": params,
        "metric": {"name": "gbps", "unit": "GB/s", "value": gbps, "higher_is_better": True} if status == "ok" else None,
        "extra_metrics": [], "timing": {"median_ms": 1.0}, "correctness": {"passed": status == "ok", "reference": "fp64"},
        "status": status, "message": None, "env": {"gpu": {"name": "NVIDIA H200"}}, "git": {"sha": "deadbeef"},
    }


@pytest.fixture
def store_frame():
    """The long-format frame (gpufolio.store.frame) of one run: two shapes, upstream and patched at each."""
    from gpufolio.store import frame

    small = {"M": 4096, "N": 2048, "dtype": "bfloat16"}
    large = {"M": 32768, "N": 4096, "dtype": "bfloat16"}
    return frame([
        _record("upstream", "baseline", small, 1500.0), _record("patched", "candidate", small, 3000.0),
        _record("upstream", "baseline", large, 2500.0), _record("patched", "candidate", large, 2000.0),
    ])
