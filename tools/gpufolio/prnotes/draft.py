"""Draft a note from a local clone with gitpython: the branch's commits and its diffstat against the merge base.

    repo = open_clean_repo(path)                    # missing / not git / dirty -> DraftError
    branch, base = resolve(repo, "B"), resolve(...)  # unknown -> DraftError naming what exists
    meta, body = draft(path, "B", base="main")      # commits (sha, author, date, summary), files (+/-)

What git cannot know (hardware, how correctness was checked, the repro bench's run) is left as the
``FILL IN`` placeholder, which ``gpufolio check`` rejects until someone writes it.
"""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from .notes import PLACEHOLDER

_GITHUB_REMOTE = re.compile(r"github\.com[:/](?P<owner>[^/\s]+)/(?P<name>[^/\s]+?)(?:\.git)?/?$")


class DraftError(Exception):
    """One-line reason the draft cannot be made; the CLI prints it and exits non-zero."""


def open_clean_repo(path: Path):
    import git

    path = Path(path)
    if not path.exists():
        raise DraftError(f"no such directory: {path}")
    if not path.is_dir():
        raise DraftError(f"not a directory: {path}")
    try:
        repo = git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise DraftError(f"not a git repository: {path}") from None
    if repo.bare:
        raise DraftError(f"{path} is a bare repository: draft from a clone with a working tree")
    # The note describes committed work; uncommitted edits would not be in the diffstat it records.
    if repo.is_dirty(untracked_files=True):
        names = [line[3:] for line in repo.git.status("--porcelain").splitlines()]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        raise DraftError(f"working tree of {path} is dirty ({shown}): commit or stash first")
    return repo


def resolve(repo, name: str, what: str, allow_tags: bool = False):
    """A local branch, a remote-tracking branch (origin/x) or, for the base, a tag or commit: its commit."""
    for head in repo.heads:
        if head.name == name:
            return head.commit
    for remote in repo.remotes:
        for ref in remote.refs:
            if ref.name == name:
                return ref.commit
    if allow_tags:
        for tag in repo.tags:
            if tag.name == name:
                return tag.commit
        if re.fullmatch(r"[0-9a-f]{7,40}", name):
            try:
                return repo.commit(name)
            except Exception:  # gitpython raises BadName/ValueError for an unknown sha
                pass
    known = ", ".join(sorted(h.name for h in repo.heads)[:8]) or "none"
    raise DraftError(f"unknown {what} {name!r} in {repo.working_tree_dir} (local branches: {known})")


def upstream_repo(repo) -> str | None:
    """owner/name of the github.com remote called upstream, else origin, else any."""
    remotes = sorted(repo.remotes, key=lambda r: {"upstream": 0, "origin": 1}.get(r.name, 2))
    for remote in remotes:
        for url in remote.urls:
            m = _GITHUB_REMOTE.search(url)
            if m:
                return f"{m['owner']}/{m['name']}"
    return None


def diffstat(repo, base_commit, tip_commit) -> list[dict]:
    """Per-file insertions/deletions of tip vs base (``git diff --numstat -M``; binary files count 0)."""
    files = []
    for line in repo.git.diff("--numstat", "-M", base_commit.hexsha, tip_commit.hexsha).splitlines():
        ins, dels, path = line.split("\t", 2)
        files.append({"path": path, "insertions": int(ins) if ins != "-" else 0, "deletions": int(dels) if dels != "-" else 0})
    return files


def slug_for(branch: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", branch.split("/")[-1].lower()).strip("_")
    if not slug or not slug[0].isalpha():
        slug = f"pr_{slug}"
    return slug[:64] if len(slug) >= 3 else f"{slug}_note"


def draft(path: Path, branch: str, base: str = "main", upstream: str | None = None,
          slug: str | None = None, today: dt.date | None = None) -> tuple[dict, str]:
    """The front matter and body of a new ``idea`` note for ``branch`` of the clone at ``path``."""
    repo = open_clean_repo(path)
    tip = resolve(repo, branch, "branch")
    base_commit = resolve(repo, base, "base", allow_tags=True)
    merge_bases = repo.merge_base(base_commit, tip)
    if not merge_bases:
        raise DraftError(f"branch {branch!r} and base {base!r} share no history")
    mb = merge_bases[0]
    commits = list(repo.iter_commits(f"{mb.hexsha}..{tip.hexsha}", reverse=True))
    if not commits:
        raise DraftError(f"branch {branch!r} has no commits beyond its merge base with {base!r}")
    upstream = upstream or upstream_repo(repo)
    if not upstream:
        raise DraftError(f"no github.com remote in {path} names the upstream repository: pass --upstream OWNER/NAME")
    files = diffstat(repo, mb, tip)
    slug = slug or slug_for(branch)
    meta = {
        "schema_version": 1,
        "slug": slug,
        "title": commits[0].summary if len(commits[0].summary) >= 8 else f"{branch}: {commits[0].summary}",
        "status": "idea",
        "upstream": {"repo": upstream, "base_ref": mb.hexsha, "files": [f["path"] for f in files]},
        "pr": {"number": None, "url": None},
        "dates": {"created": (today or dt.date.today()).isoformat(), "opened": None, "merged": None, "closed": None},
        "change": {
            "branch": branch, "base": base,
            "files_changed": len(files),
            "insertions": sum(f["insertions"] for f in files),
            "deletions": sum(f["deletions"] for f in files),
            "files": files,
            "commits": [{"sha": c.hexsha[:12], "author": c.author.name or c.author.email or "unknown",
                         "date": c.authored_datetime.date().isoformat(), "summary": c.summary} for c in commits],
        },
        "hardware": PLACEHOLDER,
        "results": {"project": "oss_pr_notes", "bench": slug, "run_id": None, "before": "upstream", "after": "patched"},
        "correctness": f"{PLACEHOLDER}: how the patched output was compared with upstream's, at which tolerances.",
        "review_lessons": [],
    }
    messages = "\n".join(f"- `{c.hexsha[:12]}` {c.summary}" for c in commits)
    body = (f"\n## What changes\n\n{PLACEHOLDER}: the problem upstream, and what the branch does about it.\n\n"
            f"Commits on `{branch}` since `{mb.hexsha[:12]}` (merge base with `{base}`):\n\n{messages}\n\n"
            "## Before and after\n\nThe site fills this from the repro bench's records (`results` above).\n\n"
            "## Review\n\nWhat review asked for, and what changed because of it.\n")
    return meta, body


def render(meta: dict, body: str) -> str:
    import yaml

    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=110)
    return f"---\n{front}---\n{body}"


def write_draft(meta: dict, body: str, out_dir: Path) -> Path:
    """``<out_dir>/<slug>/note.md``; refuses to overwrite an existing note."""
    target = Path(out_dir) / meta["slug"] / "note.md"
    if target.exists():
        raise DraftError(f"{target} already exists: pick another --slug or remove it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(meta, body), encoding="utf-8")
    return target
