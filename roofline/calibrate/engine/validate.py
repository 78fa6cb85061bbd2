"""`roofline validate` without the printing: rows + predictions -> cases -> error statistics.

A *case* is one measured quantity of one row beside its prediction.  Quantities:

* ``ttft_s``: the row's mean ``ttft_s`` (else its ``ttft_p50_s``) vs the predicted TTFT
* ``tpot_s``: mean ``tpot_s`` (else ``tpot_p50_s``) vs the predicted TPOT
* ``throughput``: ``output_tokens_per_s`` (whole deployment) vs the predicted one

Statistics per quantity (and by source, tp degree and weight dtype): ``n``, ``mape`` (mean of
|predicted − measured| / measured), ``median_ape`` and ``gmean_ratio`` = exp(mean ln(predicted /
measured)): above 1 the model over-predicts on average.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from roofline.calibrate.engine.importers import MAX_VALIDATE_ROWS
from roofline.calibrate.engine.predict import predict_row
from roofline.calibrate.engine.schema import E2EError, E2ERow
from roofline.core.errors import RooflineError
from roofline.specs import HardwareSpec, hardware_names, load_hardware

#: quantity -> (measured columns in order of preference, predicted key).
QUANTITIES: dict[str, tuple[tuple[str, ...], str]] = {
    "ttft_s": (("ttft_s", "ttft_p50_s"), "ttft_s"),
    "tpot_s": (("tpot_s", "tpot_p50_s"), "tpot_s"),
    "throughput": (("output_tokens_per_s",), "output_tokens_per_s"),
}
GROUPS = {"by_source": "source", "by_tp": "tp", "by_dtype": "dtype"}
Predictor = Callable[[E2ERow, "str | HardwareSpec | None"], Mapping[str, float]]


@dataclass(frozen=True)
class Case:
    """One measured quantity of one row and its prediction (JSON keys of ``validate --json``)."""

    id: str
    source: str
    quantity: str
    measured: float
    predicted: float
    ratio: float
    statistic: str
    model: str
    hardware: str
    profile: str
    tp: int
    dtype: str
    conditions: str
    predicted_spec: float = math.nan
    ratio_spec: float = math.nan
    tier: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Skipped:
    """A row that gave no case, and why."""

    id: str
    source: str
    reason: str


@dataclass(frozen=True)
class Validation:
    """Cases, rows that gave none, and the summary per quantity."""

    cases: list[Case]
    skipped: list[Skipped] = field(default_factory=list)
    summary: dict[str, dict[str, object]] = field(default_factory=dict)
    summary_spec: dict[str, dict[str, object]] = field(default_factory=dict)
    summary_by_source_holdout: dict[str, dict[str, object]] = field(default_factory=dict)
    tier: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "cases": [c.as_dict() for c in self.cases],
            "summary": self.summary,
            "summary_spec": self.summary_spec,
            "summary_by_source_holdout": self.summary_by_source_holdout,
            "tier": self.tier,
            "skipped": [asdict(s) for s in self.skipped],
        }


def abs_pct_error(predicted: float, measured: float) -> float:
    """|predicted − measured| / measured."""
    return abs(predicted - measured) / measured


def measured_value(row: E2ERow, quantity: str) -> tuple[float, str] | None:
    """(value, column) the row measured for ``quantity``, or None."""
    for column in QUANTITIES[quantity][0]:
        value = getattr(row, column)
        if value is not None:
            return float(value), column
    return None


def row_cases(row: E2ERow, predicted: Mapping[str, float], profile: str = "") -> list[Case]:
    """The cases of one row: every quantity both measured and predicted (positive, finite)."""
    out = []
    for quantity, (_, key) in QUANTITIES.items():
        meas = measured_value(row, quantity)
        pred = predicted.get(key)
        if meas is None or pred is None or not (math.isfinite(pred) and pred > 0):
            continue
        out.append(
            Case(
                id=row.id,
                source=row.source,
                quantity=quantity,
                measured=meas[0],
                predicted=float(pred),
                ratio=float(pred) / meas[0],
                statistic=meas[1],
                model=row.model,
                hardware=row.hardware,
                profile=profile or row.hardware,
                tp=row.tp,
                dtype=row.weight_dtype,
                conditions=row.conditions(),
            )
        )
    return out


def error_stats(cases: Sequence[Case]) -> dict[str, object]:
    """n, MAPE, median APE and geometric-mean ratio of some cases (None when empty)."""
    if not cases:
        return {"n": 0, "mape": None, "median_ape": None, "gmean_ratio": None}
    apes = [abs_pct_error(c.predicted, c.measured) for c in cases]
    return {
        "n": len(cases),
        "mape": statistics.fmean(apes),
        "median_ape": statistics.median(apes),
        "gmean_ratio": math.exp(statistics.fmean(math.log(c.ratio) for c in cases)),
    }


def _group_key(case: Case, attribute: str) -> str:
    return str(getattr(case, attribute))


def summarize(cases: Sequence[Case]) -> dict[str, dict[str, object]]:
    """Per quantity: error_stats of all its cases, plus ``by_source``, ``by_tp``, ``by_dtype``."""
    out: dict[str, dict[str, object]] = {}
    for quantity in QUANTITIES:
        mine = [c for c in cases if c.quantity == quantity]
        entry = error_stats(mine)
        for name, attribute in GROUPS.items():
            keys = sorted({_group_key(c, attribute) for c in mine}, key=_sort_key)
            entry[name] = {k: error_stats([c for c in mine if _group_key(c, attribute) == k]) for k in keys}
        out[quantity] = entry
    return out


def _sort_key(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def profile_for(row: E2ERow, profiles: Sequence[HardwareSpec]) -> HardwareSpec | None:
    """The given profile for the row's chip: same name, or named ``<row hardware>-...``."""
    for hw in profiles:
        if hw.name == row.hardware or hw.name.startswith(f"{row.hardware}-"):
            return hw
    return None


def load_profiles(refs: Iterable[str]) -> list[HardwareSpec]:
    """Hardware profiles (names or YAML paths) for ``--hardware``."""
    return [load_hardware(r) for r in refs]


def shipped_profiles(rows: Sequence[E2ERow]) -> list[HardwareSpec]:
    """The shipped calibrated profile ``<chip>-cal`` of every chip the rows use, where one exists."""
    names = set(hardware_names())
    return [load_hardware(f"{chip}-cal") for chip in sorted({r.hardware for r in rows}) if f"{chip}-cal" in names]


def _with_predictions(cases: Sequence[Case], predictions: Mapping[tuple[str, str], float], tier: str) -> list[Case]:
    """Cases whose prediction is replaced by ``predictions`` (held out); cases without one are dropped."""
    out = []
    for c in cases:
        value = predictions.get((c.id, c.quantity))
        if value is not None and math.isfinite(value) and value > 0:
            out.append(replace(c, predicted=value, ratio=value / c.measured, tier=tier))
    return out


def validate(
    rows: Sequence[E2ERow],
    profiles: Sequence[HardwareSpec] = (),
    predict: Predictor = predict_row,
    holdout: bool = False,
    shipped: bool = True,
) -> Validation:
    """Predict every row with the spec sheet and with its chip's calibrated profile, and score both.

    The profile is the given one for the row's chip, else the shipped ``<chip>-cal`` (``shipped``).
    With ``holdout`` the calibrated predictions use engine terms fitted without the row (k-fold by
    case), and a by-source hold-out (engine terms fitted on the other sources) is summarised too.
    Rows whose chip has no profile are skipped when profiles were given, else predicted on the spec
    sheet only.  A row the model cannot run is skipped with the error's line as reason.
    """
    if len(rows) > MAX_VALIDATE_ROWS:
        raise E2EError(
            f"rows: {len(rows):,} rows is over validate's ceiling of {MAX_VALIDATE_ROWS:,} (about 0.1 s of CPU per "
            "row, more with holdout); validate a sample or split the file"
        )
    chosen = list(profiles) or (shipped_profiles(rows) if shipped else [])
    cases: list[Case] = []
    skipped: list[Skipped] = []
    for row in rows:
        hw = profile_for(row, chosen) if chosen else None
        if profiles and hw is None:
            skipped.append(Skipped(row.id, row.source, f"no --hardware profile for {row.hardware}"))
            continue
        try:
            spec = predict(row, None)
            predicted = predict(row, hw) if hw is not None else spec
        except RooflineError as exc:
            skipped.append(Skipped(row.id, row.source, str(exc)))
            continue
        tier = f"calibrated profile {hw.name}" if hw is not None else "spec sheet"
        mine = [
            replace(
                c,
                predicted_spec=float(spec[QUANTITIES[c.quantity][1]]),
                ratio_spec=float(spec[QUANTITIES[c.quantity][1]]) / c.measured,
                tier=tier,
            )
            for c in row_cases(row, predicted, hw.name if hw is not None else "")
            if QUANTITIES[c.quantity][1] in spec
        ]
        if not mine:
            skipped.append(Skipped(row.id, row.source, "no quantity both measured and predicted"))
        cases.extend(mine)
    spec_cases = [replace(c, predicted=c.predicted_spec, ratio=c.ratio_spec) for c in cases]
    by_source: dict[str, dict[str, object]] = {}
    label = "spec sheet and calibrated profiles (engine terms fitted on these rows: in-sample)"
    if holdout and chosen:
        from roofline.calibrate.engine.engine_fit import holdout_predictions, row_designs, source_holdout_predictions

        designs = row_designs(rows, {row.hardware: hw for row in rows if (hw := profile_for(row, chosen)) is not None})
        held = _with_predictions(cases, holdout_predictions(designs), "held out by case")
        dropped = len(cases) - len(held)
        by_source = summarize(_with_predictions(cases, source_holdout_predictions(designs), "held out by source"))
        cases = held
        label = (
            "calibrated profiles with engine terms held out by case (5-fold, seeded; leave one row out "
            "for an engine with too few rows for 5 folds)"
            + (f"; {dropped} case(s) without a held-out fit dropped" if dropped else "")
        )
    return Validation(
        cases=cases,
        skipped=skipped,
        summary=summarize(cases),
        summary_spec=summarize(spec_cases),
        summary_by_source_holdout=by_source,
        tier=label,
    )
