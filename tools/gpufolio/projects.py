"""Finds each project's benches: ``gpufolio_projects.<project>.bench.BENCHES``.

Bench modules import without torch (they import it inside ``case``), so listing benches, configs and metadata
works on any machine.
"""
from __future__ import annotations

import importlib
import os
from functools import cache

from . import PROJECTS
from .api import Bench


class UnknownProject(KeyError):
    pass


@cache
def benches(project: str) -> tuple[Bench, ...]:
    if project not in PROJECTS:
        raise UnknownProject(f"unknown project {project!r}; projects are: {', '.join(PROJECTS)}")
    override = os.environ.get("GPUFOLIO_BENCH_MODULES")
    if override:  # tests plant their own benches (faulty kernels, hangs, crashes) here
        found = tuple(b for m in override.split(",") for b in importlib.import_module(m).BENCHES
                      if b.project == project)
    else:
        try:
            module = importlib.import_module(f"gpufolio_projects.{project}.bench")
        except ModuleNotFoundError as e:
            if e.name == f"gpufolio_projects.{project}.bench":
                return ()  # the project declares no benchmark yet
            raise
        found = tuple(getattr(module, "BENCHES", ()))
    for b in found:
        if not isinstance(b, Bench):
            raise TypeError(f"{project}/bench.py: BENCHES holds {type(b).__name__}, not gpufolio.api.Bench")
        if b.project != project:
            raise ValueError(f"{project}/bench.py declares bench {b.name!r} for project {b.project!r}")
    names = [b.name for b in found]
    if len(set(names)) != len(names):
        raise ValueError(f"{project}/bench.py: duplicate bench names {names}")
    return found


def find_bench(project: str, name: str) -> Bench:
    for b in benches(project):
        if b.name == name:
            return b
    raise KeyError(f"project {project} has no bench {name!r}; it has {[b.name for b in benches(project)]}")


def bench_meta(bench: Bench) -> dict:
    """What every record carries about its bench, so the site never imports a project."""
    return {
        "metric": bench.metric.name,
        "unit": bench.metric.unit,
        "higher_is_better": bench.metric.higher_is_better,
        "headline_params": dict(bench.headline_params),
        "headline_baseline": bench.headline_baseline,
        "x_param": bench.x_param,
        "description": bench.description,
        "variant_labels": {v.name: (v.label or v.name) for v in bench.variants},
    }
