"""The one place an end-to-end row becomes a prediction: :func:`predict_row`.

Contract (relied on by :mod:`.validate`; the body will move to the tp/pp/ep step model):

``predict_row(row, hw_ref=None) -> dict[str, float]`` returns predicted values keyed by the
schema's measured columns, in SI units: ``ttft_s``, ``tpot_s``, ``output_tokens_per_s``
(whole deployment) and ``requests_per_s``.  A key is absent when the model does not predict
that quantity for the row's load.  ``hw_ref`` (a built-in name, a YAML/calibrated-profile path
or a :class:`~roofline.specs.HardwareSpec`) replaces the row's hardware; None uses the row's.
A row the model cannot run (it does not fit, unknown model) raises a one-line RooflineError.

Today's body uses :func:`roofline.multichip.serve`, the engine behind ``roofline serve``:

* ``static``: ``serve --mode static -b batch``: TTFT is the batch's prefill, TPOT one decode
  step of the batch at context I + O/2, throughput batch·O over prefill + O steps;
* ``concurrency``: ``serve --mode interleaved -b concurrency`` (closed loop: the batch is the
  number of clients);
* ``rate`` with a finite rate that one replica sustains: ``serve --arrival-rate`` (Little's law,
  M/D/1 prefill queue), throughput = λ·O;
* ``rate`` ``inf`` or a rate one replica cannot sustain: ``interleaved`` at the largest batch
  that fits in HBM at context I + O (capped at ``num_requests``): the engine's own batch cap is
  not in the data.

Each replica has tp·pp chips and the deployment dp replicas (throughputs × dp, rates ÷ dp).
pp > 1 is treated as tp·pp chips in one group and ep is not modelled (today's step model has
neither); the current ``serve`` adds no tensor-parallel collective time.
"""

from __future__ import annotations

import math

from ..analysis import Precision, decode_step
from ..errors import RooflineError
from ..multichip import serve
from ..specs import HardwareSpec, ModelSpec, load_hardware, load_model
from .schema import E2ERow


def row_precision(row: E2ERow) -> Precision:
    """The row's weight, KV-cache and compute dtypes."""
    return Precision(weights=row.weight_dtype, kv=row.kv_dtype, compute=row.compute_dtype)


def max_fitting_batch(model: ModelSpec, hw: HardwareSpec, chips: int, context: float, precision: Precision) -> int:
    """The largest batch whose weights + KV at ``context`` fit in the replica's HBM (0 if none)."""
    result = decode_step(model, hw, chips, 1, context, precision)
    return int(result.max_batch)


def predict_row(row: E2ERow, hw_ref: str | HardwareSpec | None = None) -> dict[str, float]:
    """Predicted ttft_s, tpot_s, output_tokens_per_s, requests_per_s of one row (see module doc)."""
    model = load_model(row.model)
    hw = load_hardware(hw_ref if hw_ref is not None else row.hardware)
    precision = row_precision(row)
    chips = row.tp * row.pp
    i = row.mean_input_len
    o = row.mean_output_len
    isl, osl = max(int(round(i)), 1), max(int(round(o)), 1)
    if row.load == "static":
        return _serve(model, hw, "static", isl, osl, chips, int(row.batch or 1), precision, row.dp)
    if row.load == "concurrency":
        per_replica = max(int(math.ceil((row.concurrency or 1) / row.dp)), 1)
        return _serve(model, hw, "interleaved", isl, osl, chips, per_replica, precision, row.dp)
    rate = row.arrival_rate if row.arrival_rate is not None else math.inf
    if math.isfinite(rate):
        res = serve(model, hw, "interleaved", isl, osl, chips, 1, precision, arrival_rate=rate / row.dp)
        cont = res.continuous or {}
        if cont.get("decode_replicas") == 1:
            return {"ttft_s": float(cont["ttft_s"]), "tpot_s": float(cont["tpot_s"]),
                    "output_tokens_per_s": rate * o, "requests_per_s": rate}
    batch = max_fitting_batch(model, hw, chips, i + o, precision)
    if batch < 1:
        raise RooflineError(f"{row.id}: {model.name} does not fit on {chips}x {hw.name} at context {i + o:g}")
    if row.num_requests is not None:
        batch = min(batch, max(int(math.ceil(row.num_requests / row.dp)), 1))
    return _serve(model, hw, "interleaved", isl, osl, chips, batch, precision, row.dp)


def _serve(model: ModelSpec, hw: HardwareSpec, mode: str, isl: int, osl: int, chips: int, batch: int,
           precision: Precision, replicas: int) -> dict[str, float]:
    res = serve(model, hw, mode, isl, osl, chips, batch, precision)
    tokens = res.tokens_per_s_per_chip * res.chips * replicas
    return {"ttft_s": res.ttft_s, "tpot_s": res.tpot_s, "output_tokens_per_s": tokens,
            "requests_per_s": tokens / osl}
