"""MkDocs hook: take the nav from the render step (``<docs_dir>/.nav.yml``).

The nav depends on data (the OSS-PR notes add a page per note), so the tested render step writes it and
mkdocs.yml holds no copy that could drift. Without a render there is no nav file, and the build fails here
with the command to run instead of MkDocs inventing an alphabetical nav.
"""
from __future__ import annotations

from pathlib import Path

import yaml
from mkdocs.exceptions import PluginError


def on_config(config, **kwargs):
    path = Path(config["docs_dir"]) / ".nav.yml"
    if not path.is_file():
        raise PluginError(f"{path} is missing: render first (`python -m gpufolio site` or `nox -s site`)")
    config["nav"] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return config
