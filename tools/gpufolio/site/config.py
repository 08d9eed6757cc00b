"""Who is behind the site and where its sources live, read from one file: ``gpufolio.yml`` at the repository root.

    author:  {name, bio, links: {github, linkedin, email, cv}}
    repository: https://github.com/<owner>/<name>   (unset: ``git remote get-url origin`` when that is GitHub)
    site_url: where the site is published          (unset: the repository's GitHub Pages address)
    gpu: one NVIDIA H200                           (the statement every page makes about the hardware)

Nothing here has an invented default: with no repository, commit SHAs and source paths render as plain text (a
dead link is worse than none); with no author name, the About page says how to set one.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..provenance import SHA_RE

CONFIG_FILE = "gpufolio.yml"
GITHUB_RE = re.compile(r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)([\w.-]+)/([\w.-]+?)(?:\.git)?/?$")
LINK_KEYS = ("github", "linkedin", "email", "cv")


class ConfigError(ValueError):
    """gpufolio.yml is not what the site can use; str() names the file and the key."""


def github_repo_url(url: str | None) -> str | None:
    """``https://github.com/owner/name`` for any GitHub remote form (https, ssh, .git suffix); None otherwise."""
    m = GITHUB_RE.match((url or "").strip())
    return f"https://github.com/{m.group(1)}/{m.group(2)}" if m else None


def origin_url(repo_root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo_root), "remote", "get-url", "origin"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@dataclass(frozen=True)
class Author:
    name: str | None = None
    bio: str | None = None
    links: dict[str, str] = field(default_factory=dict)  # github, linkedin, email, cv (only those set)

    def link_items(self) -> list[tuple[str, str]]:
        """(label, href) in a fixed order; an email becomes a mailto: link."""
        labels = {"github": "GitHub", "linkedin": "LinkedIn", "email": "Email", "cv": "CV"}
        out = []
        for key in LINK_KEYS:
            value = self.links.get(key)
            if value:
                out.append((labels[key], f"mailto:{value}" if key == "email" and "@" in value
                            and not value.startswith("mailto:") else value))
        return out


@dataclass(frozen=True)
class Site:
    """The configured site: the author, the repository that commit and source links point at, the GPU statement."""

    repo_url: str | None = None
    author: Author = field(default_factory=Author)
    gpu: str = "one NVIDIA H200"
    site_url: str | None = None
    branch: str = "main"

    @property
    def repo_name(self) -> str | None:
        return self.repo_url.removeprefix("https://github.com/") if self.repo_url else None

    def commit_link(self, sha: str | None) -> str:
        """A commit as a link into the configured repository, or as plain text when there is none."""
        if not (isinstance(sha, str) and SHA_RE.match(sha)):
            return "unknown"
        if not self.repo_url:
            return f"`{sha[:7]}`"
        return f"[`{sha[:7]}`]({self.repo_url}/commit/{sha})"

    def blob_url(self, path: str) -> str | None:
        """A repository file on GitHub; None without a configured repository (the caller writes plain text)."""
        return f"{self.repo_url}/blob/{self.branch}/{path}" if self.repo_url else None


def load(repo_root: Path, path: Path | None = None) -> Site:
    """The site configuration of ``repo_root`` (``gpufolio.yml``; a missing file is an empty one)."""
    path = path or repo_root / CONFIG_FILE
    data = {}
    if path.is_file():
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"{path}: not YAML ({' '.join(str(e).split())})") from e
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of author, repository, site_url, gpu")
    unknown = set(data) - {"author", "repository", "site_url", "gpu"}
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    author = data.get("author") or {}
    links = author.get("links") or {}
    bad = set(links) - set(LINK_KEYS)
    if bad:
        raise ConfigError(f"{path}: author.links: unknown key(s) {', '.join(sorted(bad))} (known: {', '.join(LINK_KEYS)})")
    repo = data.get("repository")
    if repo:
        repo_url = github_repo_url(str(repo))
        if repo_url is None:
            raise ConfigError(f"{path}: repository {repo!r} is not a GitHub URL (https://github.com/<owner>/<name>)")
    else:
        repo_url = github_repo_url(origin_url(repo_root))
    site_url = data.get("site_url") or _pages_url(repo_url)
    return Site(repo_url=repo_url, site_url=site_url and str(site_url).rstrip("/") + "/",
                author=Author(name=_text(author.get("name")), bio=_text(author.get("bio")),
                              links={k: str(v).strip() for k, v in links.items() if v}),
                gpu=_text(data.get("gpu")) or Site.gpu)


def _text(value) -> str | None:
    return str(value).strip() or None if value is not None else None


def _pages_url(repo_url: str | None) -> str | None:
    """GitHub Pages' address of a repository (what ``mkdocs gh-deploy`` publishes to)."""
    if not repo_url:
        return None
    owner, name = repo_url.removeprefix("https://github.com/").split("/")
    if name.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{name}/"
