"""The built-in engine entries: ``roofline/data/engines/<engine>.yaml``, one mapping of ``<engine>/<version>``
to an entry in registry terms, usable with every chip profile and with spec sheets.

Their numbers are documented defaults (each with its source in ``term_sources`` and a YAML comment) or
fits to the shared end-to-end rows (``python -m roofline.calibrate.engine.entries`` rewrites those).
"""

from __future__ import annotations

import functools
from pathlib import Path

from roofline.core.errors import SpecError
from roofline.deploy.engine import BUILT_IN
from roofline.specs import EngineCalibration
from roofline.specs.files import read_yaml

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "engines"
#: How a built-in entry's origin reads in sources.
BUILT_IN_ORIGIN = BUILT_IN


def builtin_files() -> list[Path]:
    """The built-in entry files, in name order."""
    return sorted(DATA_DIR.glob("*.yaml"))


@functools.cache
def builtin_entries() -> dict[str, EngineCalibration]:
    """Every built-in entry by key, validated like a profile's ``engine:`` section."""
    out: dict[str, EngineCalibration] = {}
    for path in builtin_files():
        for key, entry in read_yaml(path).items():
            try:  # package data, checked by the tests: no schema pass at start-up (terms are checked on use)
                out[str(key)] = EngineCalibration(**entry)
            except TypeError as exc:
                raise SpecError(f"{path}: {key}: {exc}") from None
    return out
