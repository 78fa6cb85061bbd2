"""Calibration: measured kernel timings -> a calibrated hardware profile, with honest errors.

* :mod:`.schema`: the measured-timing CSV schema, read/write.
* :mod:`.importers`: public formats (aiconfigurator, vidur) -> schema.
* :mod:`.models`: physical per-op time models (pure numpy).
* :mod:`.fit`: least squares on log error, held-out splits, profiles.
* :mod:`.measure`: local microbenchmarks (numpy; torch optional).
* :mod:`.report`: the offline HTML report (``write_calibration_report``).
"""

from __future__ import annotations

from .fit import calibrate, evaluate, op_time, predict, spec_predict
from .schema import COLUMNS, OPS, CalibrationError, Measurements, read_measurements

__all__ = [
    "COLUMNS",
    "OPS",
    "CalibrationError",
    "Measurements",
    "calibrate",
    "evaluate",
    "op_time",
    "predict",
    "read_measurements",
    "spec_predict",
]
