"""The HTML lint the mkdocs hook runs on every page: Markdown that renders on GitHub but not here, and words of
the working process a reader should never see. Each check is shown failing on a fixture and passing on the
fixed form; a strict MkDocs build of the GitHub-only fixture fails; the committed writeups are clean."""
from __future__ import annotations

import re
from pathlib import Path

import markdown
import pytest
import yaml
from gpufolio.site import build, lint
from mkdocs.exceptions import Abort

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tools" / "tests" / "fixtures" / "site_lint"
EXTENSIONS = ["admonition", "attr_list", "md_in_html", "tables", "pymdownx.details", "pymdownx.superfences"]

# Words about how the work was organised, never about what was measured. Each must be caught by the lint.
PROCESS_WORDS = [
    "the issue's bar",
    "round 1",
    "GPU round B",
    "rounds 2-3",
    "the final round",
    "this session",
    "the first session",
    "session 2",
    "GPU.md",
    "one GPU is lent",
    "the device budget",
    "a helper did it",
    "the lead decided",
    "issue 18",
    "OUTDIR=/tmp/out bash gpu.sh",
]
# Ordinary words that look close and must pass.
FINE = ["the `tests` nox session runs pytest", "the lead over the baseline grows", "a helper function", "rounding of a K-term sum",
        "round-trip", "the surrounding code", "projects/x/evidence/out.txt", "OUT_DIR=evidence bash gpu.sh"]


def _html(path: Path, stand_ins: bool = False) -> str:
    """``stand_ins``: markers replaced by what they resolve to (a number, a table), as the site build does."""
    text = path.read_text(encoding="utf-8")
    if stand_ins:
        text = re.sub(r"<!--\s*result:.*?-->", "**1.0 TFLOP/s**", text, flags=re.S)
        text = re.sub(r"<!--\s*results-table:.*?-->", "| a | b |\n| :-- | --: |\n| x | 1 |", text, flags=re.S)
    return markdown.markdown(text, extensions=EXTENSIONS)


def test_github_only_markdown_is_caught():
    problems = lint.unrendered_markdown(_html(FIXTURES / "github_only.md"))
    assert len(problems) == 2, problems
    assert "table row rendered as text" in problems[0] and "list item ran into" in problems[1]


def test_blank_lines_before_tables_and_lists_pass():
    assert lint.unrendered_markdown(_html(FIXTURES / "fixed.md")) == []


@pytest.mark.parametrize("text", PROCESS_WORDS)
def test_process_words_are_caught(text):
    assert lint.process_words(f"Measured after {text}, on the H200.")


@pytest.mark.parametrize("text", FINE)
def test_ordinary_words_pass(text):
    assert lint.process_words(text) == []


def test_style_and_script_are_not_text():
    assert lint.process_words(lint.page_text("<style>.form-helper{}</style><p>ok</p><!-- round 1 -->")) == []


def test_strict_build_fails_on_the_github_only_fixture_and_on_process_words(tmp_path):
    """The hook in a minimal MkDocs site: the GitHub-only page and the page of process words (and a /tmp path) fail
    the strict build, the fixed one passes."""
    for name, ok in (("github_only.md", False), ("process_words.md", False), ("fixed.md", True)):
        docs = tmp_path / name / "docs"
        docs.mkdir(parents=True)
        (docs / "index.md").write_text((FIXTURES / name).read_text(encoding="utf-8"), encoding="utf-8")
        (docs / ".nav.yml").write_text(yaml.safe_dump([{"Home": "index.md"}]), encoding="utf-8")
        config = tmp_path / name / "mkdocs.yml"
        config.write_text(yaml.safe_dump({"site_name": "lint", "docs_dir": "docs", "markdown_extensions": EXTENSIONS,
                                          "hooks": [str(REPO / "tools/gpufolio/site/mkdocs_hooks.py")]}))
        if ok:
            build.mkdocs_build(config, site_dir=tmp_path / name / "site")
        else:
            with pytest.raises(Abort, match="warnings"):
                build.mkdocs_build(config, site_dir=tmp_path / name / "site")


def test_committed_writeups_are_clean():
    """Every writeup the site shows, rendered with the site's extensions (markers stay HTML comments)."""
    paths = sorted(REPO.glob("projects/*/README.md")) + sorted(REPO.glob("projects/*/*/README.md")) \
        + sorted(REPO.glob("projects/*/evidence/**/*.md"))
    assert len(paths) >= 7
    found = []
    for path in paths:
        page = _html(path, stand_ins=True)
        rel = path.relative_to(REPO)
        found += [f"{rel}: {p}" for p in lint.unrendered_markdown(page) + lint.process_words(lint.page_text(page))]
    assert found == [], "\n".join(found)
