"""Calibration: measured kernel timings -> a calibrated hardware profile, with honest errors.

* :mod:`.schema`: the measured-timing CSV schema, read/write.
* :mod:`.importers`: public formats (aiconfigurator, vidur) -> schema.
* :mod:`.models`: physical per-op time models (pure numpy).
* :mod:`.keys`: profile keys ``<op_key>/<dtype>`` (gemm/bf16, gemm_fp8_block/fp8, ...).
* :mod:`.lsq`: bounded multi-start least squares on log error, parameters at a bound.
* :mod:`.predict`: models per key, predictions, per-dtype evaluation, uncovered rows.
* :mod:`.fit`: one fitted entry per op class and dtype, held-out splits, profiles.
* :mod:`.lookup`: what a profile covers; ``op_time`` with its source label (for the step model).
* :mod:`.measure`: local microbenchmarks (numpy; torch optional).
* :mod:`.report`: the offline HTML report (``write_calibration_report``).
"""

from __future__ import annotations

from roofline.calibrate.kernels.fit import calibrate, evaluate, op_time, predict, spec_predict
from roofline.kernels.lookup import covered, entry_for
from roofline.kernels.schema import COLUMNS, OPS, CalibrationError, Measurements, read_measurements

__all__ = [
    "COLUMNS",
    "OPS",
    "CalibrationError",
    "Measurements",
    "calibrate",
    "covered",
    "entry_for",
    "evaluate",
    "op_time",
    "predict",
    "read_measurements",
    "spec_predict",
]
