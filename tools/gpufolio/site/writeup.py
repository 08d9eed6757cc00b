"""A project's README.md or a worklog entry, made into a docs page: markers resolved, relative links fixed.

Both are written for GitHub (links to ``bench.py``, ``../other_project/README.md``, images next to them). On
the site those paths do not exist, and a broken link fails ``mkdocs build --strict`` with no hint of where it
came from. So: links to a project's README go to its page, images are copied next to the generated pages,
every other repository file links to GitHub, and a missing image fails naming file and line. A target that
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
            return f"{bang}[{label}]({_target(target, bool(bang), src, page, ctx, where)}{title})"

        line = LINK_RE.sub(sub, line)
        ref = REF_RE.match(line)
        if ref:
            line = ref.group(1) + _target(ref.group(2), False, src, page, ctx, f"{display}:{i}") + ref.group(3)
        out.append(line)
    return "\n".join(out)


def _target(target: str, image: bool, src: Path, page: str, ctx: RenderCtx, where: str) -> str:
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
    m = re.match(r"^projects/([a-z_]+)/README\.md$", repo_rel)
    if m and m.group(1) in R.projects():
        return R.rel_link(page, R.project_page(m.group(1))) + (f"#{anchor}" if anchor else "")
    m = re.match(r"^worklog/([^/]+\.md)$", repo_rel)
    if m:
        return R.rel_link(page, f"worklog/posts/{m.group(1)}") + (f"#{anchor}" if anchor else "")
    return ctx.site.blob_url(repo_rel) + (f"#{anchor}" if anchor else "")


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
