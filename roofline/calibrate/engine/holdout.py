"""Engine entries fitted on the shipped rows, and predictions held out by source, by model and by chip.

Each row belongs to the entry of its engine and version (:func:`~.predict.row_engine`: a version without
an entry takes its engine's nearest one).  An entry is fitted across chips and models, each row priced
with its own chip's calibrated kernels.  Held out by an attribute (source, model or chip): for each of its
values, every entry is refitted on the rows without that value and predicts the rows with it; an entry
left with no rows falls back to its documented values (the registry defaults of its fitted terms).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from roofline.calibrate.engine.fit import FitRow, fit_entry, fit_rows, with_values
from roofline.calibrate.engine.predict import overloaded, row_engine
from roofline.calibrate.engine.quantities import QUANTITIES
from roofline.calibrate.engine.schema import E2ERow
from roofline.core.errors import RooflineError
from roofline.deploy import EngineTerms
from roofline.specs import HardwareSpec

#: Held-out attributes: summary key -> the row's attribute.
ATTRIBUTES = {"source": "source", "model": "model", "chip": "hardware"}


def documented(entry: EngineTerms) -> EngineTerms:
    """``entry`` with every fitted term back at its registry default: what is known without rows."""
    fitted = [n for n, s in entry.term_sources.items() if str(s).startswith("fitted")]
    values = {n: v for n, v in entry.values.items() if n not in fitted}
    return replace(entry, values=values, term_sources={n: s for n, s in entry.term_sources.items() if n not in fitted})


@dataclass
class EntryGroups:
    """The rows of each engine entry (ready to fit), and each entry's documented starting point."""

    rows: dict[str, list[FitRow]]
    base: dict[str, EngineTerms]
    skipped: dict[str, str]


def entry_groups(rows: Sequence[E2ERow], profile: Callable[[E2ERow], HardwareSpec | None]) -> EntryGroups:
    """Group the rows by their entry (rows of an engine without entries, or without a profile, are left out)."""
    groups: dict[str, list[FitRow]] = defaultdict(list)
    base: dict[str, EngineTerms] = {}
    skipped: dict[str, str] = {}
    for row in rows:
        hw = profile(row)
        if hw is None:
            skipped[row.id] = f"no calibrated profile for {row.hardware}"
            continue
        entry = row_engine(row, hw)
        if overloaded(row) and row.timeout_s is None:
            skipped[row.id] = "overloaded (clients timed out) and no client timeout (timeout_s) to simulate it with"
            continue
        if not entry.registry_entry:
            skipped[row.id] = f"no engine entry for {row.engine} (kernel times only)"
            continue
        try:
            (fr,) = fit_rows([row], hw)
        except RooflineError as exc:
            skipped[row.id] = str(exc)
            continue
        groups[entry.key].append(fr)
        base.setdefault(entry.key, documented(entry))
    return EntryGroups(dict(groups), base, skipped)


def fitted_entries(groups: EntryGroups, spread: bool = True) -> dict[str, object]:
    """Every entry fitted on all its rows (:class:`~.fit.EntryFit` by key; an entry whose rows determine
    none of its terms is left out)."""
    out = {}
    for key, rows in groups.rows.items():
        try:
            out[key] = fit_entry(key, rows, groups.base[key], spread=spread)
        except RooflineError:
            continue
    return out


def _predict(rows: Sequence[FitRow], engine: EngineTerms) -> dict[tuple[str, str], float]:
    out = {}
    for r in rows:
        pred = r.predict(engine)
        out.update({(r.row.id, q): pred[QUANTITIES[q][1]] for q in r.cases() if QUANTITIES[q][1] in pred})
    return out


def held_out_predictions(groups: EntryGroups, attribute: str) -> tuple[dict[tuple[str, str], float], dict[str, str]]:
    """(row id, quantity) -> prediction by entries fitted without the row's value of ``attribute``; and, per
    row id, how its entry was got (refitted on which rows, or documented values)."""
    preds: dict[tuple[str, str], float] = {}
    how: dict[str, str] = {}
    for key, rows in groups.rows.items():
        values = sorted({str(getattr(r.row, attribute)) for r in rows})
        for v in values:
            test = [r for r in rows if str(getattr(r.row, attribute)) == v]
            train = [r for r in rows if str(getattr(r.row, attribute)) != v]
            engine, label = groups.base[key], f"{key}: documented values (no other {attribute} to fit on)"
            if train:
                try:
                    fit = fit_entry(key, train, groups.base[key], spread=False)
                    engine = with_values(groups.base[key], {n: fit.values[n] for n in fit.fitted})
                    label = f"{key}: fitted without {attribute} {v} ({len(train)} rows)"
                except RooflineError:
                    label = f"{key}: documented values (the other rows determine none of its terms)"
            preds.update(_predict(test, engine))
            how.update({r.row.id: label for r in test})
    return preds, how
