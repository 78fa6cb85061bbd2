"""Write docs/images/report-summary.png: the summary of the default report, as a reader first sees it.

    python docs/images/report_summary.py            # builds the default report, then the screenshot
    python docs/images/report_summary.py PAGE.html  # a page already written

Needs the test extra's playwright and a Chromium-family browser (Debian: apt-get install -y chromium;
or set ROOFLINE_CHROMIUM), as the browser tests do.  The shot is the page's summary section at 1400 px
wide (the issue's viewport), at one device pixel per CSS pixel, so the PNG stays small.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT = HERE / "report-summary.png"
VIEWPORT = {"width": 1400, "height": 1000}


def screenshot(page_path: Path, out: Path = OUT) -> Path:
    """The summary section of ``page_path`` as a PNG at ``out``."""
    sys.path.insert(0, str(REPO))
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM_ARGS, browser_executable

    exe = browser_executable()
    if exe is None:
        raise SystemExit("no chromium on PATH (Debian: apt-get install -y chromium; or set ROOFLINE_CHROMIUM)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport=VIEWPORT, offline=True, device_scale_factor=1)
        page = context.new_page()
        page.goto(page_path.resolve().as_uri(), wait_until="load", timeout=120_000)
        page.wait_for_timeout(500)
        page.locator("section#summary").screenshot(path=str(out))
        browser.close()
    return out


def main() -> None:
    if len(sys.argv) > 1:
        page = Path(sys.argv[1])
    else:
        page = Path(tempfile.mkdtemp()) / "index.html"
        subprocess.run([sys.executable, "-m", "roofline", "report", "--out", str(page)], check=True, cwd=REPO)
    out = screenshot(page)
    print(f"wrote {out} ({out.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
