"""The reports in a real headless browser (Debian chromium via playwright; see tests/browser.py).

Skipped with a message when no browser is installed, unless ROOFLINE_REQUIRE_BROWSER=1 (CI).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from .browser import assert_page_renders, require_browser
from .conftest import run_cli

PLOTLY_DIV = '<div id="{id}" class="plotly-graph-div" style="height:300px;width:400px"></div>'


@pytest.fixture(scope="module")
def browser() -> str:
    return require_browser()


def test_default_report_renders(browser: str, tmp_path: Path) -> None:
    # The README's main job: `roofline report` with no arguments writes reports/index.html.
    proc = run_cli("report", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "reports" / "index.html"
    found = assert_page_renders(page, min_figures=15, screenshot_path=tmp_path / "report.png")
    # Per model: 3 frontiers (a bound and a prediction trace per chip: 8) and the classic roofline
    # (the roof + decode and prefill ops: 3); then the book's two figures and scenario memory.
    traces = [f["traces"] for f in found["figures"]]
    assert traces[:12] == [8, 8, 8, 3] * 3 and len(traces) == 15


def test_report_from_a_calibrated_profile_renders(browser: str, tmp_path: Path) -> None:
    # The case: a chip and its calibrated profile, each its own bound and prediction.
    from .test_report import write_profile

    cal = write_profile(tmp_path / "h100-cal.yaml")
    page = tmp_path / "cal-report.html"
    proc = run_cli(
        "report", "--models", "llama-3-8b", "--hardware", f"h100-sxm,{cal}", "--chips", "1,2,8", "--out", str(page)
    )
    assert proc.returncode == 0, proc.stderr
    found = assert_page_renders(page, min_figures=5)
    # 3 frontiers x 4 traces, the roofline with spec-sheet and fitted ops (roof + 4), scenario memory.
    assert [f["traces"] for f in found["figures"]] == [4, 4, 4, 5, 3]


def test_pareto_page_renders(browser: str, tmp_path: Path) -> None:
    page = tmp_path / "f.html"
    proc = run_cli(
        "pareto",
        "--model",
        "llama-3-8b",
        "--hardware",
        "tpu-v5e,h100-sxm",
        "--chips",
        "1,2,4",
        "--objective",
        "all",
        "--html",
        str(page),
    )
    assert proc.returncode == 0, proc.stderr
    assert_page_renders(page, min_figures=3)


def test_checker_catches_broken_pages(browser: str, tmp_path: Path) -> None:
    # The check must be able to fail: a JavaScript error, a figure div with no trace, a blank
    # page.  (Tiny pages without plotly.js keep this fast; the real pages are checked above.)
    js_error = tmp_path / "err.html"
    js_error.write_text("<html><body><h1>text</h1><script>undefinedFunction();</script></body></html>")
    with pytest.raises(AssertionError, match="JavaScript errors"):
        assert_page_renders(js_error, min_figures=0)
    empty = tmp_path / "empty.html"
    empty.write_text("<html><body><h1>text</h1>" + PLOTLY_DIV.format(id="g0") + "</body></html>")
    with pytest.raises(AssertionError, match="without traces"):
        assert_page_renders(empty, min_figures=1)
    with pytest.raises(AssertionError, match="2 figures|1 figures"):
        assert_page_renders(empty, min_figures=2)
    blank = tmp_path / "blank.html"
    blank.write_text("<html><body style='background:#fff'></body></html>")
    with pytest.raises(AssertionError, match="blank"):
        assert_page_renders(blank, min_figures=0)


@pytest.mark.skipif(
    importlib.util.find_spec("roofline.views.report.calibration") is None, reason="no calibration report in this tree"
)
def test_calibration_report_renders(browser: str, tmp_path: Path) -> None:
    from roofline.views.report.calibration import write_calibration_report  # noqa: F401  (the API under test)

    page = tmp_path / "cal.html"
    proc = run_cli(
        "calibrate",
        "fit",
        "builtin:h100-sxm",
        "--hardware",
        "h100-sxm",
        "--out",
        str(tmp_path / "h100-cal.yaml"),
        "--report",
        str(page),
        "--max-rows",
        "300",
    )
    assert proc.returncode == 0, proc.stderr
    assert_page_renders(page, min_figures=1)


def test_validate_page_renders(browser: str, tmp_path: Path) -> None:
    page = tmp_path / "validate.html"
    proc = run_cli("validate", "--source", "trtllm", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    assert_page_renders(page, min_figures=3)


def test_simulate_page_renders(browser: str, tmp_path: Path) -> None:
    page = tmp_path / "sim.html"
    proc = run_cli(
        "simulate",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--arrival-rate",
        "10",
        "-i",
        "512",
        "-o",
        "64",
        "--requests",
        "300",
        "--html",
        str(page),
    )
    assert proc.returncode == 0, proc.stderr
    assert_page_renders(page, min_figures=4)
