"""MkDocs hook: take the nav and the site configuration from the render step, and lint every rendered page.

The nav depends on data (the OSS-PR notes add a page per note), so the tested render step writes it
(``<docs_dir>/.nav.yml``) and mkdocs.yml holds no copy that could drift. The same step resolves the site
configuration (``gpufolio.yml``, else the git remote) into ``<docs_dir>/.site.yml``: the repository link, the
published address, the author. Without a render there is no nav file, and the build fails here with the command
to run instead of MkDocs inventing an alphabetical nav.

Chart images are marked as drawn at twice their display size. Every page's HTML is then checked for Markdown that did not render and for internal process words
(``gpufolio.site.lint``); in strict mode each finding fails the build, naming the page.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority, get_plugin_logger

from gpufolio.site import lint
from gpufolio.site.about import SITE_FILE

log = get_plugin_logger("gpufolio")
NAV_FILE = ".nav.yml"
# Charts are drawn at twice their display size (gpufolio.site.charts): srcset "2x" shows them at half their
# pixel width, sharp on high-density screens and the intended size on others.
CHART_PARAGRAPH = re.compile(r'<p>(<img[^>]*srcset=[^>]*>\s*</p>)')
CHART_IMG = re.compile(r'<img(?![^>]*srcset)([^>]*?)src="([^"]*generated/charts/[^"]+\.png)"')


@event_priority(100)  # before the blog and feed plugins read repo_url and site_url
def on_config(config, **kwargs):
    docs = Path(config["docs_dir"])
    path = docs / NAV_FILE
    if not path.is_file():
        raise PluginError(f"{path} is missing: render first (`python -m gpufolio site` or `nox -s site`)")
    config["nav"] = yaml.safe_load(path.read_text(encoding="utf-8"))
    site = yaml.safe_load((docs / SITE_FILE).read_text(encoding="utf-8")) if (docs / SITE_FILE).is_file() else {}
    config["repo_url"] = site.get("repo_url")
    config["repo_name"] = site.get("repo_name")
    config["site_url"] = site.get("site_url")
    if site.get("author"):
        config["site_author"] = site["author"]
    config["extra"]["gpufolio"] = site
    if not config["site_url"] and "rss" in config["plugins"]:
        # A feed is made of absolute links: without a published address there is nothing true to put in it.
        config["plugins"]["rss"].config.enabled = False
        log.info("no site_url (gpufolio.yml or a GitHub remote): the worklog feed is not written")
    return config


def on_page_content(html, page, **kwargs):
    where = page.file.src_uri
    html = CHART_IMG.sub(lambda m: f'<img{m.group(1)}src="{m.group(2)}" srcset="{m.group(2)} 2x"', html)
    html = CHART_PARAGRAPH.sub(r'<p class="gf-chart">\1', html)  # a phone scrolls a chart instead of shrinking it
    for problem in lint.unrendered_markdown(html):
        log.warning(f"{where}: {problem}")
    for problem in lint.process_words(lint.page_text(html)):
        log.warning(f"{where}: {problem}")
    return html
