"""The site configuration (gpufolio.yml): author, repository, published address. Links are built only from the
configured repository; with none, commits and source paths are plain text; the About page and the home page
name the author, or say how to set one."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from gpufolio.site import about, build
from gpufolio.site import config as C

REPO = Path(__file__).resolve().parents[3]
FIXTURE_ROOT = REPO / "tools" / "tests" / "fixtures" / "site_repo"
CONFIGURED = "https://github.com/example-owner/example-repo"
# a link into some GitHub repository's code or history (an upstream pull request is not one)
REPO_LINK = re.compile(r'href="(https?://github\.com/([^/"]+)/([^/"#?]+)(?:/(?:commit|blob|tree|raw)/[^"]*)?)"')


@pytest.mark.parametrize("url, want", [
    ("https://github.com/a-b/c.d.git", "https://github.com/a-b/c.d"),
    ("git@github.com:owner/name.git", "https://github.com/owner/name"),
    ("ssh://git@github.com/owner/name", "https://github.com/owner/name"),
    ("https://gitlab.com/owner/name", None),
    ("", None),
])
def test_github_remote_forms(url, want):
    assert C.github_repo_url(url) == want


def _git_repo(path: Path, origin: str | None) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if origin:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def test_repository_defaults_to_a_github_origin_and_its_pages_address(tmp_path):
    site = C.load(_git_repo(tmp_path / "r", "git@github.com:someone/gpu-work.git"))
    assert site.repo_url == "https://github.com/someone/gpu-work"
    assert site.site_url == "https://someone.github.io/gpu-work/"
    assert site.commit_link("a" * 40) == f"[`aaaaaaa`](https://github.com/someone/gpu-work/commit/{'a' * 40})"


def test_no_repository_means_plain_shas_and_no_address(tmp_path):
    site = C.load(_git_repo(tmp_path / "r", "https://gitlab.com/someone/x"))
    assert site.repo_url is None and site.site_url is None
    assert site.commit_link("a" * 40) == "`aaaaaaa`"
    assert site.blob_url("projects/x.py") is None


def test_bad_config_is_one_clear_line(tmp_path):
    (tmp_path / "gpufolio.yml").write_text("repository: https://example.com/x\n")
    with pytest.raises(C.ConfigError, match="not a GitHub URL"):
        C.load(tmp_path)
    (tmp_path / "gpufolio.yml").write_text("author:\n  links:\n    twitter: x\n")
    with pytest.raises(C.ConfigError, match="unknown key"):
        C.load(tmp_path)


def test_the_committed_config_invents_nobody():
    site = C.load(REPO)
    assert site.gpu == "one NVIDIA H200"
    assert "gpufolio/gpufolio" not in (REPO / "mkdocs.yml").read_text() + (REPO / "gpufolio.yml").read_text()


def test_every_built_link_into_a_repository_is_the_configured_one(built_site):
    """Commit, source and evidence links all point at gpufolio.yml's repository (upstream PRs are not code links)."""
    _, site = built_site
    seen = 0
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "github.com/gpufolio/gpufolio" not in text and "gpufolio.github.io" not in text, page
        for url, owner, _name in REPO_LINK.findall(text):
            if re.search(r"/(commit|blob|tree|raw)/", url) or owner == "example-owner":
                assert url.startswith(CONFIGURED), (page, url)
                seen += 1
    assert seen >= 10


def test_without_a_repository_no_commit_or_source_is_a_link(tmp_path):
    docs = tmp_path / "docs"
    build.render(FIXTURE_ROOT, docs_dir=docs, site=C.Site(), draw=False)
    text = "\n".join(p.read_text(encoding="utf-8") for p in docs.rglob("*.md"))
    assert "github.com" not in text.replace("github.com/linkedin", "")
    assert "`aaaaaaa`" in text and "notes.txt" in text  # the SHA and the file name stay, as plain text
    assert "No public repository is configured" in (docs / "about.md").read_text(encoding="utf-8")


def test_about_and_home_name_the_author(built_site):
    docs, site = built_site
    page = (docs / "about.md").read_text(encoding="utf-8")
    assert "**Test Author** — writes GPU kernels for the fixture store" in page
    assert "[author@example.com](mailto:author@example.com)" in page and "one NVIDIA H200" in page
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="about/">Test Author</a>' in home
    post = next((site / "worklog").rglob("a-fixture-worklog-entry/index.html")).read_text(encoding="utf-8")
    assert "Test Author" in post


def test_unset_author_says_how_to_set_it():
    text = about.about_page(C.Site())
    assert "No author configured" in text and "author.name" in text and "gpufolio.yml" in text
    assert "Author not configured yet" in about.author_line(C.Site())
