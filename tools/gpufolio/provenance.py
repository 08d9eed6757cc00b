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
from pathlib import Path
from typing import Any

from . import PROJECTS, sources
from .store import repo_root, write_atomic

PROVENANCE_FILE = Path(".gpufolio") / "provenance.json"
SHA_RE = re.compile(r"^[0-9a-f]{40}$")


def _check_project(project: str) -> None:
    if project not in PROJECTS:
        raise KeyError(f"unknown project {project!r}")


def source_files(project: str, root: Path | None = None) -> list[Path]:
    """The files whose content changes ``project``'s numbers (``sources``' rule), in the working tree."""
    _check_project(project)
    root = root or repo_root()
    return [root / p for p in sources.product_paths(project, sources.working_tree(root, _open_repo(root)), root)]


def source_digest(project: str, root: Path | None = None) -> str:
    """What each record stamps: the digest of ``source_files``' contents."""
    _check_project(project)
    root = root or repo_root()
    return sources.digest(project, sources.working_tree(root, _open_repo(root)), root)


class StaleCheck:
    """``check(project, git)`` -> whether a record (its ``git`` block) was measured on sources that have changed.

    Fresh when the record's source digest equals the tree's. When they differ and git knows the record's clean
    commit, today's rule is applied to that commit and its digest compared: a digest also differs when the rule
    itself changed (files now counted or no longer counted), and then only a change in what today's rule counts
    makes the record stale. No git, an unknown commit, or a record from a dirty tree: the digest decides."""

    def __init__(self, root: Path | None = None):
        self.root = root or repo_root()
        self._repo = _open_repo(self.root)
        self._tree = sources.working_tree(self.root, self._repo)
        self._digests: dict[tuple[str, str | None], str | None] = {}
        self._verdicts: dict[tuple, bool] = {}  # the site asks once per metric row: many rows share a run

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
        today = self._digest_at(project, None)
        if recorded == today:
            return False
        then = self._digest_at(project, sha) if clean else None
        return then is None or then != today

    def _digest_at(self, project: str, sha: Any) -> str | None:
        """Today's rule over the working tree (sha None) or over a commit; None for a commit git cannot show."""
        key = (project, sha)
        if key not in self._digests:
            if sha is None:
                self._digests[key] = sources.digest(project, self._tree, self.root)
            elif self._repo is None or not (isinstance(sha, str) and SHA_RE.match(sha)):
                self._digests[key] = None
            else:
                import git  # importable: _open_repo found a repository with it

                try:
                    self._digests[key] = sources.digest(project, sources.commit_tree(self._repo, sha), self.root)
                except (ValueError, git.BadName, git.BadObject):  # a commit this repository lacks (shallow clone)
                    self._digests[key] = None
        return self._digests[key]


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


def diff_digest_of(diff: str) -> str:
    """What a dirty record stamps: the digest of ``git diff HEAD``'s text (gitpython drops its final newline)."""
    return hashlib.sha256(diff.rstrip("\n").encode()).hexdigest()[:16]


def _knows_commit(root: Path, sha: str) -> bool:
    import gitdb.exc

    repo = _open_repo(root)
    try:
        return repo is not None and repo.commit(sha) is not None
    except (ValueError, gitdb.exc.BadName, gitdb.exc.BadObject):
        return False


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
    diff_digest = diff_digest_of(repo.git.diff("HEAD")) if dirty else None
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


def _read_file(root: Path) -> dict[str, Any] | None:
    """The provenance file's contents (its sha checked), or None without one."""
    path = root / PROVENANCE_FILE
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    sha = data.get("sha")
    if not (isinstance(sha, str) and SHA_RE.match(sha)):
        raise ValueError(f"{path}: sha must be a full 40-hex SHA")
    return data


def _from_file(data: dict[str, Any] | None) -> dict[str, Any] | None:
    if data is None:
        return None
    return {k: data.get(k) for k in ("sha", "branch", "dirty", "diff_digest")} | {"source": "provenance_file"}


def _file_describes_tree(root: Path, data: dict[str, Any], from_git: dict[str, Any]) -> bool:
    """Whether the provenance file, not a ``.git`` found in the tree, tells where this tree came from: git says
    dirty at another commit and does not even know the file's commit (a copy of the tree landed beside a stale
    ``.git``, as on a GPU box that kept an older copy's), and every project's sources hash to what the file
    recorded when it was written. In a live checkout the file's commit is known, and git stays the word: its
    uncommitted edits may be to the harness, which no project's digest covers."""
    if not from_git["dirty"] or from_git["sha"] == data["sha"] or _knows_commit(root, data["sha"]):
        return False
    recorded = data.get("source_digests") or {}
    return set(recorded) == set(PROJECTS) and all(recorded[p] == source_digest(p, root) for p in PROJECTS)


def git_info(root: Path | None = None) -> dict[str, Any]:
    """The commit a run is measured at; ``source`` says how we know. Unknown stays unknown (sha None).
    Git first, then the environment, then the provenance file; the file wins over a ``.git`` that disagrees
    with it when the tree's sources are exactly the ones the file describes (``_file_describes_tree``)."""
    root = root or repo_root()
    from_git = _from_git(root)
    if from_git and not from_git["dirty"]:
        return from_git
    data = _read_file(root)
    if from_git and data and _file_describes_tree(root, data, from_git):
        return _from_file(data)
    for found in (from_git, _from_env(), _from_file(data)):
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
