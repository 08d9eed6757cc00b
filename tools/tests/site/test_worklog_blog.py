"""The worklog as a blog: every post has a category, an excerpt and a date-time no other post shares (the build
fails otherwise, naming the file); the index lists posts newest first by date and time, with reading time; an
RSS feed lists them with their own dates."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from gpufolio.site import pages
from gpufolio.site.writeup import WriteupError


def _post(tmp_path, name, front, body="Opening.\n\n<!-- more -->\n\nMore.\n"):
    path = tmp_path / "worklog" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\n\n# T\n\n{body}", encoding="utf-8")
    return path


def test_a_post_needs_a_category(tmp_path):
    with pytest.raises(WriteupError, match=r"^worklog/2026-12-01-x\.md:1: no categories"):
        pages.check_post(_post(tmp_path, "2026-12-01-x.md", "date: 2026-12-01\n"), tmp_path)


def test_a_post_needs_an_excerpt(tmp_path):
    path = _post(tmp_path, "2026-12-01-x.md", "date: 2026-12-01\ncategories:\n  - harness\n", body="No marker.\n")
    with pytest.raises(WriteupError, match="no excerpt"):
        pages.check_post(path, tmp_path)


def test_same_day_posts_need_distinct_times():
    pages.check_post_times({"2026-12-01 09:00:00": ["a.md"], "2026-12-01 18:00:00": ["b.md"]})
    with pytest.raises(WriteupError, match="2 posts dated 2026-12-01"):
        pages.check_post_times({"2026-12-01": ["a.md", "b.md"]})


def test_index_lists_posts_newest_first_with_reading_time_and_excerpts(built_site):
    _, site = built_site
    html = (site / "worklog" / "index.html").read_text(encoding="utf-8")
    titles = re.findall(r'<h2 id="[^"]+"><a class="toclink" href="[^"]+">([^<]+)', html)
    assert titles == ["A later entry on the same day", "A fixture worklog entry"]
    assert html.count("min read") == 2
    assert "Nothing more to say." not in html  # only the excerpt is on the index


def test_rss_feed_lists_posts_with_their_own_dates(built_site):
    _, site = built_site
    feed = ET.parse(site / "feed_rss_created.xml").getroot()
    items = feed.findall("./channel/item")
    assert [i.findtext("title") for i in items] == ["A later entry on the same day", "A fixture worklog entry"]
    assert [i.findtext("pubDate") for i in items] == ["Tue, 01 Dec 2026 18:00:00 +0000",
                                                      "Tue, 01 Dec 2026 00:00:00 +0000"]
    assert items[0].findtext("link").startswith("https://example-owner.github.io/example-repo/worklog/")
    assert {i.findtext("category") for i in items} == {"harness", "gemm_ladder"}


def test_pages_announce_the_feed(built_site):
    _, site = built_site
    html = (site / "worklog" / "index.html").read_text(encoding="utf-8")
    assert '<link rel="alternate" type="application/rss+xml" title="RSS feed" href="../feed_rss_created.xml">' in html
