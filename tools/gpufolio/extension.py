"""CUDA extensions built under a time limit, with torch's build lock kept honest.

``torch.utils.cpp_extension.load`` guards a build directory with a lock file and waits, forever and without a
word, while that file exists. A build interrupted by a timeout or Ctrl-C leaves the file behind, and every
later run then hangs at its first case. Here:

- gpufolio builders hold an ``flock`` on ``<build dir>/gpufolio.lock`` for the whole build. The kernel drops
  that lock when its holder dies, so a torch lock file found while holding it was left by a dead build and is
  removed (said on stderr). A live holder is waited for up to the time limit, then reported with its pid and
  the one command that clears the directory's locks.
- the compile runs in a child process in its own process group, killed with everything it started when the
  limit passes or the parent dies (``DIE_WITH_PARENT``); the caller then loads the result, which ninja finds
  up to date.
- each build's wall time is kept for the record that triggered it (``take_builds``).
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_TIME_LIMIT_S = 240.0  # under the runner's default per-case timeout, so the build error is what is recorded
LOCK_NAME = "gpufolio.lock"
TORCH_LOCK_NAME = "lock"  # torch.utils.cpp_extension's FileBaton
LOG_NAME = "build.log"



class BuildError(RuntimeError):
    """An extension that could not be built: the message says why and ends with the build log's tail."""


_builds: list[dict[str, Any]] = []
_failed: dict[tuple[str, str], BuildError] = {}  # a failed build is not retried by every later case of the run


def take_builds() -> list[dict[str, Any]]:
    """The builds done since the last call (name, seconds, outcome), for the record of the case that ran them."""
    out = list(_builds)
    _builds.clear()
    return out


def time_limit_s() -> float:
    raw = os.environ.get("GPUFOLIO_BUILD_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_TIME_LIMIT_S
    except ValueError:
        raise BuildError(f"GPUFOLIO_BUILD_TIMEOUT={raw!r} is not a number of seconds") from None


def clear_command(build_dir: Path) -> str:
    return f"rm -f {build_dir / TORCH_LOCK_NAME} {build_dir / LOCK_NAME}"


class BuildLock:
    """``flock`` on the build directory; on entry, a torch lock file with no live gpufolio builder is removed."""

    def __init__(self, build_dir: Path, wait_s: float, poll_s: float = 0.5):
        self.dir, self.wait_s, self.poll_s = Path(build_dir), wait_s, poll_s
        self.fd: int | None = None
        self.cleared_stale = False

    def __enter__(self) -> BuildLock:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / LOCK_NAME
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(self.fd, 64, 0).decode(errors="replace").strip() or "unknown"
                    os.close(self.fd)
                    self.fd = None
                    raise BuildError(
                        f"another process (pid {holder}) has been building in {self.dir} for over "
                        f"{self.wait_s:.0f} s; if no build is running, clear the locks: {clear_command(self.dir)}"
                    ) from None
                time.sleep(self.poll_s)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, str(os.getpid()).encode(), 0)
        stale = self.dir / TORCH_LOCK_NAME
        if stale.exists():  # we hold the flock, so no gpufolio build is alive: an interrupted build left it
            stale.unlink(missing_ok=True)
            self.cleared_stale = True
            print(f"gpufolio: removed a stale build lock left by an interrupted build: {stale}", file=sys.stderr)
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no build log)"
    return "\n".join(text.splitlines()[-lines:])


def run_bounded(argv: Sequence[str], log_path: Path, limit_s: float, env: dict[str, str] | None = None) -> float:
    """Run ``argv`` with output to ``log_path``; kill its whole process group after ``limit_s``.

    Returns the wall time; raises BuildError on a non-zero exit or the time limit, with the log's tail."""
    t0 = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        # Its own session, so that a time limit kills the whole group. No preexec_fn: the worker has threads
        # (its parent watch, torch's), and code run between fork and exec can deadlock on a lock one of them held.
        proc = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            raise BuildError(f"the build took longer than its limit of {limit_s:.0f} s (GPUFOLIO_BUILD_TIMEOUT); "
                             f"log {log_path}, last lines:\n{_log_tail(log_path)}") from None
    if code != 0:
        raise BuildError(f"the build failed (exit code {code}); log {log_path}, last lines:\n{_log_tail(log_path)}")
    return time.perf_counter() - t0


PARENT_ENV = "GPUFOLIO_BUILD_PARENT"  # the pid the build child dies with

# The build child's first lines: when its parent dies, it kills its own process group (ninja and the compilers
# ninja started, which no death signal reaches), itself included. PR_SET_PDEATHSIG delivers SIGTERM for that; a
# parent already gone before the signal was armed is caught by its pid.
DIE_WITH_PARENT = f"""
import ctypes, os, signal
def _parent_died(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGTERM, _parent_died)
try:
    ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
if os.getppid() != int(os.environ["{PARENT_ENV}"]):
    _parent_died()
"""

_CHILD = DIE_WITH_PARENT + """
import json, sys
from torch.utils.cpp_extension import load
load(**json.loads(sys.argv[1]))
"""


def load(name: str, sources: Sequence[str], build_directory: str | os.PathLike, *,
         extra_cuda_cflags: Sequence[str] = (), extra_cflags: Sequence[str] = (), verbose: bool = False,
         limit_s: float | None = None):
    """``torch.utils.cpp_extension.load`` with a time limit and an honest lock; returns the imported module."""
    from torch.utils.cpp_extension import load as torch_load

    build_dir = Path(build_directory)
    key = (name, str(build_dir))
    if key in _failed:
        raise BuildError(f"{name} failed to build earlier in this process: {_failed[key]}")
    limit = time_limit_s() if limit_s is None else limit_s
    kwargs = {"name": name, "sources": list(sources), "extra_cuda_cflags": list(extra_cuda_cflags),
              "extra_cflags": list(extra_cflags), "build_directory": str(build_dir), "verbose": True}
    t0 = time.perf_counter()
    entry: dict[str, Any] = {"name": name, "seconds": None, "status": "error", "cleared_stale_lock": False}
    _builds.append(entry)
    try:
        with BuildLock(build_dir, wait_s=limit) as lock:
            entry["cleared_stale_lock"] = lock.cleared_stale
            try:
                run_bounded([sys.executable, "-c", _CHILD, json.dumps(kwargs)], build_dir / LOG_NAME, limit,
                            env=dict(os.environ, **{PARENT_ENV: str(os.getpid())}))
            except BuildError as e:
                (build_dir / TORCH_LOCK_NAME).unlink(missing_ok=True)  # the killed child's; we still hold the flock
                _failed[key] = e
                raise
            module = torch_load(**dict(kwargs, verbose=verbose))  # ninja finds the objects up to date
        entry["status"] = "ok"
        return module
    finally:  # a failed build's time goes into its record too
        entry["seconds"] = round(time.perf_counter() - t0, 2)
