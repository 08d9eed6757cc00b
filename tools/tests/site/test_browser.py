"""The built fixture site in headless Chromium (Debian's /usr/bin/chromium, driven by pytest-playwright): every
page loads with no console error and no request outside 127.0.0.1, images load, the home table has six rows,
stale and failed records are flagged, axe finds no serious or critical accessibility violation at a phone's
width (390 px) and a desktop's (1400 px), and on a phone the home page shows each project's result and ratio
without sideways scrolling.

Screenshots of the home page and a project page at both widths land in test-artifacts/ (git-ignored) for a
reviewer. Never run `playwright install`: the browser is
the system's Chromium; without it these tests skip.
"""
from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[3]
ARTIFACTS = REPO / "test-artifacts"
LOCAL_HOSTS = {"127.0.0.1", "localhost"}

pytest.importorskip("pytest_playwright", reason="needs pytest-playwright (pip install -e '.[browser]')")
pytest.importorskip("axe_playwright_python", reason="needs axe-playwright-python (pip install -e '.[browser]')")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                                      "(apt-get install -y chromium)"),
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch arguments, pointed at the system Chromium, with nothing phoning home."""
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "headless": True,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run"]}


@pytest.fixture(scope="session")
def server(built_site):
    """The built fixture site over HTTP on 127.0.0.1 (an ephemeral port)."""
    _, site = built_site
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", site
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output readable
        pass


class Watch:
    """Everything a page does that the site promises not to: console errors, page errors, outside requests,
    failed requests. Outside requests are also aborted, so the test cannot pass by being online."""

    def __init__(self, page):
        self.console, self.outside, self.failed = [], [], []
        page.on("console", lambda m: m.type == "error" and self.console.append(m.text))
        page.on("pageerror", lambda e: self.console.append(str(e)))
        page.on("requestfailed", lambda r: self.failed.append(r.url))
        page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))
        page.route("**/*", self._route)

    def _route(self, route):
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob") or url.hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()


def _pages(site: Path) -> list[str]:
    """Every page of the build, as URL paths (404.html uses site_url's absolute prefix, so it is left out)."""
    return sorted(str(p.parent.relative_to(site)).replace(".", "") + "/" if p.parent != site else ""
                  for p in site.rglob("index.html"))


def _broken_images(page) -> list[str]:
    return page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                         ".map(i => i.src)")


def test_every_page_loads_offline_without_errors(server, page):
    base, site = server
    paths = _pages(site)
    assert len(paths) >= 12, paths
    watch = Watch(page)
    images = 0
    for path in paths:
        page.goto(base + path, wait_until="load")
        page.wait_for_load_state("networkidle")
        assert _broken_images(page) == [], path
        images += page.evaluate("document.images.length")
    assert watch.outside == [], f"requests outside localhost: {watch.outside}"
    assert watch.console == [], f"console errors: {watch.console}"
    assert watch.failed == [], f"failed requests: {watch.failed}"
    assert images >= 10


def test_home_has_six_projects_and_flags(server, page):
    base, _ = server
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(base, wait_until="networkidle")
    rows = page.locator("article table").first.locator("tbody tr")
    assert rows.count() == 6
    attention = rows.filter(has_text="FlashAttention")
    assert attention.locator(".gf-stale").is_visible()
    assert attention.locator(".gf-loses").first.is_visible()
    assert rows.filter(has_text="Open-source PR notes").locator("text=not yet measured").is_visible()


def test_project_page_flags_failed_and_links_numbers_to_runs(server, page):
    base, _ = server
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(base + "projects/gemm_ladder/", wait_until="networkidle")
    failed = page.locator(".gf-notcounted:visible", has_text="failed correctness check")  # the not-counted table
    assert failed.count() >= 1 and failed.first.is_visible()
    assert page.locator(".gf-notcounted:visible", has_text="dirty tree").first.is_visible()
    link = page.locator("article table").first.locator("a[href*='runs/#run-']").first
    link.click()
    page.wait_for_load_state("networkidle")
    anchor = page.url.split("#", 1)[1]
    assert page.locator(f"h2#{anchor}").is_visible()
    page.goto(base + "projects/flash_attention/", wait_until="networkidle")
    assert page.locator(".gf-stale").first.is_visible()


WIDTHS = {"phone": 390, "desktop": 1400}


@pytest.mark.parametrize("width", WIDTHS.values(), ids=WIDTHS.keys())
@pytest.mark.parametrize("path", ["", "projects/gemm_ladder/", "runs/", "about/", "worklog/"])
def test_no_serious_accessibility_violations(server, page, path, width):
    from axe_playwright_python.sync_playwright import Axe

    base, _ = server
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(base + path, wait_until="networkidle")
    results = Axe().run(page)
    bad = [(v["id"], v["impact"], len(v["nodes"])) for v in results.response["violations"]
           if v["impact"] in ("serious", "critical")]
    assert bad == [], results.generate_report()


def _sideways(page) -> int:
    """How far the page scrolls sideways (0: it fits the viewport)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_phone_home_shows_every_result_and_ratio_without_sideways_scrolling(server, page):
    base, _ = server
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(base, wait_until="networkidle")
    assert _sideways(page) <= 0
    rows = page.locator("article .gf-cards table tbody tr")
    assert rows.count() == 6
    for i in range(rows.count()):
        row = rows.nth(i)
        for col in (3, 4):  # the result and the ratio to the baseline
            cell = row.locator(f"td:nth-child({col})")
            box = cell.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (i, col, box)
            assert cell.is_visible()
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / "home-390.png"), full_page=True)


@pytest.mark.parametrize("width", WIDTHS.values(), ids=WIDTHS.keys())
def test_screenshots_at_both_widths(server, page, width):
    """Home and a project page at both widths, for a person to look at; neither scrolls sideways."""
    base, _ = server
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    for path, name in (("", "home"), ("projects/gemm_ladder/", "project-gemm_ladder")):
        page.goto(base + path, wait_until="networkidle")
        page.wait_for_timeout(800)  # the theme fades the tabs in
        page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
        assert _sideways(page) <= 0, (path, width)
