"""A project's README.md or a worklog entry, made into a docs page: markers resolved, relative links fixed.

Both are written for GitHub (links to ``bench.py``, ``../other_project/README.md``, images next to them). On
the site those paths do not exist, and a broken link fails ``mkdocs build --strict`` with no hint of where it
came from. So: links to a project's README go to its page, images are copied next to the generated pages,
every other repository file links to the configured repository (plain text when none is configured), and a
missing image fails naming file and line. A target that
is not a repository file is a link to a site page (``../../runs.md`` from a worklog post), left for MkDocs'
strict link check.
"""
from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path

from . import markers as M
from . import records as R
from .context import RenderCtx

LINK_RE = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)((?:\s+\"[^\"]*\")?)\)")
REF_RE = re.compile(r"^(\s*\[[^\]]+\]:\s*)(\S+)(.*)$")
H1_RE = re.compile(r"^#\s+(.+?)\s*#*\s*$")


class WriteupError(ValueError):
    """A writeup problem the build cannot paper over; str() is ``file:line: what``."""


def split_h1(text: str) -> tuple[str | None, str]:
    """The first ``# Title`` line (outside front matter) and the text without it."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = H1_RE.match(line)
        if m:
            return m.group(1), "\n".join(lines[:i] + lines[i + 1:]).lstrip("\n")
        if line.strip() and not line.startswith("<!--"):
            break
    return None, text


def _is_external(target: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)) or target.startswith(("#", "/"))


def fix_links(text: str, src: Path, page: str, ctx: RenderCtx, display: str) -> str:
    """Rewrite relative links of ``text`` (read from ``src``) for the docs page ``page``."""
    out, fenced = [], False
    for i, line in enumerate(text.split("\n"), 1):
        if M.FENCE_RE.match(line):
            fenced = not fenced
        if fenced or M.FENCE_RE.match(line):
            out.append(line)
            continue

        def sub(m: re.Match, where: str = f"{display}:{i}") -> str:
            bang, label, target, title = m.groups()
            new = _target(target, bool(bang), src, page, ctx, where)
            return label if new is None else f"{bang}[{label}]({new}{title})"  # no repository: plain text

        line = LINK_RE.sub(sub, line)
        ref = REF_RE.match(line)
        if ref:
            new = _target(ref.group(2), False, src, page, ctx, f"{display}:{i}")
            line = "" if new is None else ref.group(1) + new + ref.group(3)
        out.append(line)
    return "\n".join(out)


def _target(target: str, image: bool, src: Path, page: str, ctx: RenderCtx, where: str) -> str | None:
    """The link target on the site; None for a repository file when no repository is configured."""
    if _is_external(target):
        return target
    path_part, _, anchor = target.partition("#")
    resolved = (src.parent / path_part).resolve()
    try:
        repo_rel = resolved.relative_to(ctx.repo_root.resolve()).as_posix()
    except ValueError:
        repo_rel = None
    if repo_rel is None or not resolved.exists():
        # Not a file of the repository: a link to a site page (../../runs.md from a worklog post), which
        # MkDocs checks in strict mode. An image must exist one way or the other.
        if image and not (ctx.docs_dir / posixpath.dirname(page) / path_part).resolve().is_file():
            raise WriteupError(f"{where}: image {target!r} does not exist")
        return target
    if image:
        dest = f"generated/files/{repo_rel}"
        (ctx.docs_dir / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(resolved, ctx.docs_dir / dest)
        return R.rel_link(page, dest)
    on_site = page_of(repo_rel)
    if on_site:
        return R.rel_link(page, on_site) + (f"#{anchor}" if anchor else "")
    url = ctx.site.blob_url(repo_rel)
    return None if url is None else url + (f"#{anchor}" if anchor else "")


# Markdown of a project that is not a writeup page: the OSS-PR notes have their own pages (gpufolio.prnotes),
# tests and results are not prose.
_NOT_WRITEUPS = re.compile(r"^projects/[a-z_]+/(?:notes|tests|results)/")


def page_of(repo_rel: str) -> str | None:
    """The docs page a repository Markdown file is shown on: a project's README is its project page, any other
    Markdown under ``projects/<p>/`` a page below it (``bf16/README.md`` -> ``projects/gemm_ladder/bf16.md``),
    a worklog entry its post. None for anything else."""
    m = re.match(r"^projects/([a-z_]+)/README\.md$", repo_rel)
    if m and m.group(1) in R.projects():
        return R.project_page(m.group(1))
    m = re.match(r"^worklog/([^/]+\.md)$", repo_rel)
    if m:
        return f"worklog/posts/{m.group(1)}"
    m = re.match(r"^projects/([a-z_]+)/(.+)\.md$", repo_rel)
    if m and m.group(1) in R.projects() and not _NOT_WRITEUPS.match(repo_rel):
        return f"projects/{m.group(1)}/{m.group(2).removesuffix('/README')}.md"
    return None


def project_writeups(repo_root: Path, project: str) -> list[str]:
    """Repository paths of a project's writeups besides its README (``bf16/README.md``, ``evidence/*.md``):
    every one gets a page, so nothing written about the work is only reachable as a link into the repository."""
    base = repo_root / "projects" / project
    if not base.is_dir():
        return []
    out = []
    for path in sorted(base.rglob("*.md")):
        rel = path.relative_to(repo_root).as_posix()
        if rel != f"projects/{project}/README.md" and page_of(rel):
            out.append(rel)
    return out


# Sections of a long writeup that stay open: what was measured and where it loses. The rest (how it is built,
# each step's story, what remains) is one click away, so a reader scans results first.
OPEN_SECTIONS = re.compile(r"result|summary|headline|where (?:we|it) lose|at a glance", re.I)
LONG_WRITEUP_LINES = 80
H2_RE = re.compile(r"^##\s+(.+?)\s*#*\s*$")


def collapse_details(body: str) -> str:
    """A long writeup with each detail section's body folded into a collapsed admonition under its heading
    (headings stay, so the table of contents and every anchor still work). Short writeups are left alone."""
    lines = body.split("\n")
    if sum(1 for line in lines if line.strip()) < LONG_WRITEUP_LINES:
        return body
    out, section, fenced, title = [], [], False, None

    def flush():
        if title is not None and not OPEN_SECTIONS.search(title) and any(x.strip() for x in section):
            text = "\n".join(section).strip("\n")
            out.extend(["", '??? note "Details"', "", *("    " + x if x.strip() else "" for x in text.split("\n")), ""])
        else:
            out.extend(section)

    for line in lines:
        if M.FENCE_RE.match(line):
            fenced = not fenced
        m = None if fenced else H2_RE.match(line)
        if m:
            flush()
            out.append(line)
            section, title = [], m.group(1)
        else:
            section.append(line)
    flush()
    return "\n".join(out)


def render(src: Path, page: str, ctx: RenderCtx, readme: bool = True) -> tuple[str | None, str]:
    """(title, body) of a writeup for ``page``: links fixed, markers resolved; a README's H1 split off (the
    page writes its own), a worklog post keeps its H1 (the blog's post title)."""
    display = _display(src, ctx)
    text = src.read_text(encoding="utf-8")
    text = fix_links(text, src, page, ctx, display)
    text = M.resolve_text(text, display, ctx.marker_ctx(page))
    return split_h1(text) if readme else (None, text)


def _display(src: Path, ctx: RenderCtx) -> str:
    try:
        return src.resolve().relative_to(ctx.repo_root.resolve()).as_posix()
    except ValueError:
        return str(src)
