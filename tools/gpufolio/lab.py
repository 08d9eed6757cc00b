"""Lab runs on a GPU box: each project's stages (bench quick/full, GPU tests, ncu, SASS, tuning) under one time
budget for the whole call, each stage's log kept, one archive back.

    python -m gpufolio lab --list                                    # every project's stages, [x] = default
    python -m gpufolio lab gemm_ladder flash_attention --budget 600 --out OUT
    python -m gpufolio lab fused_kernels:tune_swiglu,bench_swiglu --budget 120 --out OUT

A project declares its stages in ``projects/<p>/project.py`` (``STAGES``, a tuple of ``Stage``); a stage is one
command with a cap of its own. Stages run in the order given (default: the project's order, default stages only);
each gets at most its cap and what is left of the budget, less a margin for packing; once less than
``MIN_STAGE_S`` is left the remaining stages are skipped, as is one whose tools (ncu, cuobjdump) the box lacks.
A stage past its limit is killed with its whole process group. Everything is written under a work folder, then
packed into OUT/lab.tgz with OUT/steps.txt beside it (a GPU box may hand back only a few files, a few folders
deep):

    env.json           the box (``gpufolio env``: GPU, driver, torch, clocks) and the provenance of the tree
    steps.tsv          project, stage, status, rc, seconds, limit: one line per stage
    <project>/         each stage's log (<stage>.log), the bench stages' records (<run_id>.jsonl), what else
                       the stages write there ({out})

On a box where the tree arrives without ``.git``, provenance comes from ``.gpufolio/provenance.json`` (written by
``python -m gpufolio provenance`` before the copy); without it the bench stages' records are marked unknown.
With ``gpufolio_projects`` not installed (``PYTHONPATH=tools python3 -m gpufolio lab ...``) the stages get an
import path that maps it to projects/.
"""
from __future__ import annotations

import argparse
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from . import PROJECTS

MIN_STAGE_S = 5.0  # with less left, the remaining stages are skipped: one could not even start its interpreter
PACK_MARGIN_S = 10.0  # kept back from the budget for the archive
KILL_GRACE_S = 5.0  # between SIGTERM and SIGKILL of a stage past its limit
# Multicast over NVLink stays off on the lent boxes (NCCL, PyTorch symmetric memory, NVSHMEM).
BOX_ENV = {"PYTHONUNBUFFERED": "1", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
           "NVSHMEM_DISABLE_NVLS": "1"}
# Where CUDA tools live when they are not on PATH (ncu often is not).
TOOL_DIRS = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute/*", "/usr/local/cuda/nsight-compute*")


class LabError(ValueError):
    """Bad input to the lab runner: one line, exit 2."""


@dataclass(frozen=True)
class Stage:
    """One command of a project's lab run. ``argv`` may hold ``{python}`` (this interpreter), ``{out}`` (the
    project's folder in the work tree, where its logs and outputs go), ``{work}`` (the work tree) and ``{root}``
    (the repository); so may the values of ``env``. ``needs``: executables the stage runs (found on PATH or in TOOL_DIRS), else skipped."""

    name: str
    argv: tuple[str, ...]
    limit_s: float
    what: str = ""
    default: bool = True
    needs: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name.replace("_", "").isalnum():
            raise ValueError(f"stage name {self.name!r}: letters, digits and _ only")
        if not self.argv:
            raise ValueError(f"stage {self.name}: empty command")
        if self.limit_s <= 0:
            raise ValueError(f"stage {self.name}: limit_s must be positive")


def bench(project: str, name: str, *args: str, limit_s: float, what: str = "", default: bool = True,
          env: Mapping[str, str] | None = None) -> Stage:
    """A ``gpufolio bench`` stage: records in the project's folder of the work tree, stamped like any bench run."""
    argv = ("{python}", "-m", "gpufolio", "bench", "--project", project, "--out", "{work}", "--no-progress", *args)
    return Stage(name, argv, limit_s, what or f"gpufolio bench {' '.join(args)}".strip(), default, env=dict(env or {}))


def gpu_tests(name: str, *args: str, limit_s: float, what: str = "", default: bool = True,
              env: Mapping[str, str] | None = None) -> Stage:
    """A ``pytest -m gpu`` stage (paths and flags in ``args``)."""
    argv = ("{python}", "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", *args)
    return Stage(name, argv, limit_s, what or f"pytest -m gpu {' '.join(args)}", default, env=dict(env or {}))


def module(name: str, mod: str, *args: str, limit_s: float, what: str = "", default: bool = True,
           env: Mapping[str, str] | None = None) -> Stage:
    """``python -m mod args``: a lab script (tuning, profiling, a sweep)."""
    return Stage(name, ("{python}", "-m", mod, *args), limit_s, what or mod, default, env=dict(env or {}))


def ncu(name: str, kernels: str, launches: int, sections: Sequence[str], *command: str, limit_s: float, what: str,
        default: bool = True, env: Mapping[str, str] | None = None) -> Stage:
    """An ``ncu`` stage at the clocks the GPU runs at (no locking): the first ``launches`` launches of kernels whose
    names match the regex ``kernels``, with the named report sections, under ``command`` (``{python}`` and a
    profile script, usually)."""
    argv = ("ncu", "--clock-control", "none", "--kernel-name", f"regex:{kernels}", "--launch-count", str(launches),
            *(arg for section in sections for arg in ("--section", section)), *command)
    return Stage(name, argv, limit_s, what, default, needs=("ncu",), env=dict(env or {}))


def stages(project: str, root: Path) -> tuple[Stage, ...]:
    """``STAGES`` of ``projects/<project>/project.py``; () for a project that declares none."""
    if project not in PROJECTS:
        raise LabError(f"unknown project {project!r}; projects are: {', '.join(PROJECTS)}")
    facts = root / "projects" / project / "project.py"
    found = tuple(runpy.run_path(str(facts)).get("STAGES", ())) if facts.is_file() else ()
    for s in found:
        if not isinstance(s, Stage):
            raise TypeError(f"{facts}: STAGES holds {type(s).__name__}, not gpufolio.lab.Stage")
    names = [s.name for s in found]
    if len(set(names)) != len(names):
        raise ValueError(f"{facts}: duplicate stage names {names}")
    return found


def plan(specs: Sequence[str], root: Path) -> list[tuple[str, Stage]]:
    """``project`` (its default stages) or ``project:stage,stage`` (those, in that order) -> (project, stage)."""
    out = []
    for spec in specs:
        project, _, names = spec.partition(":")
        declared = {s.name: s for s in stages(project, root)}
        if not names:
            out += [(project, s) for s in declared.values() if s.default]
            continue
        for name in names.split(","):
            if name not in declared:
                raise LabError(f"{project} has no lab stage {name!r}; stages are: {', '.join(declared) or 'none'}")
            out.append((project, declared[name]))
    return out


def find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for pattern in TOOL_DIRS:
        for d in sorted(Path("/").glob(pattern.lstrip("/")), reverse=True):
            if (d / name).is_file() and os.access(d / name, os.X_OK):
                return str(d / name)
    return None


def _import_path(work: Path, root: Path) -> str | None:
    """A folder mapping ``gpufolio`` and ``gpufolio_projects`` to the tree, when they are not installed."""
    import importlib.util

    if importlib.util.find_spec("gpufolio_projects") is not None:
        return None
    path = work / ".import-path"
    path.mkdir(parents=True, exist_ok=True)
    for name, target in (("gpufolio", root / "tools" / "gpufolio"), ("gpufolio_projects", root / "projects")):
        link = path / name
        if not link.exists():
            link.symlink_to(target, target_is_directory=True)
    return str(path)


def _env(stage: Stage, values: dict[str, str], import_path: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # kernels run on the GPU here
    env.update(BOX_ENV)
    env.update({k: v.format(**values) for k, v in stage.env.items()})
    if import_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [import_path, os.environ.get("PYTHONPATH")]))
    return env


def run_stage(stage: Stage, argv: list[str], env: dict[str, str], cwd: Path, log: Path, limit_s: float) -> int:
    """Run ``argv`` with its output in ``log``; past ``limit_s`` its process group is killed and 124 returned."""
    with log.open("w", encoding="utf-8") as f:
        f.write(f"$ {' '.join(argv)}\n")
        f.flush()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            f.write(f"\n[lab] {stage.name}: killed after its limit of {limit_s:.0f} s\n")
            return 124


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def box_env(root: Path, env: dict[str, str]) -> dict:
    """The box as the bench stamps it (``gpufolio env``: GPU, driver, torch, clocks), in a child process (it
    imports torch); the error instead when that fails."""
    try:
        res = subprocess.run([sys.executable, "-m", "gpufolio", "env"], cwd=root, env=env, capture_output=True,
                             text=True, timeout=120)
        return json.loads(res.stdout)["env"] if res.returncode == 0 else {"error": res.stderr[-2000:]}
    except (subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as e:
        return {"error": f"{type(e).__name__}: {e}"}


def run(jobs: list[tuple[str, Stage]], root: Path, out: Path, budget_s: float, work: Path | None = None) -> bool:
    """Run ``jobs`` within ``budget_s`` seconds in all, pack OUT/lab.tgz; whether every stage that ran passed."""
    from .provenance import git_info

    start = time.monotonic()
    work = work or Path(tempfile.mkdtemp(prefix="gpufolio-lab-"))
    work.mkdir(parents=True, exist_ok=True)
    import_path = _import_path(work, root)
    base_env = _env(Stage("env", ("-",), 1), {}, import_path)
    info = {"provenance": git_info(root), "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "env": box_env(root, base_env)}
    (work / "env.json").write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    if info["provenance"]["source"] == "unknown":
        print("lab: the tree has no .git and no .gpufolio/provenance.json: records will carry no commit",
              file=sys.stderr)
    rows, passed = ["project\tstage\tstatus\trc\tseconds\tlimit_s"], True
    for project, stage in jobs:
        folder = work / project
        folder.mkdir(exist_ok=True)
        left = budget_s - PACK_MARGIN_S - (time.monotonic() - start)
        limit = min(stage.limit_s, left)
        missing = [t for t in stage.needs if find_tool(t) is None]
        if missing or left < MIN_STAGE_S:
            status = f"skipped: no {', '.join(missing)}" if missing else f"skipped: {max(left, 0):.0f} s left"
            rows.append(f"{project}\t{stage.name}\t{status}\t\t0\t{limit:.0f}")
            print(f"== {project}/{stage.name}: {status}", flush=True)
            continue
        values = {"python": sys.executable, "out": str(folder), "work": str(work), "root": str(root)}
        argv = [a.format(**values) for a in stage.argv]
        if argv[0] in stage.needs:
            argv[0] = find_tool(argv[0]) or argv[0]
        t0 = time.monotonic()
        rc = run_stage(stage, argv, _env(stage, values, import_path), root, folder / f"{stage.name}.log", limit)
        took = time.monotonic() - t0
        status = "timeout" if rc == 124 else ("ok" if rc == 0 else "failed")
        passed = passed and rc == 0
        rows.append(f"{project}\t{stage.name}\t{status}\t{rc}\t{took:.1f}\t{limit:.0f}")
        print(f"== {project}/{stage.name}: {status} (rc {rc}) after {took:.1f} s of {limit:.0f}", flush=True)
    (work / "steps.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    archive = out / "lab.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(work.iterdir()):
            if path.name != ".import-path":
                tar.add(path, arcname=path.name)
    shutil.copyfile(work / "steps.tsv", out / "steps.txt")
    print(f"lab: {len(jobs)} stages in {time.monotonic() - start:.0f} s of {budget_s:.0f}; {archive}")
    return passed


def _list(root: Path) -> None:
    for project in PROJECTS:
        declared = stages(project, root)
        print(f"{project}:" + ("" if declared else " (no lab stages)"))
        for s in declared:
            needs = f" [needs {', '.join(s.needs)}]" if s.needs else ""
            print(f"  [{'x' if s.default else ' '}] {s.name:<18} {s.limit_s:>5.0f} s  {s.what}{needs}")


def main(argv: list[str] | None = None) -> int:
    from .store import repo_root

    p = argparse.ArgumentParser(prog="gpufolio lab", description="Run projects' lab stages on a GPU box.")
    p.add_argument("specs", nargs="*", metavar="PROJECT[:STAGE,...]",
                   help="a project (its default stages) or project:stage,stage")
    p.add_argument("--budget", type=float, default=600.0, help="seconds for the whole call (600)")
    p.add_argument("--out", type=Path, help="folder for lab.tgz and steps.txt")
    p.add_argument("--work", type=Path, help="work folder (default: a new temporary one)")
    p.add_argument("--list", action="store_true", help="list every project's stages and exit")
    args = p.parse_args(argv)
    root = repo_root()
    try:
        if args.list:
            _list(root)
            return 0
        if not args.specs:
            raise LabError("name at least one project (python -m gpufolio lab --list shows the stages)")
        jobs = plan(args.specs, root)
        if args.out is None:
            raise LabError("--out is required: where lab.tgz goes")
        if args.budget < MIN_STAGE_S + PACK_MARGIN_S:
            raise LabError(f"--budget {args.budget:g}: at least {MIN_STAGE_S + PACK_MARGIN_S:g} s")
    except LabError as e:
        print(f"gpufolio lab: {e}", file=sys.stderr)
        return 2
    return 0 if run(jobs, root, args.out, args.budget, args.work) else 1


if __name__ == "__main__":  # as gpufolio.lab, so that STAGES' Stage is this module's class
    from gpufolio.lab import main as lab_main

    sys.exit(lab_main())
