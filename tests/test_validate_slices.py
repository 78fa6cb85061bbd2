"""validate's per-source figures broken down by chip (``by_source_chip``), so a pooled source cannot hide a
bad chip (issue 25: "never pooled where a pool hides a bad slice")."""

from __future__ import annotations

import pytest

from roofline.calibrate.engine.validate import Case, summarize
from roofline.views.cli.validate import _split_sources


def case(source: str, chip: str, ratio: float) -> Case:
    return Case(f"{source}/{chip}/{ratio}", source, "throughput", 100.0, 100.0 * ratio, ratio, "mean",
                "m", chip, chip, 1, "fp8", "")  # fmt: skip


def test_a_source_on_two_chips_is_split_and_one_on_one_chip_is_not():
    # src A: on h100 ratios 1.1 and 0.9 (APE 10% each), on b200 1.5 (50%): pooled MAPE (10+10+50)/3 = 23.3%.
    cases = [case("A", "h100", 1.1), case("A", "h100", 0.9), case("A", "b200", 1.5), case("B", "h100", 1.2)]
    summary = summarize(cases)["throughput"]
    assert summary["by_source"]["A"]["mape"] == pytest.approx(70 / 300)
    assert summary["by_source_chip"]["A on h100"]["mape"] == pytest.approx(0.10)
    assert summary["by_source_chip"]["A on b200"]["mape"] == pytest.approx(0.50)
    shown = _split_sources({"throughput": summary})["throughput"]["by_source_chip"]
    assert set(shown) == {"A on h100", "A on b200"}  # B is on one chip only: its row says it all
