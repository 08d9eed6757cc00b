"""The repository's own worklog entries: each names the runs its numbers come from, and reads as a post."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from gpufolio.site import markers as M

REPO = Path(__file__).resolve().parents[3]
POSTS = sorted(p for p in (REPO / "worklog").glob("*.md") if re.match(r"^\d{4}-\d{2}-\d{2}-", p.name))
LIST_OR_TABLE = re.compile(r"^(?:[-*+]|\d{1,2}\.)\s|^\||^<!-- results-table")


def front(path: Path) -> dict:
    return M.front_matter(path.read_text(encoding="utf-8"), path.name)


@pytest.mark.parametrize("path", POSTS, ids=lambda p: p.name)
def test_every_marker_of_an_entry_names_its_run(path):
    text = path.read_text(encoding="utf-8")
    named = M.front_runs(front(path), path.name)
    floating = [f"{m.where}" for m, *_ in M.find(text, path.name)
                if "run" not in m.args and m.args["project"] not in named]
    assert not floating, f"markers that would follow the newest run: {floating}"


@pytest.mark.parametrize("path", POSTS, ids=lambda p: p.name)
def test_entry_is_a_post_with_excerpt_category_and_time(path):
    meta = front(path)
    assert meta.get("categories"), "no category"
    assert "<!-- more -->" in path.read_text(encoding="utf-8"), "no excerpt separator"
    assert re.match(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", str(meta["date"])), "the date carries no time"


def test_same_day_posts_have_distinct_times():
    when = [str(front(p)["date"]) for p in POSTS]
    assert len(when) == len(set(when))


@pytest.mark.parametrize("path", POSTS, ids=lambda p: p.name)
def test_a_blank_line_before_every_list_and_table(path):
    """Python-Markdown (MkDocs) needs it where GitHub does not: without it a table shows as raw | text."""
    lines, fenced, bad = path.read_text(encoding="utf-8").split("\n"), False, []
    body_start = 1 + lines[1:].index("---") + 1 if lines[0] == "---" else 0
    for i in range(body_start + 1, len(lines)):
        line, prev = lines[i], lines[i - 1]
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
        if fenced or not prev.strip() or not LIST_OR_TABLE.match(line):
            continue
        continues = LIST_OR_TABLE.match(prev) or prev.startswith((" ", "\t"))
        if not continues or (line.startswith("<!-- results-table") and prev.strip()):
            bad.append(f"{path.name}:{i + 1}")
    assert not bad, f"no blank line before a list or table: {bad}"


@pytest.mark.parametrize("path", POSTS, ids=lambda p: p.name)
def test_no_words_about_how_the_work_was_organised(path):
    lint = pytest.importorskip("gpufolio.site.lint")
    assert lint.process_words(path.read_text(encoding="utf-8")) == []


def test_front_matter_is_plain_yaml():
    for p in POSTS:
        text = p.read_text(encoding="utf-8")
        assert isinstance(yaml.safe_load(text.split("---\n")[1]), dict), p.name
