"""A reusable headless-browser check of a generated HTML page (playwright + Debian's chromium).

``assert_page_renders(path, min_figures=n)`` loads the page from disk with the network off and
fails on any JavaScript console error or uncaught page error, on fewer than ``n`` plotly figure
divs, on a figure without a trace, or on a blank screenshot.  Without a browser the test is
skipped with a message, unless ``ROOFLINE_REQUIRE_BROWSER=1`` (set by .ci/run) makes it fail.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Fraction of the screenshot's pixels that differ from its top-left pixel, measured in the
# browser itself (canvas) so the check needs no image library.
NON_BLANK_JS = """async (src) => {
  const img = new Image();
  await new Promise((ok, bad) => { img.onload = ok; img.onerror = bad; img.src = src; });
  const c = document.createElement('canvas');
  c.width = img.width; c.height = img.height;
  const ctx = c.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data;
  let differ = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) differ++;
  }
  return differ / (d.length / 4);
}"""

FIGURES_JS = """() => Array.from(document.querySelectorAll('.plotly-graph-div')).map(
  (gd) => ({id: gd.id, traces: (gd.data || []).length,
            drawn: gd.querySelectorAll('.main-svg').length}))"""


def browser_executable() -> str | None:
    """Path of a Chromium-family browser: $ROOFLINE_CHROMIUM or the first one on PATH."""
    env = os.environ.get("ROOFLINE_CHROMIUM")
    if env:
        return env
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_browser() -> str:
    """The browser path, or skip (fail when ROOFLINE_REQUIRE_BROWSER=1) with a clear message."""
    exe = browser_executable()
    problem = None
    if exe is None:
        problem = "no chromium on PATH (Debian: apt-get install -y chromium; or set ROOFLINE_CHROMIUM)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "the playwright package is missing (pip install '.[test]')"
    if problem is None:
        return exe  # type: ignore[return-value]
    if os.environ.get("ROOFLINE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser test required (ROOFLINE_REQUIRE_BROWSER=1) but {problem}")
    pytest.skip(f"browser test skipped: {problem}")


_SESSION: dict[str, Any] = {}


def shared_browser() -> Any:
    """One headless Chromium for the whole test session (closed at interpreter exit)."""
    if "browser" not in _SESSION:
        from playwright.sync_api import sync_playwright

        exe = require_browser()
        manager = sync_playwright().start()
        _SESSION["playwright"] = manager
        _SESSION["browser"] = manager.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        atexit.register(close_browser)
    return _SESSION["browser"]


def close_browser() -> None:
    """Close the shared browser and playwright, if started."""
    browser, manager = _SESSION.pop("browser", None), _SESSION.pop("playwright", None)
    if browser is not None:
        browser.close()
    if manager is not None:
        manager.stop()


def render_page(html_path: str | Path, screenshot_path: str | Path | None = None) -> dict[str, Any]:
    """Load the page offline in headless Chromium: JS errors, figures, blank-pixel fraction."""
    url = Path(html_path).resolve().as_uri()
    errors: list[str] = []
    context = shared_browser().new_context(viewport={"width": 1280, "height": 900}, offline=True)
    try:
        page = context.new_page()
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.goto(url, wait_until="load", timeout=60_000)
        page.wait_for_timeout(200)
        figures = page.evaluate(FIGURES_JS)
        png = page.screenshot(full_page=False)
        if screenshot_path is not None:
            Path(screenshot_path).write_bytes(png)
        src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        non_blank = page.evaluate(NON_BLANK_JS, src)
    finally:
        context.close()
    return {"errors": errors, "figures": figures, "non_blank_fraction": non_blank}


def assert_page_renders(
    html_path: str | Path, min_figures: int = 1, screenshot_path: str | Path | None = None
) -> dict[str, Any]:
    """Fail unless the page loads with no JS errors, ≥ min_figures figures all with traces, not blank."""
    found = render_page(html_path, screenshot_path)
    assert not found["errors"], f"{html_path}: JavaScript errors: {found['errors'][:5]}"
    figures = found["figures"]
    assert len(figures) >= min_figures, f"{html_path}: {len(figures)} figures, expected ≥ {min_figures}"
    empty = [f["id"] for f in figures if f["traces"] < 1 or f["drawn"] < 1]
    assert not empty, f"{html_path}: figures without traces or not drawn: {empty}"
    assert found["non_blank_fraction"] > 0.001, (
        f"{html_path}: screenshot looks blank ({found['non_blank_fraction']:.4f} of pixels differ)"
    )
    return found
