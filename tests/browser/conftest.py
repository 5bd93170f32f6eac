"""Browser tests: Debian's /usr/bin/chromium, headless, driven by Playwright
for Python (its own browser builds are never downloaded or used).

The browser runs in a fresh user-data-dir (one per test session, removed
afterwards) with background networking off; every page's requests are
routed: file://, about: and data: go through, anything else is aborted and
recorded, and the tests assert that nothing else was even attempted. Console errors and uncaught exceptions fail the test.

Missing chromium or playwright skips these tests on a developer machine
(`make setup` installs both) and fails them in CI (CI=true).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers.htmlfix import ARTIFACTS

CHROMIUM = os.environ.get("FTFLAME_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions"]
LOCAL_SCHEMES = ("file://", "about:", "data:")

pytestmark = pytest.mark.browser


def _missing(why: str):
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run: {why} (run `make setup`)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def playwright_instance():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright (Python) is not installed")
    if not os.access(CHROMIUM, os.X_OK):
        _missing(f"{CHROMIUM} is missing (Debian package chromium)")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser_context(playwright_instance):
    """One headless Chromium per test session, in a fresh user-data-dir that
    is removed afterwards; each test gets its own pages."""
    profile_dir = tempfile.mkdtemp(prefix="ftflame-chromium-")
    context = playwright_instance.chromium.launch_persistent_context(
        profile_dir, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
        viewport={"width": 1400, "height": 1000}, device_scale_factor=1,
        service_workers="block", accept_downloads=False)
    # anything not local is refused for every page of this browser
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(LOCAL_SCHEMES)
                  else route.abort())
    yield context
    context.close()
    shutil.rmtree(profile_dir, ignore_errors=True)


class Page:
    """A new page, with every request it attempts and every error recorded."""

    def __init__(self, context, width=1400, height=1000):
        self.requests = []  # every request the page attempted
        self.blocked = []  # of which aborted: not local
        self.errors = []  # console errors and uncaught exceptions
        self.page = context.new_page()
        self.page.set_viewport_size({"width": width, "height": height})
        self.page.route("**/*", self._route)
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}")
                     if m.type in ("error", "assert") else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))

    def _route(self, route):
        url = route.request.url
        if url.startswith(LOCAL_SCHEMES):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def open(self, path: Path):
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_selector("html[data-ready]", timeout=15000)
        return self.page

    def assert_clean(self):
        assert self.errors == [], self.errors
        assert self.blocked == [], f"network requests attempted: {self.blocked}"
        non_local = [u for u in self.requests if not u.startswith(LOCAL_SCHEMES)]
        assert non_local == [], f"non-local requests: {non_local}"

    def shot(self, name: str, selector: str = "", **kw):
        """Save a screenshot (of one element when selector is given)."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        if selector:
            self.page.locator(selector).screenshot(path=str(path), **kw)
        else:
            self.page.screenshot(path=str(path), **kw)
        return path

    def close(self):
        self.page.close()


@pytest.fixture
def browser_page(browser_context):
    pages = []

    def make(**kw):
        pg = Page(browser_context, **kw)
        pages.append(pg)
        return pg

    yield make
    for pg in pages:
        pg.close()
