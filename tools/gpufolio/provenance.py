"""Where a number came from: the commit, whether the tree was dirty, and a digest of each project's sources.

Three sources, in order: a live git checkout (gitpython); the variables GPUFOLIO_GIT_SHA / GPUFOLIO_GIT_DIRTY /
GPUFOLIO_GIT_BRANCH; a provenance file written by ``python -m gpufolio provenance`` before the tree is copied to a
GPU box that has no ``.git``. Nothing is invented: with none of them the SHA is null, ``source`` is "unknown",
and the site will not count such records.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from . import PROJECTS
from .store import repo_root, write_atomic

PROVENANCE_FILE = Path(".gpufolio") / "provenance.json"
SHA_RE = re.compile(r"^[0-9a-f]{40}$")

# Files a project's results depend on: its own sources, not its results, tests or prose.
SOURCE_SUFFIXES = {".py", ".cu", ".cuh", ".h", ".hpp", ".cpp", ".c", ".sh"}
SKIP_DIRS = {"results", "tests", "evidence", "__pycache__", ".build", "notes"}
# A project whose benchmark imports another project's code depends on that code: the paths it imports (a file,
# or a folder of them), not the other project's own bench script, tunes or plots, so that editing those does
# not mark this project's runs stale.
DEPENDS_ON = {"oss_pr_notes": {"fused_kernels": ("__init__.py", "ops")},
              "inference_engine": {"flash_attention": ("__init__.py", "attention.py", "kernels")}}


def _walk(path: Path) -> list[Path]:
    """Source files under ``path`` (a folder, or one file), in a stable order."""
    if path.is_file():
        return [path] if path.suffix in SOURCE_SUFFIXES else []
    files = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        files += [Path(dirpath) / f for f in sorted(filenames) if Path(f).suffix in SOURCE_SUFFIXES]
    return files


def source_files(project: str, root: Path | None = None) -> list[Path]:
    if project not in PROJECTS:
        raise KeyError(f"unknown project {project!r}")
    base = (root or repo_root()) / "projects"
    files = _walk(base / project)
    for dep, paths in DEPENDS_ON.get(project, {}).items():
        for rel in paths:
            files += _walk(base / dep / rel)
    return files


def is_source_path(project: str, path: str) -> bool:
    """Whether a repository-relative path (posix) is one of ``project``'s source files by the rule
    ``source_files`` walks; true also for a file deleted since, which the walk can no longer see."""
    parts = PurePosixPath(path).parts
    if len(parts) < 3 or parts[0] != "projects" or PurePosixPath(path).suffix not in SOURCE_SUFFIXES:
        return False
    owner, rest = parts[1], parts[2:]
    if any(d in SKIP_DIRS or d.startswith(".") for d in rest[:-1]):
        return False
    if owner == project:
        return True
    return any(rest[:len(PurePosixPath(rel).parts)] == PurePosixPath(rel).parts
               for rel in DEPENDS_ON.get(project, {}).get(owner, ()))


def source_digest(project: str, root: Path | None = None) -> str:
    """sha256 over (relative path, content) of the project's source files; stable across machines."""
    root = root or repo_root()
    h = hashlib.sha256()
    for path in source_files(project, root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


class StaleCheck:
    """``check(project, git)`` -> whether a record (its ``git`` block) was measured on sources that have changed.

    Fresh when the record's source digest equals the tree's. When they differ and git knows the record's
    commit, stale only if one of the project's source files (by today's rule) changed between that commit and
    the working tree: a digest can also differ because the rule itself was narrowed, and then nothing the
    numbers depend on has moved. No git, an unknown commit, or a record from a dirty tree: the digest decides."""

    def __init__(self, root: Path | None = None):
        self.root = root or repo_root()
        self._digests: dict[str, str] = {}
        self._changed: dict[str, set[str] | None] = {}
        self._verdicts: dict[tuple, bool] = {}  # the site asks once per metric row: many rows share a run
        self._repo = _open_repo(self.root)

    def __call__(self, project: str, git: dict[str, Any]) -> bool:
        recorded = git.get("source_digest")
        if not recorded:
            return False  # nothing to compare: unknown, not stale
        clean = git.get("dirty") is not None and git.get("dirty") == False  # noqa: E712 (numpy bools from a frame)
        key = (project, recorded, git.get("sha"), clean)
        if key not in self._verdicts:
            self._verdicts[key] = self._judge(project, recorded, git.get("sha"), clean)
        return self._verdicts[key]

    def _judge(self, project: str, recorded: str, sha: Any, clean: bool) -> bool:
        if project not in self._digests:
            self._digests[project] = source_digest(project, self.root)
        if recorded == self._digests[project]:
            return False
        changed = self._changed_since(sha) if clean else None
        return True if changed is None else any(is_source_path(project, p) for p in changed)

    def _changed_since(self, sha: Any) -> set[str] | None:
        if self._repo is None or not (isinstance(sha, str) and SHA_RE.match(sha)):
            return None
        if sha not in self._changed:
            import git  # importable: _open_repo found a repository with it

            try:
                names = self._repo.git.diff("--name-only", sha).splitlines() + list(self._repo.untracked_files)
                self._changed[sha] = set(names)
            except git.GitCommandError:  # an unknown commit (a shallow clone, another repository)
                self._changed[sha] = None
        return self._changed[sha]


def _open_repo(root: Path):
    """The git repository at ``root``, or None without gitpython (the GPU box) or without a checkout."""
    try:
        import git  # gitpython
    except ImportError:
        return None
    try:
        return git.Repo(root, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def _from_git(root: Path) -> dict[str, Any] | None:
    repo = _open_repo(root)
    if repo is None:
        return None
    try:
        sha = repo.head.commit.hexsha
    except ValueError:  # no commits yet
        return None
    branch = None if repo.head.is_detached else repo.active_branch.name
    dirty = repo.is_dirty(untracked_files=False)
    diff_digest = hashlib.sha256(repo.git.diff("HEAD").encode()).hexdigest()[:16] if dirty else None
    return {"sha": sha, "branch": branch, "dirty": dirty, "diff_digest": diff_digest, "source": "git"}


def _parse_bool(text: str) -> bool | None:
    low = text.strip().lower()
    if low in {"1", "true", "yes"}:
        return True
    if low in {"0", "false", "no"}:
        return False
    return None


def _from_env() -> dict[str, Any] | None:
    sha = os.environ.get("GPUFOLIO_GIT_SHA", "").strip().lower()
    if not sha:
        return None
    if not SHA_RE.match(sha):
        raise ValueError(f"GPUFOLIO_GIT_SHA must be a full 40-hex SHA, got {sha!r}")
    return {
        "sha": sha,
        "branch": os.environ.get("GPUFOLIO_GIT_BRANCH") or None,
        "dirty": _parse_bool(os.environ.get("GPUFOLIO_GIT_DIRTY", "")),
        "diff_digest": os.environ.get("GPUFOLIO_GIT_DIFF_DIGEST") or None,
        "source": "env",
    }


def _from_file(root: Path) -> dict[str, Any] | None:
    path = root / PROVENANCE_FILE
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    sha = data.get("sha")
    if not (isinstance(sha, str) and SHA_RE.match(sha)):
        raise ValueError(f"{path}: sha must be a full 40-hex SHA")
    return {k: data.get(k) for k in ("sha", "branch", "dirty", "diff_digest")} | {"source": "provenance_file"}


def git_info(root: Path | None = None) -> dict[str, Any]:
    """The commit a run is measured at; ``source`` says how we know. Unknown stays unknown (sha None)."""
    root = root or repo_root()
    for found in (_from_git(root), _from_env(), _from_file(root)):
        if found:
            return found
    return {"sha": None, "branch": None, "dirty": None, "diff_digest": None, "source": "unknown"}


def write_provenance_file(root: Path | None = None) -> Path:
    """Record the live checkout's commit for a copy of the tree that will travel without ``.git``."""
    root = root or repo_root()
    info = _from_git(root)
    if info is None:
        raise RuntimeError(f"{root} is not a git checkout with a commit: nothing to record")
    info = {k: v for k, v in info.items() if k != "source"}
    info["written_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    info["source_digests"] = {p: source_digest(p, root) for p in PROJECTS}
    path = root / PROVENANCE_FILE
    write_atomic(path, json.dumps(info, indent=2) + "\n")
    return path
