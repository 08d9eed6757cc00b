"""Before a GPU session: say what this machine has, refuse in one line when a prerequisite is missing, and leave
out (with the reason) the projects it cannot build. The ``bench`` and ``tests_gpu`` nox sessions run through it.

    python -m gpufolio.preflight                  # GPU, driver, torch + CUDA, triton, nvcc, provenance
    python -m gpufolio.preflight bench ARGS...    # that, then ``python -m gpufolio bench ARGS``
    python -m gpufolio.preflight tests ARGS...    # that, then ``pytest -m gpu ARGS``

A bench needs a CUDA build of torch that sees a GPU, and triton (``--dry-run`` needs torch only). nvcc is needed
by gemm_ladder alone (its kernels are CUDA C++ compiled at run time): without it that project is left out with
the reason, and the others run. Exit 2 with one line when nothing can run.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import PROJECTS, project_facts


@dataclass
class Found:
    gpu: str | None  # "NVIDIA H200 x1 (sm_90)"
    driver: str | None
    torch: str | None
    torch_cuda: str | None  # the CUDA torch was built with; None for a CPU build
    cuda_available: bool
    triton: str | None
    nvcc: str | None  # path
    nvcc_version: str | None
    provenance: str

    def lines(self) -> list[str]:
        return [
            f"GPU:        {self.gpu or 'none found'}" + (f", driver {self.driver}" if self.driver else ""),
            f"torch:      {self.torch or 'not installed'}"
            + (f" (CUDA {self.torch_cuda}{'' if self.cuda_available else ', but it sees no GPU'})"
               if self.torch_cuda else " (CPU build)" if self.torch else ""),
            f"triton:     {self.triton or 'not installed'}",
            f"nvcc:       {self.nvcc + (f' (CUDA {self.nvcc_version})' if self.nvcc_version else '') if self.nvcc else 'not found'}",
            f"provenance: {self.provenance}",
        ]


def _smi(query: str) -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout.strip().splitlines()
    except (subprocess.SubprocessError, OSError):
        return None
    return out[0].strip() if out else None


def find_nvcc() -> str | None:
    """nvcc where torch's extension builder looks: $CUDA_HOME/bin, then PATH, then /usr/local/cuda/bin."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidates = [Path(home) / "bin" / "nvcc"] if home else [shutil.which("nvcc"), Path("/usr/local/cuda/bin/nvcc")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def _nvcc_version(nvcc: str) -> str | None:
    try:
        text = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    m = re.search(r"release (\d+\.\d+)", text)
    return m.group(1) if m else None


def _provenance() -> str:
    from .provenance import git_info

    try:
        g = git_info()
    except ValueError as e:  # a malformed provenance file or variable
        return f"invalid ({e})"
    if not g["sha"]:
        return ("unknown: records will not count (run `python -m gpufolio provenance` before copying a tree "
                "without .git)")
    state = {True: "dirty", False: "clean"}.get(g["dirty"], "state unknown")
    return f"{g['sha'][:12]} ({state}, from {g['source']})"


def find() -> Found:
    """What this machine has. Imports torch (no CUDA context: only the device count is asked for)."""
    try:
        import torch
    except ImportError:
        torch = None
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    available = bool(torch is not None and torch.version.cuda and torch.cuda.is_available())
    gpu = None
    name = _smi("name")
    if name or available:
        count = torch.cuda.device_count() if available else None
        cap = _smi("compute_cap")
        gpu = (name or "a CUDA GPU") + (f" x{count}" if count else "") + (f" (sm_{cap.replace('.', '')})" if cap else "")
    nvcc = find_nvcc()
    return Found(gpu=gpu, driver=_smi("driver_version"), torch=getattr(torch, "__version__", None),
                 torch_cuda=getattr(getattr(torch, "version", None), "cuda", None), cuda_available=available,
                 triton=triton_version, nvcc=nvcc, nvcc_version=_nvcc_version(nvcc) if nvcc else None,
                 provenance=_provenance())


def missing(found: Found, dry_run: bool) -> str | None:
    """The first missing prerequisite, as the one line a refusal prints; None when a run can start."""
    if found.torch is None:
        return "torch is not installed (`nox -s bench` installs it; or pip install torch)"
    if dry_run:
        return None
    if not found.torch_cuda:
        return f"torch {found.torch} is a CPU build: install a CUDA build of torch (or use --dry-run)"
    if not found.cuda_available:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if not found.gpu:
            hint = ""
        elif visible is not None and _hides_every_gpu(visible):
            hint = f" (nvidia-smi lists {found.gpu}; CUDA_VISIBLE_DEVICES={visible!r} hides it)"
        else:
            hint = (f" (nvidia-smi lists {found.gpu}: check the driver against torch's CUDA {found.torch_cuda}"
                    + ("" if visible is None else f"; CUDA_VISIBLE_DEVICES={visible!r}") + ")")
        return f"torch {found.torch} sees no CUDA GPU{hint}; use --dry-run for the CPU paths"
    if found.triton is None:
        return "triton is not installed (it comes with CUDA torch on Linux: pip install triton)"
    return None


def _hides_every_gpu(visible: str) -> bool:
    """CUDA reads CUDA_VISIBLE_DEVICES up to its first invalid entry: an empty value, -1 or a word first hides
    every GPU; an index or a GPU-/MIG- UUID first names one (whether it exists is the driver's to say)."""
    first = visible.split(",")[0].strip()
    return not (first.isdigit() or first.startswith(("GPU-", "MIG-")))


def left_out(found: Found, projects: list[str]) -> dict[str, str]:
    """project -> why it cannot run here (only nvcc today)."""
    if found.nvcc:
        return {}
    why = "nvcc not found (its CUDA kernels are compiled at run time; set CUDA_HOME or put nvcc on PATH)"
    return {p: why for p in projects if project_facts.facts(p).needs_nvcc}  # its project.py: NEEDS_NVCC


def _bench_projects(args: list[str]) -> tuple[list[str], bool]:
    """(projects asked for, dry run?) read with the bench command's own parser."""
    from .__main__ import _parser

    ns = _parser().parse_args(["bench", *args])
    return list(ns.project or PROJECTS), bool(ns.dry_run)


def without_projects(args: list[str], keep: list[str]) -> list[str]:
    """The bench arguments with their --project options replaced by ``keep``."""
    out, skip_next = [], False
    for a in args:
        if skip_next:
            skip_next = False
        elif a == "--project":
            skip_next = True
        elif not a.startswith("--project="):
            out.append(a)
    return [*(x for p in keep for x in ("--project", p)), *out]


def bench(args: list[str]) -> int:
    projects, dry = _bench_projects(args)
    found = find()
    print("\n".join(found.lines()), flush=True)
    why = missing(found, dry)
    if why:
        print(f"gpufolio bench: cannot run here: {why}", file=sys.stderr)
        return 2
    skipped = {} if dry else left_out(found, projects)  # a dry run builds no CUDA extension
    for p, reason in skipped.items():
        print(f"{p}: skipped: {reason}", flush=True)
    keep = [p for p in projects if p not in skipped]
    if not keep:
        print(f"gpufolio bench: nothing left to run ({', '.join(skipped)} skipped)", file=sys.stderr)
        return 2
    from .__main__ import main

    return main(["bench", *(without_projects(args, keep) if skipped else args)])


def tests(args: list[str]) -> int:
    import pytest

    found = find()
    print("\n".join(found.lines()), flush=True)
    why = missing(found, dry_run=False)
    if why:
        print(f"gpufolio tests_gpu: cannot run here: {why}", file=sys.stderr)
        return 2
    ignore = []
    for p, reason in left_out(found, list(PROJECTS)).items():
        print(f"{p}: GPU tests skipped: {reason}", flush=True)
        ignore.append(f"--ignore=projects/{p}")
    return int(pytest.main(["-m", "gpu", *ignore, *args]))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        return bench(argv[1:])
    if argv and argv[0] == "tests":
        return tests(argv[1:])
    if argv:
        print(f"gpufolio.preflight: unknown command {argv[0]!r} (bench, tests, or nothing)", file=sys.stderr)
        return 2
    print("\n".join(find().lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
