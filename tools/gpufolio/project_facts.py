"""The projects and their facts, discovered: every ``projects/<name>/project.py`` is a project.

A project states its facts in its ``project.py`` as plain literals, read here with ``ast`` without running the file
(running it imports ``gpufolio.lab`` for the lab stages; discovery must stay cheap and torch-free, and runs while
``gpufolio`` itself is being imported):

    TITLE = "GEMM ladder"                  # how the site names it (default: the folder name)
    ORDER = 1                              # its place in every list (then the folder name)
    HOME_BENCHES = ("bf16_gemm", "sgemm")  # the bench the home page quotes, in order of preference
    NEEDS_NVCC = True                      # it compiles CUDA C++ with nvcc at run time
    ENTRY_POINTS = ("bench.py", "notes/*/repro/bench.py")  # its bench modules (globs), for the source digest

A seventh project is a folder with a ``project.py``; nothing in the harness names it.
"""
from __future__ import annotations

import ast
import functools
import os
from dataclasses import dataclass
from pathlib import Path

FACTS_FILE = "project.py"
LAST = 1_000_000  # the place of a project that states no ORDER: after the ordered ones


@dataclass(frozen=True)
class ProjectFacts:
    name: str
    title: str
    order: int = LAST
    home_benches: tuple[str, ...] = ()
    needs_nvcc: bool = False
    entry_points: tuple[str, ...] = ()  # () when it states none: the source digest's default


# project.py name -> (ProjectFacts field, the type its literal must have)
_FIELDS = {"TITLE": ("title", str), "ORDER": ("order", int), "HOME_BENCHES": ("home_benches", tuple),
           "NEEDS_NVCC": ("needs_nvcc", bool), "ENTRY_POINTS": ("entry_points", tuple)}


def repo_root() -> Path:
    """The checkout this package lives in (editable install): tools/gpufolio/ -> repo root; GPUFOLIO_ROOT wins."""
    env = os.environ.get("GPUFOLIO_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[2]


def read(path: Path) -> ProjectFacts:
    """The facts a ``project.py`` states (top-level assignments of literals; the rest of the file is not read)."""
    found: dict = {}
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in _FIELDS:
                field, kind = _FIELDS[name]
                try:
                    value = ast.literal_eval(node.value)
                except ValueError as e:
                    raise ValueError(f"{path}:{node.lineno}: {name} must be a literal") from e
                if not isinstance(value, kind):
                    raise ValueError(f"{path}:{node.lineno}: {name} must be a {kind.__name__}")
                found[field] = value
    return ProjectFacts(name=path.parent.name, **{"title": path.parent.name, **found})


@functools.cache
def _discover(projects_dir: Path) -> tuple[ProjectFacts, ...]:
    found = [read(p) for p in projects_dir.glob(f"*/{FACTS_FILE}") if p.is_file()]
    return tuple(sorted(found, key=lambda f: (f.order, f.name)))


def discover(root: Path | None = None) -> tuple[ProjectFacts, ...]:
    """Every project under ``root/projects`` (default: ``repo_root()``), in their stated order."""
    return _discover(((root or repo_root()) / "projects").resolve())


def names(root: Path | None = None) -> tuple[str, ...]:
    return tuple(f.name for f in discover(root))


def facts(project: str, root: Path | None = None) -> ProjectFacts:
    """One project's facts; a name that is no project gets default facts (its name as title, no home bench)."""
    for f in discover(root):
        if f.name == project:
            return f
    return ProjectFacts(name=project, title=project)
