"""gpufolio's sessions. Two of them set up a fresh machine (README, Quick start):

    nox -s site     build the portfolio from the committed results (no GPU needed)
    nox -s tests    the CPU test suite

On a GPU box: ``nox -s bench -- --project gemm_ladder --quick`` (offline: ``nox --no-venv -s bench``).
No Python-version parametrisation: with CI=true a missing interpreter is a failure, not a skip.
"""
from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests", "site"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

# CPU torch: 2.13.0 is on local disk here and in CI; other versions download GBs of CUDA wheels.
CPU_TORCH = "torch==2.13.0"


def _install(session: nox.Session, *extras: str) -> None:
    spec = f".[{','.join(extras)}]" if extras else "."
    session.install("-e", spec)


@nox.session
def tests(session: nox.Session) -> None:
    """The CPU suite: harness, render, and every project's CPU tests (Triton kernels under the interpreter)."""
    session.install(CPU_TORCH)
    _install(session, "torch", "test", "site", "browser")
    session.env["TRITON_INTERPRET"] = "1"
    session.env.setdefault("OMP_NUM_THREADS", "2")
    args = session.posargs or ["-m", "not gpu"]
    session.run("pytest", *args)


@nox.session(python=False)
def tests_gpu(session: nox.Session) -> None:
    """Tests marked ``gpu``, in the current environment (the GPU box has torch and triton already)."""
    session.run("python", "-m", "pytest", "-m", "gpu", *session.posargs)


@nox.session(python=False, default=False)
def bench(session: nox.Session) -> None:
    """``python -m gpufolio bench`` with this session's arguments, in the current environment."""
    session.run("python", "-m", "gpufolio", "bench", *session.posargs)


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
    """Draft a worklog entry: ``nox -s worklog -- new "title" --project gemm_ladder``."""
    _install(session, "site")
    session.run("python", "-m", "gpufolio", "worklog", *session.posargs)


@nox.session(default=False)
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", "tools", "projects", "noxfile.py", *session.posargs)
