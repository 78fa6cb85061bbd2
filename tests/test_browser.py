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


#: The issue's check: the summary's first chart visible without scrolling at this width.
VIEWPORT = {"width": 1400, "height": 1000}
SUMMARY_JS = """() => {
  const h2 = document.querySelector('h2');
  const first = document.querySelector('.plotly-graph-div');
  const box = first.getBoundingClientRect();
  return {section: h2 && h2.closest('section') ? h2.closest('section').id : null,
          firstFigure: first.id, top: box.top, bottom: box.bottom, drawn: first.querySelectorAll('.main-svg').length,
          rows: document.getElementById('summary-rows').innerText,
          z: JSON.stringify(first.data[0].z), title: document.getElementById('summary-title').innerText};
}"""
SHOWN_JS = """(id) => document.getElementById(id).data.filter(
  (t) => t.meta && t.meta.model !== undefined && t.visible !== false).map((t) => t.meta.model)"""


def summary_and_controls(path: Path) -> dict:
    """Open the page at 1400 px, read the summary, then work each control and read what changed."""
    from .browser import CHROMIUM_ARGS, shared_browser  # noqa: F401  (the shared session)

    errors: list[str] = []
    context = shared_browser().new_context(viewport=VIEWPORT, offline=True)
    try:
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.resolve().as_uri(), wait_until="load", timeout=60_000)
        page.wait_for_timeout(200)
        out = {
            "before": page.evaluate(SUMMARY_JS),
            "models": page.evaluate(
                "() => Array.from(document.querySelectorAll('#ctl-model option')).map((o) => o.value)"
            ),
        }
        out["shown_before"] = page.evaluate(SHOWN_JS, "fig-1")
        page.select_option("#ctl-tpot", "0.02")
        page.wait_for_timeout(100)
        out["tpot"] = page.evaluate(SUMMARY_JS)
        dtypes = page.evaluate("() => Array.from(document.querySelectorAll('#ctl-dtype option')).map((o) => o.value)")
        page.select_option("#ctl-dtype", dtypes[1])  # the first pair after 'any' (bf16 before fp8)
        page.wait_for_timeout(100)
        out["dtype"] = page.evaluate(SUMMARY_JS)
        page.select_option("#ctl-model", out["models"][-1])
        page.wait_for_timeout(100)
        out["shown_after"] = page.evaluate(SHOWN_JS, "fig-1")
    finally:
        context.close()
    out["errors"] = errors
    return out


@pytest.mark.slow
def test_default_report_renders(browser: str, tmp_path: Path) -> None:
    # The quickstart's page: `roofline report` with no arguments writes reports/index.html.
    proc = run_cli("report", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "reports" / "index.html"
    assert page.stat().st_size < 8e6  # the limit on the file
    found = assert_page_renders(page, min_figures=10, screenshot_path=tmp_path / "report.png")
    # The summary's heatmap (a trace and the gaps' labels), the tails (per model 4 latencies, 2 targets
    # and 2 operating-point lines: 4 models), 3 frontiers (4 models x 5 chips, less those where a model
    # fits no slice: DeepSeek-V3's 671 GB in fp8 on 8 H100s), a classic roofline per model (roof + ops),
    # scenario memory (4 models + 5 HBM lines) last.
    traces = [f["traces"] for f in found["figures"]]
    assert traces[:2] == [2, 32] and traces[2] == traces[3] == traces[4] in (19, 20), traces
    assert len(traces) == 10 and all(t in (3, 5) for t in traces[5:9]) and traces[9] == 9, traces
    seen = summary_and_controls(page)
    assert not seen["errors"], seen["errors"]
    before = seen["before"]
    assert before["section"] == "summary" and before["firstFigure"] == "summary-heatmap" and before["drawn"]
    assert 0 < before["top"] and before["bottom"] < 1000  # the whole first chart without scrolling
    assert before["title"] == "Answers at TTFT ≤ 1 s and TPOT ≤ 50 ms"
    # A tighter TPOT changes the answers and the heatmap; so does a dtype.
    assert seen["tpot"]["title"] == "Answers at TTFT ≤ 1 s and TPOT ≤ 20 ms"
    assert seen["tpot"]["rows"] != before["rows"] and seen["tpot"]["z"] != before["z"]
    assert seen["dtype"]["rows"] != seen["tpot"]["rows"] and "bf16 · bf16 · bf16" in seen["dtype"]["rows"]
    # The model control shows that model's traces only.
    assert set(seen["shown_before"]) == {seen["models"][0]} and set(seen["shown_after"]) == {seen["models"][-1]}


@pytest.mark.slow
def test_compare_page_renders(browser: str, tmp_path: Path) -> None:
    page = tmp_path / "compare.html"
    proc = run_cli(
        "report", "--compare", "h100-sxm", "b200", "--models", "llama-3-8b", "--chips", "1,2", "--out", str(page)
    )
    assert proc.returncode == 0, proc.stderr
    found = assert_page_renders(page, min_figures=6)
    # Heatmap, tails (8), the ratio figure (2 ratios + parity), 3 frontiers (2 chips), roofline, memory.
    assert [f["traces"] for f in found["figures"]] == [2, 8, 3, 2, 2, 2, 3, 3]
    seen = summary_and_controls(page)
    assert not seen["errors"] and seen["before"]["section"] == "summary"


def test_report_from_a_calibrated_profile_renders(browser: str, tmp_path: Path) -> None:
    # The case: a chip and its calibrated profile, each its own bound and prediction.
    from .test_report import write_profile

    cal = write_profile(tmp_path / "h100-cal.yaml")
    page = tmp_path / "cal-report.html"
    proc = run_cli(
        "report",
        "--models",
        "llama-3-8b",
        "--hardware",
        f"h100-sxm,{cal}",
        "--chips",
        "1,2,8",
        "--traces",
        "bound,prediction",
        "--no-tails",
        "--out",
        str(page),
    )
    assert proc.returncode == 0, proc.stderr
    found = assert_page_renders(page, min_figures=5)
    # The summary's heatmap, 3 frontiers x 4 traces, the roofline with spec-sheet and fitted ops (roof + 4),
    # scenario memory.
    assert [f["traces"] for f in found["figures"]] == [2, 4, 4, 4, 5, 3]


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
