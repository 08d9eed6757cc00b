"""gpufolio's sessions. Two of them set up a fresh machine (README, Quick start):

    nox -s site     build the portfolio from the committed results (no GPU needed)
    nox -s tests    the CPU test suite

On a GPU box (README, On a GPU box): ``nox -s bench -- --project gemm_ladder --quick`` and ``nox -s tests_gpu``.
They make a virtualenv that sees the machine's own packages, so a preinstalled CUDA torch is reused (a box without
torch gets it from the index), install the project into it, print what the box has and refuse in one line when a
prerequisite is missing. With wheels in ``.whl/`` (an offline box) every install comes from there, never an index.
No Python-version parametrisation: with CI=true a missing interpreter is a failure, not a skip.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox
from nox.virtualenv import PassthroughEnv

nox.options.sessions = ["tests", "site"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

# CPU torch: 2.13.0 is on local disk here and in CI; other versions download GBs of CUDA wheels.
CPU_TORCH = "torch==2.13.0"
# Carried wheels for a box without a registry (README, On a GPU box): when present, pip reads only them.
WHEELS = Path(".whl")
# The GPU sessions' virtualenv sees the system's site-packages: a CUDA torch already on the box is reused.
GPU_VENV = {"venv_backend": "virtualenv", "venv_params": ["--system-site-packages"]}


def _install(session: nox.Session, *extras: str) -> None:
    spec = f".[{','.join(extras)}]" if extras else "."
    session.install("-e", spec)


def _offline() -> list[str]:
    """pip options for a box whose only packages are the carried wheels. No build isolation: setuptools comes from
    those wheels (on PYTHONPATH, README), where an isolated build would need every build dependency as a wheel."""
    return ["--no-index", "--find-links", str(WHEELS), "--no-build-isolation"] if any(WHEELS.glob("*.whl")) else []


def _has(session: nox.Session, module: str) -> bool:
    code = f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"
    return session.run("python", "-c", code, silent=True).strip().endswith("True")


def _gpu_box(session: nox.Session, *extras: str) -> None:
    """The project and its extras in this session's virtualenv, reusing the machine's torch when it has one."""
    if isinstance(session.virtualenv, PassthroughEnv):  # nox --no-venv: this interpreter's packages, as they are
        session.env["PYTHONPATH"] = os.pathsep.join(filter(None, [_import_path(session), os.environ.get("PYTHONPATH")]))
        return
    offline = _offline()
    _see_launching_environment(session)
    if not _has(session, "torch"):
        # No GPU: the CPU build on local disk (dry runs); a GPU box without torch gets the index's CUDA build.
        session.install(*offline, CPU_TORCH if shutil.which("nvidia-smi") is None else "torch")
    # Offline, the dependencies are the box's own and the carried wheels' (README): pip resolving them again would
    # only trip over pins it cannot satisfy without an index (torch's setuptools<82 against a newer carried one).
    session.install(*offline, *(["--no-deps"] if offline else []), "-e", f".[{','.join(extras)}]")


def _see_launching_environment(session: nox.Session) -> None:
    """Let the session's virtualenv see the packages of the interpreter that runs nox.

    ``--system-site-packages`` reaches only the base interpreter's; a CUDA torch preinstalled in a virtualenv or a
    conda environment (the usual rented GPU image) lives in the launching environment's site-packages instead."""
    import sysconfig

    outer = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    inner = session.run("python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                        silent=True).strip().splitlines()[-1]
    if Path(inner).resolve() not in {Path(p).resolve() for p in outer}:
        Path(inner, "_gpufolio_launching_env.pth").write_text("\n".join(outer) + "\n", encoding="utf-8")


def _import_path(session: nox.Session) -> str:
    """A folder in which ``gpufolio`` and ``gpufolio_projects`` resolve to this checkout without installing it."""
    path = Path(session.create_tmp()).resolve() / "import-path"
    path.mkdir(parents=True, exist_ok=True)
    for name, target in (("gpufolio", "tools/gpufolio"), ("gpufolio_projects", "projects")):
        link = path / name
        if not link.is_symlink():
            link.symlink_to(Path(target).resolve())
    return str(path)


@nox.session
def tests(session: nox.Session) -> None:
    """The CPU suite: harness, render, and every project's CPU tests (Triton kernels under the interpreter)."""
    session.install(CPU_TORCH)
    _install(session, "torch", "test", "site", "browser", "serve")
    session.env["TRITON_INTERPRET"] = "1"
    session.env.setdefault("OMP_NUM_THREADS", "2")
    args = session.posargs or ["-m", "not gpu"]
    session.run("pytest", *args)


@nox.session(**GPU_VENV)
def tests_gpu(session: nox.Session) -> None:
    """Tests marked ``gpu``, after the preflight (``gemm_ladder``'s are left out without nvcc)."""
    _gpu_box(session, "torch", "test")
    session.run("python", "-m", "gpufolio.preflight", "tests", *session.posargs)


@nox.session(default=False, **GPU_VENV)
def bench(session: nox.Session) -> None:
    """``python -m gpufolio bench`` with this session's arguments, after the preflight."""
    _gpu_box(session, "torch")
    session.run("python", "-m", "gpufolio.preflight", "bench", *session.posargs)


@nox.session
def site(session: nox.Session) -> None:
    """Render pages from the results store, then ``mkdocs build --strict`` into site/."""
    _install(session, "site")
    session.run("python", "-m", "gpufolio", "site", *session.posargs)


@nox.session(default=False)
def serve(session: nox.Session) -> None:
    """Render, then serve the site on localhost with live reload."""
    _install(session, "site")
    session.run("python", "-m", "gpufolio", "site", "--render-only")
    session.run("mkdocs", "serve", "--dev-addr", os.environ.get("GPUFOLIO_ADDR", "127.0.0.1:8000"))


@nox.session(default=False)
def deploy(session: nox.Session) -> None:
    """Render, then publish to GitHub Pages (``mkdocs gh-deploy``)."""
    _install(session, "site")
    session.run("python", "-m", "gpufolio", "site", "--render-only")
    session.run("mkdocs", "gh-deploy", "--force", *session.posargs)


@nox.session(default=False)
def worklog(session: nox.Session) -> None:
    """Draft a worklog entry: ``nox -s worklog -- new "title" --project gemm_ladder [--before RUN --after RUN]``."""
    _install(session)  # the store and compare are enough: no MkDocs
    session.run("python", "-m", "gpufolio", "worklog", *session.posargs)


@nox.session(default=False)
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", "tools", "projects", "noxfile.py", *session.posargs)
