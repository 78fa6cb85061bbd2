"""The one place an end-to-end row becomes a prediction: :func:`predict_row`.

Contract (relied on by :mod:`.validate`; the body will move to the tp/pp/ep step model):

``predict_row(row, hw_ref=None) -> dict[str, float]`` returns predicted values keyed by the
schema's measured columns, in SI units: ``ttft_s``, ``tpot_s``, ``output_tokens_per_s``
(whole deployment) and ``requests_per_s``.  A key is absent when the model does not predict
that quantity for the row's load.  ``hw_ref`` (a built-in name, a YAML/calibrated-profile path
or a :class:`~roofline.specs.HardwareSpec`) replaces the row's hardware; None uses the row's.
A row the model cannot run (it does not fit, unknown model) raises a one-line RooflineError.

Today's body uses :func:`roofline.analyses.shard.serve`, the engine behind ``roofline serve``:

* ``static``: ``serve --mode static -b batch`` (``request`` of the batch): TTFT is the batch's
  prefill, TPOT the mean of its O − 1 decode steps, throughput batch·O over prefill + O − 1 steps;
* ``concurrency``: ``serve --mode mixed -b concurrency`` (closed loop: the batch is the number of
  clients; in-flight batching carries the new prompts in the decode steps);
* ``rate`` with a finite rate that one replica sustains: ``serve --arrival-rate`` (Little's law,
  M/D/1 prefill queue), throughput = λ·O;
* ``rate`` ``inf`` or a rate one replica cannot sustain: ``mixed`` at the largest batch
  that fits in HBM at context I + O with its prompts in flight (capped at ``num_requests``):
  the engine's own batch cap is not in the data.

Each replica is one :class:`~roofline.deploy.Deployment` of tp·pp chips (tensor, pipeline and
expert parallelism with their collectives, the profile's calibrated terms, usable memory), and the
deployment has dp replicas (throughputs × dp, rates ÷ dp).
"""

from __future__ import annotations

import math

from roofline.analyses.serve import serve, static_max_batch
from roofline.analyses.step import Precision, step_from
from roofline.calibrate.engine.schema import E2ERow
from roofline.core.errors import RooflineError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, NO_ENGINE, Deployment, EngineTerms, deployment, engine_terms
from roofline.formulas.serving import mixed_max_batch
from roofline.specs import HardwareSpec, load_hardware, load_model


def row_precision(row: E2ERow) -> Precision:
    """The row's weight, KV-cache and compute dtypes."""
    return Precision(weights=row.weight_dtype, kv=row.kv_dtype, compute=row.compute_dtype)


def engine_key(row: E2ERow) -> str:
    """The profile's ``engine:`` key of a row: '<engine>/<version>' ('any' when the version is not given)."""
    return f"{row.engine}/{row.engine_version or 'any'}"


def row_engine(row: E2ERow, hw: HardwareSpec) -> EngineTerms:
    """The profile's fitted terms for the row's engine and version, else none (kernel times only)."""
    key = engine_key(row)
    if hw.engine and key in hw.engine:
        return engine_terms(hw, key)
    return NO_ENGINE


def row_deployment(row: E2ERow, hw: HardwareSpec, engine: EngineTerms | None = None) -> Deployment:
    """One replica of the row: tp·pp chips with its tp, pp and ep.

    A row with a measured batch or concurrency ran, so its batch fit: it is priced with all of HBM
    (memory utilization 1); max-load rows size their batch with the default usable fraction.
    """
    measured_batch = row.load in ("static", "concurrency")
    return deployment(
        load_model(row.model),
        hw,
        row.tp * row.pp,
        row_precision(row),
        tp=row.tp,
        pp=row.pp if row.pp > 1 else None,
        ep=row.ep if row.ep > 1 else None,
        memory_utilization=1.0 if measured_batch else DEFAULT_MEMORY_UTILIZATION,
        engine=row_engine(row, hw) if engine is None else engine,
    )


def wave_batch(row: E2ERow, dep: Deployment, input_len: int, output_len: int) -> int:
    """The batch a static run holds at once: the row's batch, which ran, so it fit (``dep`` prices it
    with all of HBM); only where even that cannot hold it, the most that does (``serve --mode static``'s
    check, :func:`~roofline.analyses.serve.static_max_batch`), run in waves of that size."""
    batch = int(row.batch or 1)
    return max(min(batch, int(static_max_batch(dep, input_len, output_len))), 1)


def max_fitting_batch(dep: Deployment, context: float) -> int:
    """The largest batch whose weights + KV at ``context`` fit in the replica's usable HBM (0 if none)."""
    return int(step_from(dep, 1, context).max_batch)


def predict_row(
    row: E2ERow, hw_ref: str | HardwareSpec | None = None, engine: EngineTerms | None = None
) -> dict[str, float]:
    """Predicted ttft_s, tpot_s, output_tokens_per_s, requests_per_s of one row (see module doc).

    ``engine`` overrides the profile's entry for the row's engine (the engine fit uses it).
    """
    hw = load_hardware(hw_ref if hw_ref is not None else row.hardware)
    dep = row_deployment(row, hw, engine)
    chips = row.tp * row.pp
    i = row.mean_input_len
    o = row.mean_output_len
    isl, osl = max(int(round(i)), 1), max(int(round(o)), 1)
    if row.load == "static":
        return _serve(dep, "static", isl, osl, wave_batch(row, dep, isl, osl), row.dp)
    if row.load == "concurrency":
        per_replica = max(int(math.ceil((row.concurrency or 1) / row.dp)), 1)
        return _serve(dep, "mixed", isl, osl, per_replica, row.dp)
    rate = row.arrival_rate if row.arrival_rate is not None else math.inf
    if math.isfinite(rate):
        res = serve(dep, "interleaved", isl, osl, 1, arrival_rate=rate / row.dp)
        cont = res.continuous or {}
        if cont.get("decode_replicas") == 1:
            return {
                "ttft_s": float(cont["ttft_s"]),
                "tpot_s": float(cont["tpot_s"]),
                "output_tokens_per_s": rate * o,
                "requests_per_s": rate,
            }
    batch = mixed_max_batch(max_fitting_batch(dep, i + o), osl)  # with its prompts in flight held too
    if batch < 1:
        raise RooflineError(
            f"{row.id}: {row.model} does not fit one decode and a prompt in flight on {chips}x "
            f"{hw.name} at context {i + o:g}"
        )
    if row.num_requests is not None:
        batch = min(batch, max(int(math.ceil(row.num_requests / row.dp)), 1))
    return _serve(dep, "mixed", isl, osl, batch, row.dp)


def _serve(dep: Deployment, mode: str, isl: int, osl: int, batch: int, replicas: int) -> dict[str, float]:
    res = serve(dep, mode, isl, osl, batch)
    # A measured batch ran, so it fit on the real chip even where the catalog's capacity says otherwise.
    tokens = res.tokens_per_s_per_chip_unchecked * res.chips * replicas
    return {"ttft_s": res.ttft_s, "tpot_s": res.tpot_s, "output_tokens_per_s": tokens, "requests_per_s": tokens / osl}
