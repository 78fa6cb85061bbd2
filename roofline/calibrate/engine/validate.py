"""`roofline validate` without the printing: rows + predictions -> cases -> error statistics.

A *case* is one measured quantity of one row beside its prediction; the quantities are those of
:mod:`.quantities` (TTFT, TPOT, E2E, output tokens/s).  Each case says which data priced it (spec sheet
or calibrated profile, the engine entry) and whether that entry was fitted on the case's source.

Statistics per quantity (and by source, model, chip, tp degree, weight dtype and engine): ``n``,
``mape`` (mean of |predicted − measured| / measured), ``median_ape`` and ``gmean_ratio`` =
exp(mean ln(predicted / measured)): above 1 the model over-predicts on average.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from roofline.calibrate.engine.importers import MAX_VALIDATE_ROWS
from roofline.calibrate.engine.predict import overloaded, predict_row, row_engine
from roofline.calibrate.engine.quantities import QUANTITIES, measured_value
from roofline.calibrate.engine.schema import E2EError, E2ERow
from roofline.core.errors import RooflineError
from roofline.deploy import EngineTerms
from roofline.specs import HardwareSpec, hardware_names, load_hardware

GROUPS = {
    "by_source": "source",
    "by_model": "model",
    "by_chip": "hardware",
    "by_tp": "tp",
    "by_dtype": "dtype",
    "by_engine": "engine",
    "by_source_chip": "source_chip",
}
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
    engine: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def source_chip(self) -> str:
        """The row's source and chip: the slice a per-source figure may hide."""
        return f"{self.source} on {self.hardware}"


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
    summary_by_model_holdout: dict[str, dict[str, object]] = field(default_factory=dict)
    summary_by_chip_holdout: dict[str, dict[str, object]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "cases": [c.as_dict() for c in self.cases],
            "summary": self.summary,
            "summary_spec": self.summary_spec,
            "summary_by_source_holdout": self.summary_by_source_holdout,
            "summary_by_model_holdout": self.summary_by_model_holdout,
            "summary_by_chip_holdout": self.summary_by_chip_holdout,
            "tier": self.tier,
            "skipped": [asdict(s) for s in self.skipped],
        }


def abs_pct_error(predicted: float, measured: float) -> float:
    """|predicted − measured| / measured."""
    return abs(predicted - measured) / measured


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
    """Per quantity: error_stats of all its cases, plus one breakdown per :data:`GROUPS` entry (``by_source``,
    ``by_chip``, ..., ``by_source_chip``)."""
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


def _with_predictions(
    cases: Sequence[Case], predictions: Mapping[tuple[str, str], float], how: Mapping[str, str], kind: str
) -> list[Case]:
    """Cases whose prediction is replaced by ``predictions`` (held out); cases without one are dropped."""
    out = []
    for c in cases:
        value = predictions.get((c.id, c.quantity))
        if value is not None and math.isfinite(value) and value > 0:
            out.append(replace(c, predicted=value, ratio=value / c.measured, tier=f"{kind}: {how.get(c.id, '')}"))
    return out


def case_tier(row: E2ERow, hw: HardwareSpec | None, engine: EngineTerms) -> str:
    """Which data priced a row, and whether its engine entry was fitted on the row's source (in-sample)."""
    kernels = f"calibrated profile {hw.name}" if hw is not None else "spec sheet"
    if not engine.active:
        return f"{kernels}, kernels only (no engine entry for {row.engine})"
    if row.source in engine.fitted_sources:
        return f"{kernels} + engine {engine.key}, fitted on this source's rows (in-sample)"
    fitted = ", ".join(engine.fitted_sources) or "no rows: documented values"
    return f"{kernels} + engine {engine.key}, held out (fitted on: {fitted})"


def validate(
    rows: Sequence[E2ERow],
    profiles: Sequence[HardwareSpec] = (),
    predict: Predictor = predict_row,
    holdout: bool = False,
    shipped: bool = True,
) -> Validation:
    """Predict every row with the spec sheet and with its chip's calibrated profile, each with the row's
    engine entry, and score both.

    The profile is the given one for the row's chip, else the shipped ``<chip>-cal`` (``shipped``).
    Each case says whether its engine entry was fitted on its source (in-sample) or not (held out).
    With ``holdout`` the calibrated predictions use entries refitted without the row's source (the
    cases and ``summary``), and summaries held out by model and by chip are added.  Rows whose chip has
    no profile are skipped when profiles were given, else predicted on the spec sheet only.  A row the
    model cannot run is skipped with the error's line as reason.
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
            skipped.append(Skipped(row.id, row.source, f"no hardware profile given for {row.hardware}"))
            continue
        if overloaded(row) and row.timeout_s is None:
            failed = row.num_failed or 0
            reason = (
                f"overloaded: {failed} of {failed + (row.num_requests or 0)} requests failed at the client, and "
                "the row gives no client timeout (timeout_s) to simulate them with"
            )
            skipped.append(Skipped(row.id, row.source, reason))
            continue
        try:
            spec = predict(row, None)
            predicted = predict(row, hw) if hw is not None else spec
            engine = row_engine(row, hw if hw is not None else load_hardware(row.hardware))
        except RooflineError as exc:
            skipped.append(Skipped(row.id, row.source, str(exc)))
            continue
        tier = case_tier(row, hw, engine)
        mine = [
            replace(
                c,
                predicted_spec=float(spec[QUANTITIES[c.quantity][1]]),
                ratio_spec=float(spec[QUANTITIES[c.quantity][1]]) / c.measured,
                tier=tier,
                engine=engine.key,
            )
            for c in row_cases(row, predicted, hw.name if hw is not None else "")
            if QUANTITIES[c.quantity][1] in spec
        ]
        if not mine:
            skipped.append(Skipped(row.id, row.source, "no quantity both measured and predicted"))
        cases.extend(mine)
    spec_cases = [replace(c, predicted=c.predicted_spec, ratio=c.ratio_spec) for c in cases]
    held: dict[str, list[Case]] = {}
    label = "spec sheet and calibrated profiles with each row's engine entry (each case says in-sample or held out)"
    if holdout and chosen:
        from roofline.calibrate.engine.holdout import ATTRIBUTES, entry_groups, held_out_predictions

        groups = entry_groups(rows, lambda r: profile_for(r, chosen))
        for name, attribute in ATTRIBUTES.items():
            preds, how = held_out_predictions(groups, attribute)
            held[name] = _with_predictions(cases, preds, how, f"held out by {name}")
        kept = {(c.id, c.quantity) for c in held["source"]}
        dropped = sum((c.id, c.quantity) not in kept for c in cases)
        cases = held["source"]
        label = (
            "calibrated profiles with engine entries refitted without the row's source (an entry left with no "
            "rows: its documented values)" + (f"; {dropped} case(s) without an engine entry dropped" if dropped else "")
        )
    return Validation(
        cases=cases,
        skipped=skipped,
        summary=summarize(cases),
        summary_spec=summarize(spec_cases),
        summary_by_source_holdout=summarize(held["source"]) if held else {},
        tier=label,
        summary_by_model_holdout=summarize(held["model"]) if held else {},
        summary_by_chip_holdout=summarize(held["chip"]) if held else {},
    )
