"""The report's numbers per model: every entry swept at its own rates, merged, and priced at load.

Each hardware entry is its own :func:`~roofline.analyses.sweep.run.decode_sweep` per weight dtype (its
engine entry, its slice sizes, the matmul dtype that goes with the weights), joined by
:func:`~roofline.analyses.sweep.merge.concat`; calibrated entries get a second sweep on their spec
sheet when the page draws bounds.  :mod:`roofline.analyses.targets` then prices each point's prefill and
the request rate its batch carries, which the summary reads for any target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from roofline.analyses.sweep.merge import concat
from roofline.analyses.sweep.result import SweepResult
from roofline.analyses.sweep.run import decode_sweep
from roofline.analyses.targets import ChipSetup, Prefill, concurrency_rate, prefill_of
from roofline.core.errors import OptionError, RooflineError
from roofline.specs import load_model
from roofline.views.report.scenario import HardwareRef, Scenario

#: Routed experts from which a model also tries expert parallelism over each whole slice: fine-grained MoE
#: (DeepSeek's 256, Kimi-K2's 384) is served that way; a few large experts (Mixtral's 8) usually with tp alone.
WIDE_EP_MIN_EXPERTS = 16


@dataclass(frozen=True)
class ModelRun:
    """One model's sweeps and what the summary needs of them.

    ``predicted`` holds every entry at its own rates; ``spec`` the calibrated entries on their spec
    sheets (bounds; None when not drawn); ``points`` the predicted points the summary may choose (the
    workload's context, tp within one scale-up domain unless the scenario keeps it), with each one's
    ``prefill`` and ``full_rate`` (the request rate that fills its batch).
    """

    name: str
    predicted: SweepResult
    spec: SweepResult | None
    points: SweepResult
    prefill: Prefill
    full_rate: np.ndarray

    def label(self, name: str) -> np.ndarray:
        """A block label of every summary point (``hardware``, ``weights``, ...), expanded once and kept."""
        cache = self.__dict__.setdefault("_labels", {})
        if name not in cache:
            cache[name] = self.points.column(name)
        return cache[name]

    def where(self, name: str, value: str) -> np.ndarray:
        """Summary points whose label ``name`` is ``value`` (a bool mask, computed once and kept)."""
        cache = self.__dict__.setdefault("_masks", {})
        if (name, value) not in cache:
            cache[(name, value)] = self.label(name) == value
        return cache[(name, value)]


def entry_chips(ref: HardwareRef, scenario: Scenario) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """(slice sizes, tp degrees) an entry is swept over: its own fixed ones, else the scenario's; with no
    bound drawn and tp across the scale-out network left out, slices beyond one scale-up domain are not
    swept (no prediction point would be kept)."""
    tp = ref.entry.value("tp")
    pp = ref.entry.value("pp")
    ep = ref.entry.value("ep")
    chips = ref.entry.value("chips")
    tps = (int(tp),) if tp is not None else scenario.tp
    if chips is not None:
        sizes: tuple[int, ...] = (int(chips),)
    elif tp is not None:  # one replica: tp x attention-dp (ep / tp where ep is larger) x pp chips
        sizes = (max(int(tp), int(ep or 1)) * int(pp or 1),)
    else:
        sizes = scenario.chips
    if ref.domain and tps is None and "bound" not in scenario.traces and not scenario.scale_out_tp and chips is None:
        sizes = tuple(n for n in sizes if n <= ref.domain) or sizes[:1]
    return sizes, tps


def entry_sweep(name: str, ref: HardwareRef, scenario: Scenario, spec_sheet: bool) -> SweepResult:
    """One entry's points, one sweep per weight dtype (each with its KV dtypes and matmul dtype)."""
    model = load_model(name)
    hw = ref.spec_sheet if spec_sheet else ref.spec
    sizes, tps = entry_chips(ref, scenario)
    pp = ref.entry.value("pp")
    ep = ref.entry.value("ep")
    weights = (str(ref.entry.value("weights")),) if ref.entry.value("weights") else scenario.weights
    results = []
    try:
        for w in weights:
            kv, compute = scenario.precisions(w, hw)
            kv = (str(ref.entry.value("kv")),) if ref.entry.value("kv") else kv
            compute = str(ref.entry.value("compute") or compute)
            results.append(
                decode_sweep(
                    model,
                    [hw],
                    scenario.batch,
                    sizes,
                    scenario.contexts,
                    (w,),
                    kv,
                    tps,
                    compute,
                    scenario.prices,
                    pp=(int(pp),) if pp is not None else scenario.pp,
                    memory_utilization=scenario.memory_utilization,
                    labels=[ref.label],
                    engine=None if spec_sheet else ref.engine,
                    ep=None if ep is None else int(ep),
                    wide_ep=scenario.wide_ep and ep is None and model.num_experts >= WIDE_EP_MIN_EXPERTS,
                )
            )
    except OptionError as exc:
        if not ref.entry.fixed:
            raise
        raise RooflineError(f"hardware entry {ref.entry.text}: {exc}") from None
    return concat(results)


def summary_mask(result: SweepResult, refs: Sequence[HardwareRef], scenario: Scenario) -> np.ndarray:
    """Points the summary may choose: the first decode context, tp within the entry's scale-up domain."""
    keep = np.asarray(result.columns["context"]) == scenario.contexts[0]
    if scenario.scale_out_tp:
        return keep
    domain = {r.label: (r.domain or 0) for r in refs}
    limit = np.array([domain[h] or np.iinfo(np.int64).max for h in result.column("hardware")], dtype=np.int64)
    return keep & (np.asarray(result.columns["tp"]) <= limit)


def model_run(name: str, refs: Sequence[HardwareRef], scenario: Scenario) -> ModelRun:
    """One model: the merged sweeps, the summary's points, each point's prefill and full-batch rate."""
    predicted = concat([entry_sweep(name, r, scenario, False) for r in refs])
    calibrated = [r for r in refs if r.calibrated]
    spec = None
    if calibrated and "bound" in scenario.traces:
        spec = concat([entry_sweep(name, r, scenario, True) for r in calibrated])
    points = predicted.select(np.flatnonzero(summary_mask(predicted, refs, scenario)))
    setups = {r.label: ChipSetup(r.spec, r.engine) for r in refs}
    lengths = scenario.lengths
    prefill = prefill_of(load_model(name), points, setups, lengths, scenario.memory_utilization)
    return ModelRun(name, predicted, spec, points, prefill, concurrency_rate(points, prefill, lengths))
