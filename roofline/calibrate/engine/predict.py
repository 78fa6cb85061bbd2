"""The one place an end-to-end row becomes a prediction: :func:`predict_row`.

Contract (relied on by :mod:`.validate` and the engine fit):

``predict_row(row, hw_ref=None, engine=None) -> dict[str, float]`` returns predicted values keyed by
the schema's measured columns, in SI units: ``ttft_s``, ``tpot_s``, ``output_tokens_per_s`` (whole
deployment) and ``requests_per_s``; simulated rows add ``itl_s``, ``e2e_s`` and p50/p90/p99 of TTFT
and E2E.  ``hw_ref`` (a built-in name, a YAML/calibrated-profile path or a
:class:`~roofline.specs.HardwareSpec`) replaces the row's hardware; None uses the row's.  The row's
engine entry (:func:`row_engine`: the profile's, the built-in one, else the nearest built-in version,
named in sources) prices its steps and its request path; ``engine`` overrides it.  A row the model
cannot run raises a one-line RooflineError.

* ``static``: a request of the batch (``serve --mode static -b batch``): TTFT is the batch's prefill,
  TPOT the mean of its O − 1 decode steps, throughput batch·O over prefill + (O − 1) steps;
* ``concurrency``, or ``rate`` at a finite rate: the simulator (:mod:`.simulated`) with the row's
  scheduler knobs (else the entry's), prefix-hit rate and request count, plus the entry's request path;
* ``rate`` ``inf`` (every request at once, a max-throughput run): the steady state of in-flight
  batching (``serve --mode mixed``) at the largest batch that fits in HBM at context I + O with its
  prompts in flight, capped by the entry's ``max_num_seqs`` and by ``num_requests``.

Each replica is one :class:`~roofline.deploy.Deployment` of tp·pp chips (tensor, pipeline and expert
parallelism with their collectives, the profile's calibrated terms, usable memory), and the deployment
has dp replicas (throughputs × dp, rates ÷ dp).
"""

from __future__ import annotations

import math
from dataclasses import replace

from roofline.analyses.serve import static_max_batch
from roofline.analyses.step import Precision, step_from
from roofline.calibrate.engine.design import MixedDesign, StaticDesign
from roofline.calibrate.engine.schema import E2ERow
from roofline.calibrate.engine.simulated import simulated_row
from roofline.core.errors import RooflineError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION, NO_ENGINE, Deployment, EngineTerms, deployment, engine_terms
from roofline.deploy.engine import entries_for, version_order
from roofline.formulas.serving import mixed_max_batch
from roofline.specs import HardwareSpec, load_hardware, load_model


def row_precision(row: E2ERow) -> Precision:
    """The row's weight, KV-cache and compute dtypes."""
    return Precision(weights=row.weight_dtype, kv=row.kv_dtype, compute=row.compute_dtype)


def engine_key(row: E2ERow) -> str:
    """The entry key of a row: '<engine>/<version>' ('any' when the version is not given)."""
    return f"{row.engine}/{row.engine_version or 'any'}"


def row_engine(row: E2ERow, hw: HardwareSpec) -> EngineTerms:
    """The entry for the row's engine and version: the profile's, else the built-in one, else the nearest
    built-in version of that engine (named in its source); none (kernel times only) for an engine without
    any entry."""
    entries = entries_for(hw)
    key = engine_key(row)
    if key in entries:
        return engine_terms(hw, key)
    same = [k for k in entries if k.split("/")[0] == row.engine]
    if not same:
        return NO_ENGINE
    want = version_order(row.engine_version or "")
    near = min(same, key=lambda k: (_distance(version_order(k.split("/", 1)[1]), want), k))
    terms = engine_terms(hw, near)
    return replace(terms, source=f"{terms.source}; nearest entry to {key}, which has none")


def _distance(a: tuple[tuple[int, str], ...], b: tuple[tuple[int, str], ...]) -> tuple[int, ...]:
    """How far two versions are apart, major part first."""
    n = max(len(a), len(b))
    pad = ((0, ""),)
    return tuple(abs(x[0] - y[0]) for x, y in zip(a + pad * (n - len(a)), b + pad * (n - len(b)), strict=True))


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
    """Predicted ttft_s, tpot_s, output_tokens_per_s, requests_per_s (and, simulated, itl_s, e2e_s and
    percentiles) of one row (see module doc).  ``engine`` overrides the row's entry (the fit uses it)."""
    hw = load_hardware(hw_ref if hw_ref is not None else row.hardware)
    dep = row_deployment(row, hw, engine)
    if is_simulated(row):
        return simulated_row(row, dep).predict(dep.engine)
    return closed_form(row, dep)


#: Share of failed requests above which a run counts as overloaded.
OVERLOAD = 0.05


def overloaded(row: E2ERow) -> bool:
    """Whether over 5% of the run's requests failed at the client (timeouts): the survivors' latencies are
    what the clients measured; the simulator reproduces them with the row's client timeout (``timeout_s``),
    but they are too sensitive to the backlog to fit engine terms on."""
    failed = row.num_failed or 0
    return failed > OVERLOAD * (failed + (row.num_requests or 0))


def is_simulated(row: E2ERow) -> bool:
    """Whether the simulator prices the row: a finite arrival rate or a concurrency (a queue forms)."""
    return row.load == "concurrency" or (row.load == "rate" and math.isfinite(row.arrival_rate or math.inf))


def closed_form(row: E2ERow, dep: Deployment) -> dict[str, float]:
    """A static batch (a request of the batch), or a max-throughput run (every request sent at once): the
    steady state of in-flight batching at the largest batch the engine holds, which the simulator's
    long runs approach (``serve --mode mixed``); priced with ``dep``'s engine entry."""
    return closed_form_design(row, dep).predict(dep.engine)


def closed_form_design(row: E2ERow, dep: Deployment) -> StaticDesign | MixedDesign:
    """The row's steps as engine-free device times (:mod:`.design`), to price at any entry."""
    isl, osl = max(int(round(row.mean_input_len)), 1), max(int(round(row.mean_output_len)), 1)
    if row.load == "static":
        return StaticDesign.build(dep, wave_batch(row, dep, isl, osl), isl, osl, row.dp)
    context = row.mean_input_len + row.mean_output_len
    batch = mixed_max_batch(max_fitting_batch(dep, context), osl)  # with its prompts in flight held too
    if batch < 1:
        raise RooflineError(
            f"{row.id}: {row.model} does not fit one decode and a prompt in flight on {row.tp * row.pp}x "
            f"{dep.hw.name} at context {context:g}"
        )
    if dep.engine.registry_entry:
        batch = min(batch, int(row.max_num_seqs or dep.engine.max_num_seqs))
    if row.num_requests is not None:
        batch = min(batch, max(int(math.ceil(row.num_requests / row.dp)), 1))
    return MixedDesign.build(dep, batch, isl, osl, row.dp)
