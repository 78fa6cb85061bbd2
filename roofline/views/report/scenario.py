"""What a report sweeps, and the hardware entries it names: chips, hardware files, calibrated profiles.

The built-in default scenario is :class:`Scenario`'s field defaults, kept in the constants below (one
place: switching a default chip or model is a one-line change).  Each hardware entry is loaded once
and keeps its own label: the built-in name, or the file's name (``h100-cal.yaml``), so a chip and
its calibrated profile are two traces, never merged by the chip name inside the file.  An entry may
name an engine entry of its profile (``h100-sxm-cal@trtllm/1.0``) and fix part of its deployment
(``h200:tp=8,weights=fp8``; see :mod:`roofline.views.report.entries`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from roofline.analyses.lengths import LengthDistribution, fixed_lengths
from roofline.core.errors import OptionError, RooflineError, SpecError
from roofline.deploy import DEFAULT_MEMORY_UTILIZATION
from roofline.deploy.bands import tier_of
from roofline.deploy.engine import engine_terms
from roofline.specs import HardwareSpec, load_model
from roofline.views.report.entries import Entry, parse_entry

#: Today's defaults: a current dense model in two sizes, a MoE model and an MLA+MoE model.
DEFAULT_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-r1")
#: H100, H200, B200, MI300X and a TPU; the built-in calibrated profile and its engine entry where one ships.
DEFAULT_HARDWARE = (
    "h100-sxm-cal@trtllm/1.0",
    "h200-cal@trtllm/1.0",
    "b200-cal@trtllm/1.0",
    "mi300x",
    "tpu-v6e",
)
DEFAULT_BATCH = tuple(int(b) for b in np.unique(np.round(np.geomspace(1, 4096, 64))))
DEFAULT_CHIPS = (1, 2, 4, 8, 16, 32, 64)
#: The default workload: a 4,096-token prompt and 1,024 generated tokens per request.
DEFAULT_INPUT_LEN = 4096
DEFAULT_OUTPUT_LEN = 1024
#: The default interactivity target (means, as the capacity plan meets them): 50 ms per output token
#: (20 tokens/s per user) and the first token within 1 s.  For scale, MLPerf Inference v5.0 asks p99
#: TTFT <= 450 ms and TPOT <= 40 ms in its interactive Llama-2-70B scenario, 2 s and 200 ms in its
#: server scenario (mlcommons.org/2025/04/llm-inference-v5).
DEFAULT_TTFT_SLO_S = 1.0
DEFAULT_TPOT_SLO_S = 0.05
#: KV cache / matmul dtype "same": the weights' dtype (matmuls fall back to bf16 on a chip without its FLOP/s).
SAME = "same"
TRACE_KINDS = ("bound", "prediction")
#: The models of the book's LLaMA-2-13B tables (the book section appears when one is in the scenario).
BOOK_MODELS = ("llama-2-13b", "llama-2-13b-gqa")


@dataclass(frozen=True)
class HardwareRef:
    """One hardware entry: its label on the page, what was typed, the loaded spec, its engine and layout."""

    label: str
    ref: str
    spec: HardwareSpec
    entry: Entry = field(default_factory=Entry)

    @property
    def calibrated(self) -> bool:
        """True for a calibrated profile (fitted kernels): its prediction uses them."""
        return self.spec.calibration is not None and bool(self.spec.calibration.ops)

    @property
    def engine(self) -> str | None:
        return self.entry.engine

    @functools.cached_property
    def data_tier(self) -> str:
        """The data tier of this entry's predictions (its bands' tier): spec sheet, calibrated kernels, or
        calibrated kernels with an engine entry (worked out once)."""
        return tier_of(self.calibrated, engine_terms(self.spec, self.engine).active)

    @property
    def spec_sheet(self) -> HardwareSpec:
        """The same chip without its fitted kernels: the spec sheet the bound is priced on."""
        return self.spec.model_copy(update={"calibration": None}) if self.calibrated else self.spec

    @property
    def domain(self) -> int | None:
        """Chips of one scale-up domain (NVLink, ICI pod); tp beyond it crosses the scale-out network."""
        return self.spec.max_ici_domain_chips

    def describe(self) -> str:
        """'calibrated profile of h100-sxm (built-in), engine trtllm/1.0' or 'spec sheet of tpu-v6e (built-in)'."""
        what = "calibrated profile" if self.calibrated else "spec sheet"
        where = "built-in" if not self.entry.is_file else f"file {self.entry.ref}"
        text = f"{what} of {self.spec.name} ({where})"
        if self.engine:
            text += f", engine entry {self.engine}"
        if self.entry.fixed:
            text += f", deployment {self.entry.fixed_text()}"
        return text


def hardware_refs(refs: Sequence[str | HardwareSpec], engine: str | None = None) -> list[HardwareRef]:
    """Load each entry once; label files by their file name, adding the engine or layout only where two
    entries would share a label.  ``engine`` applies to entries that name none."""
    entries: list[Entry] = []
    specs: list[HardwareSpec] = []
    seen: set[str] = set()
    for ref in refs:
        entry = Entry(ref=ref.name, spec=ref) if isinstance(ref, HardwareSpec) else parse_entry(str(ref))
        if engine is not None and entry.engine is None:
            entry = entry.with_engine(engine)
        if entry.text in seen:
            continue
        seen.add(entry.text)
        entries.append(entry)
        specs.append(entry.load())
    if not entries:
        raise OptionError("hardware: give at least one chip", parameters=("hardware",))
    labels = _labels(entries)
    return [HardwareRef(label, e.ref, spec, e) for label, e, spec in zip(labels, entries, specs, strict=True)]


def _labels(entries: Sequence[Entry]) -> list[str]:
    """Each entry's shortest unique label: the file name, the path as typed, then with engine and layout."""
    names = [e.short_name for e in entries]
    labels = [e.ref if names.count(n) > 1 and e.is_file else n for e, n in zip(entries, names, strict=True)]
    for detail in ("engine", "fixed"):
        labels = [
            lab + e.suffix(detail) if labels.count(lab) > 1 else lab for lab, e in zip(labels, entries, strict=True)
        ]
    return labels


@dataclass(frozen=True)
class Scenario:
    """What a report sweeps: models × chips × dtypes × slice sizes × batch × context, and prices;
    the workload and interactivity target its summary answers for.

    ``hardware`` holds entries (built-in names or paths to hardware files and calibrated profiles,
    each optionally ``@engine`` and ``:key=value`` fixing tp, chips, pp or dtypes), loaded as given.
    ``kv_dtypes``/``compute_dtype`` ``same`` follow the weights.  ``context`` None: the workload's mean
    decode context.  ``traces`` chooses the bound, the prediction or both per chip; ``scale_out_tp``
    lets prediction traces keep tp beyond the scale-up domain.  ``compare``: the page puts the first
    two entries side by side with the ratio of their frontiers.
    """

    models: tuple[str, ...] = DEFAULT_MODELS
    hardware: tuple[str, ...] = DEFAULT_HARDWARE
    weights: tuple[str, ...] = ("bf16", "fp8")
    kv_dtypes: tuple[str, ...] = (SAME,)
    context: tuple[int, ...] | None = None
    batch: tuple[int, ...] = DEFAULT_BATCH
    chips: tuple[int, ...] = DEFAULT_CHIPS
    tp: tuple[int, ...] | None = None
    compute_dtype: str = SAME
    prices: Mapping[str, float] = field(default_factory=dict)
    pp: tuple[int, ...] | None = None
    memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
    traces: tuple[str, ...] = ("prediction",)
    scale_out_tp: bool = False
    #: Engine entry for every chip that names none (every such chip must hold it); None: each entry's own.
    engine: str | None = None
    input_len: int = DEFAULT_INPUT_LEN
    output_len: int = DEFAULT_OUTPUT_LEN
    ttft_slo_s: float = DEFAULT_TTFT_SLO_S
    tpot_slo_s: float = DEFAULT_TPOT_SLO_S
    #: MoE models with many experts also try expert parallelism over each whole slice (attention tensor- or
    #: data-parallel; :data:`roofline.views.report.runs.WIDE_EP_MIN_EXPERTS`).
    wide_ep: bool = True
    #: Simulate the best deployment of each model under load (the tails section).
    tails: bool = True
    compare: bool = False

    def __post_init__(self) -> None:
        bad = [k for k in self.traces if k not in TRACE_KINDS]
        if bad or not self.traces:
            raise OptionError(
                f"traces: unknown {', '.join(bad) or '(none)'}; allowed: {', '.join(TRACE_KINDS)}",
                parameters=("traces",),
            )
        if self.compare and len(self.hardware) != 2:
            raise OptionError(
                f"compare: give exactly two entries to compare (got {len(self.hardware)}: "
                f"{', '.join(self.hardware) or 'none'})",
                parameters=("compare",),
            )
        if not self.models:
            raise RooflineError("models: give at least one model")

    @functools.cached_property
    def lengths(self) -> LengthDistribution:
        """The workload every summary and tail number is for: fixed input and output lengths."""
        return fixed_lengths(self.input_len, self.output_len)

    @property
    def contexts(self) -> tuple[int, ...]:
        """Decode contexts swept: ``context``, else the workload's mean decode context (I + O/2)."""
        return self.context or (int(round(self.lengths.decode_context)),)

    def hardware_refs(self) -> list[HardwareRef]:
        """The scenario's chips, each loaded once from its entry."""
        return hardware_refs(self.hardware, self.engine)

    def book_models(self) -> list[str]:
        """The scenario's models that the book's LLaMA-2-13B tables cover (by model name)."""
        return [m for m in self.models if load_model(m).name in BOOK_MODELS]

    def precisions(self, weights: str, hw: HardwareSpec) -> tuple[tuple[str, ...], str]:
        """(KV dtypes, matmul dtype) swept with ``weights`` on ``hw``: ``same`` resolved to the weights'
        dtype, the matmuls to bf16 where the chip has no FLOP/s for it."""
        kv = tuple(dict.fromkeys(weights if k == SAME else k for k in self.kv_dtypes))
        if self.compute_dtype != SAME:
            return kv, self.compute_dtype
        try:
            hw.flops_for(weights)
        except SpecError:
            return kv, "bf16"
        return kv, weights

    def describe(self) -> list[tuple[str, str]]:
        """(parameter, value) rows for the report's scenario table."""
        batch = f"{len(self.batch)} values from {min(self.batch)} to {max(self.batch)}"
        return [
            ("models", ", ".join(self.models)),
            ("chips", ", ".join(self.hardware)),
            ("workload", f"{self.input_len:,}-token prompts, {self.output_len:,} generated tokens"),
            ("interactivity target", f"TTFT ≤ {self.ttft_slo_s * 1e3:g} ms, TPOT ≤ {self.tpot_slo_s * 1e3:g} ms"),
            ("chips per slice", ", ".join(map(str, self.chips))),
            ("model-parallel degree (tp)", "the whole slice" if self.tp is None else ", ".join(map(str, self.tp))),
            (
                "expert parallelism (MoE models of 16+ experts)",
                "also over each whole slice" if self.wide_ep else "none",
            ),
            ("pipeline depth (pp)", "1" if self.pp is None else ", ".join(map(str, self.pp))),
            ("memory utilization", f"{self.memory_utilization:g} of physical HBM"),
            ("batch", batch),
            ("decode context (tokens)", ", ".join(map(str, self.contexts))),
            ("weight dtypes", ", ".join(self.weights)),
            ("KV-cache dtypes", ", ".join(self.kv_dtypes).replace(SAME, "the weights' dtype")),
            ("matmul dtype", "the weights' dtype where the chip has its FLOP/s, else bf16")
            if self.compute_dtype == SAME
            else ("matmul dtype", self.compute_dtype),
            ("engine", self.engine or "each entry's own (@engine), else a profile's only entry, else none"),
            ("prices ($/chip-hour)", ", ".join(f"{k}={v:g}" for k, v in self.prices.items()) or "hardware files"),
            ("traces per chip", ", ".join(self.traces)),
            ("tp across the scale-out network in predictions", "kept" if self.scale_out_tp else "left out"),
        ]
