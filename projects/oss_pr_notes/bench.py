"""The OSS-PR notes' repro benches, gathered from each note: ``notes/<slug>/repro/bench.py`` -> ``BENCHES``.

Each repro measures the upstream implementation (a baseline variant) and the patched one (a candidate) side by
side, so the note's before/after comes from one run on one GPU. Importing this module imports no torch.
"""
from __future__ import annotations

import importlib
from pathlib import Path

NOTES_DIR = Path(__file__).with_name("notes")


def _repro_modules() -> list[str]:
    return [f"{__package__}.notes.{d.name}.repro.bench"
            for d in sorted(NOTES_DIR.iterdir()) if (d / "repro" / "bench.py").is_file()]


def _gather() -> list:
    benches = []
    for name in _repro_modules():
        module = importlib.import_module(name)
        for bench in module.BENCHES:
            if bench.project != "oss_pr_notes":
                raise ValueError(f"{name}: bench {bench.name!r} declares project {bench.project!r}, not oss_pr_notes")
            benches.append(bench)
    return benches


BENCHES = _gather()
