"""Engine entries from fits: the profile entry of a fit, ``calibrate fit``'s engine path, and the built-ins.

``python -m roofline.calibrate.engine.entries`` refits the built-in entries (``roofline/data/engines/``)
on the shipped end-to-end rows, each row priced with its chip's shipped calibrated profile, and rewrites
their fitted numbers; documented numbers stay as they are.  Every number is written with a comment
naming its source.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from roofline.calibrate.engine.data import load_shipped
from roofline.calibrate.engine.fit import EntryFit, fit_entry, fit_rows
from roofline.calibrate.engine.holdout import documented, entry_groups, fitted_entries
from roofline.calibrate.engine.predict import engine_key, row_engine
from roofline.calibrate.engine.schema import E2ERow
from roofline.calibrate.engine.validate import profile_for, shipped_profiles
from roofline.core.errors import RooflineError
from roofline.core.files import write_bytes_atomic
from roofline.deploy import NO_ENGINE, EngineTerms
from roofline.deploy.engine_builtin import DATA_DIR, builtin_entries, builtin_files
from roofline.deploy.engine_registry import REGISTRY
from roofline.specs import HardwareSpec, hardware_from_dict
from roofline.specs.files import read_yaml


def term_source(fit: EntryFit, name: str) -> str:
    """How a fitted term's value was got: the rows, their sources, its spread and the held-out error."""
    held = fit.stats.get("holdout_mape")
    err = f", held-out MAPE {held:.1%}" if held is not None else ""
    spread = f", spread {fit.spread[name]:.3g} {REGISTRY[name].unit}" if name in fit.spread else ""
    return f"fitted: {fit.rows} end-to-end rows ({', '.join(fit.sources)}){spread}{err}"


def entry_dict(fit: EntryFit, base: EngineTerms) -> dict[str, object]:
    """The ``engine:`` entry of a fit: the base entry's documented terms with the fitted ones over them."""
    sources = {**base.term_sources, **{n: term_source(fit, n) for n in fit.fitted}}
    absent = [n for n in fit.fitted if fit.values[n] <= REGISTRY[n].low]
    return {
        "policy": base.policy or "decode-first",
        "terms": {n: float(v) for n, v in fit.values.items()},
        "term_sources": {n: sources.get(n, f"default: {REGISTRY[n].source}") for n in fit.values},
        "spread": {n: float(v) for n, v in fit.spread.items()},
        "rows": fit.rows,
        "sources": fit.sources,
        "fit": {k: float(v) for k, v in fit.stats.items()},
        "at_bound": sorted(absent + fit.at_upper),
        "at_upper_bound": sorted(fit.at_upper),
    }


def base_entry(key: str, hw: HardwareSpec) -> EngineTerms:
    """Where a user's fit of ``key`` starts: that entry's (or its engine's nearest) documented values, else
    the registry's defaults."""
    name, _, version = key.partition("/")
    probe = E2ERow(id="", source="", model="", hardware="", weight_dtype="bf16", kv_dtype="bf16",
                   compute_dtype="bf16", engine=name, engine_version=version if version != "any" else "",
                   load="static")  # fmt: skip
    entry = row_engine(probe, hw)
    return documented(entry) if entry.registry_entry else replace(NO_ENGINE, key=key, policy="decode-first")


def with_engines(profile: HardwareSpec, rows: Sequence[E2ERow]) -> tuple[HardwareSpec, dict[str, EntryFit]]:
    """``profile`` plus an ``engine:`` entry per engine/version of the ``rows`` measured on its chip, fitted
    in registry terms (simulated rows at a rate or a concurrency, static rows by the step model)."""
    mine = [replace(r, hardware=profile.name) for r in rows if profile_for(r, [profile]) is profile]
    if not mine:
        chips = ", ".join(sorted({r.hardware for r in rows}))
        raise RooflineError(
            f"no end-to-end row is on {profile.name} (rows are on: {chips}); give a profile of their chip"
        )
    fits: dict[str, EntryFit] = {}
    entries = {}
    for key in sorted({engine_key(r) for r in mine}):
        group = fit_rows([r for r in mine if engine_key(r) == key], profile)
        base = base_entry(key, profile)
        fits[key] = fit_entry(key, group, base)
        entries[key] = entry_dict(fits[key], base)
    data = profile.model_dump(exclude_none=True)
    data["engine"] = {**(data.get("engine") or {}), **entries}
    return hardware_from_dict(data, f"<engine-calibrated {profile.name}>"), fits


def _yaml_value(value: object) -> str:
    return json.dumps(value) if isinstance(value, (str, list)) else repr(value)


def entry_yaml(key: str, entry: dict[str, object]) -> str:
    """One entry as YAML, every number with a comment naming its source."""
    sources = entry.get("term_sources") or {}
    lines = [f"{key}:", f"  policy: {entry.get('policy', 'decode-first')}  # the simulator's scheduling policy"]
    lines.append("  terms:")
    for name, value in (entry.get("terms") or {}).items():  # type: ignore[union-attr]
        lines.append(f"    {name}: {float(value)!r}  # {sources.get(name, 'default')}")  # type: ignore[union-attr]
    lines.append("  term_sources:")
    lines += [f"    {n}: {json.dumps(s)}" for n, s in sources.items()]  # type: ignore[union-attr]
    if entry.get("spread"):
        lines.append("  spread:")
        lines += [f"    {n}: {float(v)!r}  # leave-one-row-out standard deviation" for n, v in entry["spread"].items()]  # type: ignore[union-attr]
    if entry.get("rows"):
        lines.append(f"  rows: {entry['rows']}  # end-to-end rows fitted")
        lines.append(f"  sources: {json.dumps(entry.get('sources', []))}")
        lines.append("  fit:")
        lines += [f"    {k}: {float(v)!r}  # of the fit's rows" for k, v in (entry.get("fit") or {}).items()]  # type: ignore[union-attr]
        for list_key in ("at_bound", "at_upper_bound"):
            lines.append(f"  {list_key}: {json.dumps(entry.get(list_key, []))}")
    return "\n".join(lines) + "\n"


def header(path: Path) -> str:
    """A built-in file's leading comment block, kept as written."""
    text = path.read_text(encoding="utf-8")
    return "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))


def build() -> list[Path]:
    """Refit the built-in entries that shipped rows measure and rewrite their files."""
    rows = load_shipped()
    profiles = shipped_profiles(rows)
    groups = entry_groups(rows, lambda r: profile_for(r, profiles))
    fits = fitted_entries(groups)
    written = []
    for path in builtin_files():
        data = read_yaml(path)
        out = header(path)
        for key, raw in data.items():
            fit = fits.get(str(key))
            entry = entry_dict(fit, groups.base[str(key)]) if fit else raw
            out += entry_yaml(str(key), entry)  # type: ignore[arg-type]
        write_bytes_atomic(path, out.encode("utf-8"))
        written.append(path)
    builtin_entries.cache_clear()
    return written


def main(argv: list[str]) -> int:
    for path in build():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["DATA_DIR", "build", "entry_dict", "entry_yaml", "with_engines"]
