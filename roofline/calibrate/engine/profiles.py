"""The calibrated profiles shipped with roofline: kernel fits plus engine terms fitted on the shipped rows.

``python -m roofline.calibrate.engine.profiles`` rebuilds ``roofline/data/profiles/<chip>-cal.yaml``:

* kernels: H100 SXM, A100 and B200 from their shipped measurements (``builtin:h100-sxm`` and
  ``builtin:h100-sxm-fused``, ``builtin:a100-80gb``, ``builtin:b200`` and ``builtin:b200-fused``: GEMMs per
  format, attention, collectives, fused MoE, MLA); H200 and GB200 have no kernel tables, so they take the
  fit of the chip of their generation (H100, B200) with their own spec-sheet peaks, bandwidths and SM
  counts, and say so;
* engines: for each chip, every engine/version of the shipped end-to-end rows on it
  (:mod:`roofline.calibrate.engine.engine_fit`); a version with too few measured quantities is fitted with the
  other versions of its engine on that chip, then with the engine's rows on every chip.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from roofline.calibrate.engine.data import load_shipped
from roofline.calibrate.engine.engine_fit import EngineFit, engine_groups, fit_engine, row_designs
from roofline.calibrate.engine.schema import E2ERow
from roofline.calibrate.kernels.data import load_measurements
from roofline.calibrate.kernels.fit import calibrate
from roofline.core.errors import RooflineError
from roofline.core.files import write_bytes_atomic
from roofline.deploy import default_comms_overlap
from roofline.specs import HardwareSpec, dump_yaml, hardware_from_dict, load_hardware

PROFILE_DIR = Path(__file__).resolve().parents[2] / "data" / "profiles"
#: Chips whose kernels are fitted on their own tables, and the tables each uses (fitted one by one).
KERNEL_TABLES = {
    "h100-sxm": ("builtin:h100-sxm", "builtin:h100-sxm-fused"),
    "a100-80gb": ("builtin:a100-80gb",),
    "b200": ("builtin:b200", "builtin:b200-fused"),
}
#: Chips without kernel tables -> (chip whose fit they take, their SM count).
TRANSFERRED = {"h200": ("h100-sxm", 132.0), "gb200": ("b200", 148.0)}


def kernel_profile(chip: str, fitted: dict[str, HardwareSpec]) -> HardwareSpec:
    """The chip's kernel-calibrated profile: its own fit, or a fitted chip's parameters on its spec."""
    if chip in KERNEL_TABLES:
        base = load_hardware(chip).model_copy(update={"calibration": None})
        parts = [calibrate(load_measurements(ref), base)[0].calibration for ref in KERNEL_TABLES[chip]]
        data = base.model_dump()
        data["calibration"] = {
            "source": "; ".join(c.source for c in parts if c is not None),
            "ops": {k: v.model_dump() for c in parts if c is not None for k, v in c.ops.items()},
        }
        return hardware_from_dict(data, f"<calibrated {chip}>")
    donor, sms = TRANSFERRED[chip]
    cal = fitted[donor].calibration
    if cal is None:
        raise RooflineError(f"{donor}: no calibration to transfer to {chip}")
    ops = {}
    for key, entry in cal.ops.items():
        params = dict(entry.params)
        if "num_sms" in params:
            params["num_sms"] = sms
        ops[key] = {**entry.model_dump(), "params": params}
    data = load_hardware(chip).model_dump()
    data["calibration"] = {
        "source": f"transferred from the {donor} kernel fit ({cal.source}): no {chip} kernel "
        f"tables; {chip}'s own peaks, bandwidths and {sms:g} SMs",
        "ops": ops,
    }
    return hardware_from_dict(data, f"<transferred {chip}>")


def engine_fits(rows: Sequence[E2ERow], profiles: dict[str, HardwareSpec]) -> dict[str, dict[str, EngineFit]]:
    """Per chip, per engine key: the fitted terms (pooled over versions, then chips, where rows are few)."""
    out: dict[str, dict[str, EngineFit]] = {}
    for (chip, key), group in engine_groups(row_designs(rows, profiles)).items():
        out.setdefault(chip, {})[key] = fit_engine(key, group, comms_overlap=default_comms_overlap(profiles[chip]))
    return out


def with_engines(profile: HardwareSpec, rows: Sequence[E2ERow]) -> tuple[HardwareSpec, dict[str, EngineFit]]:
    """``profile`` plus an ``engine:`` entry per engine/version of the ``rows`` measured on its chip."""
    mine = [r for r in rows if profile.name == r.hardware or profile.name.startswith(f"{r.hardware}-")]
    if not mine:
        chips = ", ".join(sorted({r.hardware for r in rows}))
        raise RooflineError(
            f"no end-to-end row is on {profile.name} (rows are on: {chips}); pass --hardware for their chip"
        )
    rows = [replace(r, hardware=profile.name) for r in mine]
    fits = {
        key: fit
        for (_, key), group in engine_groups(row_designs(rows, {profile.name: profile})).items()
        for fit in [
            fit_engine(
                key, group, handset=(profile.engine or {}).get(key), comms_overlap=default_comms_overlap(profile)
            )
        ]
    }
    if not fits:
        raise RooflineError(
            f"no engine could be fitted: need at least 12 measured quantities per engine (got {len(rows)} rows)"
        )
    data = profile.model_dump(exclude_none=True)
    data["engine"] = {**(data.get("engine") or {}), **{k: f.profile_entry() for k, f in fits.items()}}
    return hardware_from_dict(data, f"<engine-calibrated {profile.name}>"), fits


HEADER = (
    "# Calibrated profile generated by `python -m roofline.calibrate.engine.profiles` (do not edit by hand):\n"
    "# the spec sheet of hardware/{chip}.yaml, kernel fits (calibration:) and engine terms (engine:)\n"
    "# fitted on roofline/data/e2e/ rows; every fitted number's source is the fit named in its block.\n"
)


def build(out_dir: Path = PROFILE_DIR) -> list[Path]:
    """Fit and write every shipped profile."""
    fitted: dict[str, HardwareSpec] = {}
    for chip in (*KERNEL_TABLES, *TRANSFERRED):
        fitted[chip] = kernel_profile(chip, fitted)
    engines = engine_fits(load_shipped(), fitted)
    written = []
    for chip, profile in fitted.items():
        data = profile.model_dump(exclude_none=True)
        data["name"] = f"{chip}-cal"
        if chip in engines:
            data["engine"] = {key: fit.profile_entry() for key, fit in engines[chip].items()}
        spec = hardware_from_dict(data, f"<profile {chip}>")
        path = out_dir / f"{chip}-cal.yaml"
        text = HEADER.format(chip=chip) + dump_yaml(spec.model_dump(exclude_none=True))
        write_bytes_atomic(path, text.encode("utf-8"))
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    for path in build(Path(argv[0]) if argv else PROFILE_DIR):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
