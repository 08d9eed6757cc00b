"""The person and the repository behind the site, from the site configuration (``config``): the About page, the
author line on the home page, the blog's author file, and ``.site.yml`` that the mkdocs hook applies."""
from __future__ import annotations

import html

import yaml

from . import config as C
from .context import RenderCtx

ABOUT_PAGE = "about.md"
AUTHOR_ID = "author"  # the one key of worklog/.authors.yml, named in every post's front matter
AUTHORS_FILE = "worklog/.authors.yml"
SITE_FILE = ".site.yml"  # read by mkdocs_hooks.on_config
AVATAR = "generated/author.svg"  # the blog shows an avatar beside the author: initials, drawn here (no request)


def author_line(site: C.Site, page: str = "index.md") -> str:
    """One line under a page title: who made it and how to reach them; without a name, where to set one."""
    a = site.author
    if not a.name:
        return f"*Author not configured yet: see [About]({_rel(page)}).*"
    links = " · ".join(f"[{label}]({href})" for label, href in a.link_items())
    return f"By **[{a.name}]({_rel(page)})**" + (f", {a.bio}" if a.bio else "") + (f" — {links}" if links else "")


def _rel(page: str) -> str:
    return "../" * page.count("/") + ABOUT_PAGE


def render(ctx: RenderCtx) -> None:
    site = ctx.site
    ctx.write(ABOUT_PAGE, about_page(site))
    ctx.write(SITE_FILE, yaml.safe_dump(hook_config(site), sort_keys=False))
    authors = {}
    if site.author.name:
        ctx.write(AVATAR, initials_svg(site.author.name))
        authors[AUTHOR_ID] = {"name": site.author.name, "description": site.author.bio or "",
                              "avatar": AVATAR, "url": ABOUT_PAGE}
    ctx.write(AUTHORS_FILE, yaml.safe_dump({"authors": authors}, sort_keys=False, allow_unicode=True))


def initials_svg(name: str) -> str:
    initials = "".join(w[0] for w in name.split()[:2]).upper()
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">'
            '<circle cx="32" cy="32" r="32" fill="#3949ab"/><text x="32" y="41" font-family="sans-serif" '
            f'font-size="26" font-weight="700" fill="#fff" text-anchor="middle">{html.escape(initials)}</text></svg>')


def hook_config(site: C.Site) -> dict:
    """What the mkdocs hook sets in MkDocs' config: repository, published address, author (None when unset)."""
    return {"repo_url": site.repo_url, "repo_name": site.repo_name, "site_url": site.site_url,
            "author": site.author.name, "gpu": site.gpu}


def about_page(site: C.Site) -> str:
    a = site.author
    parts = ["# About", ""]
    if a.name:
        parts += [f"**{a.name}**" + (f" — {a.bio}" if a.bio else ""), ""]
        items = a.link_items()
        if items:
            parts += [f"- {label}: [{href.removeprefix('mailto:')}]({href})" for label, href in items] + [""]
    else:
        parts += ['!!! note "No author configured"',
                  "    This site does not name its author yet. Set `author.name`, `author.bio` and `author.links`",
                  "    (`github`, `linkedin`, `email`, `cv`) in `gpufolio.yml` at the repository root and rebuild.", ""]
    parts += ["## The hardware", "",
              f"Every headline number on this site was measured on {site.gpu}, against the baseline measured in the "
              "same run on the same GPU. A record from another GPU model is never compared with this one's "
              "baselines.", "",
              "## The sources", ""]
    if site.repo_url:
        parts += [f"The code, the benchmark records and this site's generator: [{site.repo_name}]({site.repo_url}). "
                  "Every number links to its run; every run names its commit.", ""]
    else:
        parts += ["No public repository is configured, so commits are shown as plain SHAs. Set `repository` in "
                  "`gpufolio.yml` (or a GitHub `origin` remote) to link each commit and source file.", ""]
    return "\n".join(parts)
