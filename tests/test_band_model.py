"""The bands' spread for a source not seen (roofline/calibrate/engine/band_model.py): hand-derived on four cells,
and calibrated where its assumptions hold (sources drawn with random offsets)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

from roofline.calibrate.engine.band_model import held_out_coverage, quantiles, spread_for

# Four cells of two rows: q from sources A (0.1, 0.3) and B (-0.1, 0.1); q2 from C (0.5, 0.7) and D (0.3, 0.5).
FOUR = [("A", "q", 0.1), ("A", "q", 0.3), ("B", "q", -0.1), ("B", "q", 0.1)]
FOUR += [("C", "q2", 0.5), ("C", "q2", 0.7), ("D", "q2", 0.3), ("D", "q2", 0.5)]


def test_four_cells_by_hand():
    # Medians 0.2, 0.0 (centre of q 0.1) and 0.6, 0.4 (centre of q2 0.5): deviations ±0.1, Σ dev² = 0.04 over
    # 4 cells − 2 quantities = 2 dof -> τ² = 0.02; q has 2 cells: offset variance 0.02·(1 + 1/2) = 0.03.
    # Within-cell deviations are ±0.1, so F(x) = ½Φ((x − 0.2)/√0.03) + ½Φ(x/√0.03), symmetric about 0.1.
    spread = spread_for(FOUR, "q")
    assert spread.centre == pytest.approx(0.1)
    assert spread.offset_sd == pytest.approx(np.sqrt(0.03))
    assert sorted(spread.within) == pytest.approx([-0.1] * 4 + [0.1] * 4)
    p10, p50, p90 = quantiles(spread, (0.1, 0.5, 0.9))
    s = np.sqrt(0.03)

    def cdf(x):
        return 0.5 * ndtr((x - 0.2) / s) + 0.5 * ndtr(x / s)

    assert p50 == pytest.approx(0.1, abs=1e-4)
    assert cdf(p10) == pytest.approx(0.1, abs=1e-4) and cdf(p90) == pytest.approx(0.9, abs=1e-4)
    assert p10 + p90 == pytest.approx(0.2, abs=1e-4)


def test_one_cell_a_quantity_has_no_between_source_spread_and_says_so():
    # Two cells for two quantities: cells − quantities = 0 dof, so the band is the rows' own quantiles.
    rows = [("A", "q", 0.1), ("A", "q", 0.3), ("C", "q2", 0.5), ("C", "q2", 0.7)]
    spread = spread_for(rows, "q")
    assert spread.method.startswith("pooled rows")
    assert quantiles(spread, (0.0, 1.0)) == pytest.approx([0.1, 0.3])
    assert spread_for(rows, "tokens") is None


@pytest.mark.parametrize("seed", [0, 1])
def test_held_out_coverage_is_near_80_percent_where_the_model_holds(seed):
    # 60 sources over two quantities, each with an offset b ~ N(0, 0.2²) and 8 rows of scatter N(0, 0.1²):
    # a new source's log ratio is N(μ, 0.2² + 0.1²), so the p10-p90 band built without it covers about 80%
    # (seeds 0-5 give 71-83%: 30 held-out sources are few, each source's rows share its offset).
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(60):
        q, b = ("q" if k % 2 else "q2"), rng.normal(0.0, 0.2)
        rows += [(f"s{k}", q, float(b + e)) for e in rng.normal(0.0, 0.1, 8)]
    pooled, per = held_out_coverage(rows, "q")
    assert len(per) == 30
    assert 0.7 <= pooled <= 0.9
