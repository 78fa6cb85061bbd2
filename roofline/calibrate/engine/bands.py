"""Build the uncertainty bands (``roofline/data/bands.yaml``) from held-out end-to-end rows.

Per data tier, the shipped rows are predicted as that tier would price them:

* spec sheet: the chip's spec sheet with the row's engine entry;
* calibrated kernels: the chip's shipped calibrated profile, no engine entry;
* fitted engine entry: the calibrated profile with the row's entry refitted without the row (without its
  fold of 10 above 10 rows): the fit's own held-out predictions.

For each tier and quantity (TTFT, TPOT, output tokens/s) the file keeps quantiles of log(measured /
predicted) expected on a source not seen (:mod:`.band_model`: between-source offset + within-source
scatter), and the coverage of the p10-p90 band on rows held out by source: each source's rows checked
against the band built from the other sources' rows.

``python -m roofline.calibrate.engine.bands`` rebuilds the file.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from collections.abc import Sequence

from roofline.calibrate.engine.band_model import Residual, held_out_coverage, quantiles, spread_for
from roofline.calibrate.engine.data import load_shipped
from roofline.calibrate.engine.fit import measured
from roofline.calibrate.engine.holdout import entry_groups, fitted_entries
from roofline.calibrate.engine.predict import overloaded, predict_row
from roofline.calibrate.engine.quantities import QUANTITIES as PREDICTED_BY
from roofline.calibrate.engine.schema import E2ERow
from roofline.calibrate.engine.validate import profile_for, shipped_profiles, validate
from roofline.core.errors import RooflineError
from roofline.core.files import write_bytes_atomic
from roofline.deploy import NO_ENGINE
from roofline.deploy.bands import BANDS_FILE, QUANTITIES, TIERS

#: quantity -> the prediction's key.
PREDICTED = {q: PREDICTED_BY[q][1] for q in QUANTITIES}
#: Cumulative probabilities the file keeps quantiles at.
LEVELS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)


def _log_ratio(measured: float, predicted: float | None) -> float | None:
    if predicted is None or not (math.isfinite(predicted) and predicted > 0):
        return None
    return math.log(measured / predicted)


def tier_residuals(rows: Sequence[E2ERow]) -> dict[str, list[Residual]]:
    """Residuals of every tier (see the module doc)."""
    out: dict[str, list[Residual]] = defaultdict(list)
    spec = validate(rows, shipped=False)
    for c in spec.cases:
        if c.quantity in QUANTITIES and (r := _log_ratio(c.measured, c.predicted)) is not None:
            out[TIERS[0]].append((c.source, c.quantity, r))
    profiles = shipped_profiles(rows)
    for row in rows:
        hw = profile_for(row, profiles)
        if hw is None or (overloaded(row) and row.timeout_s is None):
            continue
        try:
            pred = predict_row(row, hw, NO_ENGINE)
        except RooflineError:
            continue
        for q in QUANTITIES:
            m = measured(row, q)
            if m is not None and (r := _log_ratio(m, pred.get(PREDICTED[q]))) is not None:
                out[TIERS[1]].append((row.source, q, r))
    by_id = {r.id: r for r in rows}
    groups = entry_groups(rows, lambda r: profile_for(r, profiles))
    for fit in fitted_entries(groups).values():
        for (rid, q), p in fit.held_out.items():
            m = measured(by_id[rid], q)
            if q in QUANTITIES and m is not None and (r := _log_ratio(m, p)) is not None:
                out[TIERS[2]].append((by_id[rid].source, q, r))
    return dict(out)


def bands_yaml(residuals: dict[str, list[Residual]]) -> str:
    """The bands file: per tier and quantity the quantiles of a new source's log ratio (band_model), the
    rows they rest on, and the p10-p90 coverage held out by source (pooled over rows, and per source)."""
    lines = [
        "# Uncertainty bands written by `python -m roofline.calibrate.engine.bands` (do not edit by hand):",
        "# per data tier and quantity, quantiles of log(measured / predicted) expected on a source not seen:",
        "# the mean of the sources' medians, a between-source offset and the within-source scatter of held-out",
        "# end-to-end rows (roofline/calibrate/engine/band_model.py); and the coverage of the p10-p90 band on",
        "# each source's rows when the band is built without that source.",
        f"levels_note: {LEVELS!r}  # cumulative probabilities of the quantiles below",
        "tiers:",
    ]
    for tier in TIERS:
        res = residuals.get(tier, [])
        if not res:
            continue
        lines.append(f"  {tier}:")
        for q in QUANTITIES:
            n = sum(1 for _, qq, _ in res if qq == q)
            spread = spread_for(res, q)
            if n < 5 or spread is None:
                continue
            quant = [float(v) for v in quantiles(spread, LEVELS)]
            pooled, per = held_out_coverage(res, q)
            by_source = ", ".join(f"{s}: {c:.4f}" for s, c in per.items())
            lines.append(f"    {q}:")
            lines.append(f"      levels: {list(LEVELS)!r}  # cumulative probabilities")
            lines.append(f"      log_ratios: {[round(v, 5) for v in quant]!r}  # quantiles of log(measured/predicted)")
            lines.append(f"      n: {n}  # held-out cases")
            lines.append(f"      sources: {spread.cells}  # sources with this quantity")
            lines.append(f"      method: {spread.method!r}")
            lines.append(f"      coverage: {pooled:.4f}  # p10-p90 coverage of rows, each source held out")
            lines.append(f"      coverage_by_source: {{{by_source}}}  # the same, per held-out source")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = bands_yaml(tier_residuals(load_shipped()))
    write_bytes_atomic(BANDS_FILE, text.encode("utf-8"))
    print(f"wrote {BANDS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
