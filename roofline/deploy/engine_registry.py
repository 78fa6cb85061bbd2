"""The engine-term registry: each term of a serving engine's model, with unit, bounds, default and source.

An engine term is a physical quantity of an engine, shared by every model and chip it serves: a version
changes its value, not its form.  Each term is one :class:`EngineTerm` row, and its ``kind`` says where
it enters:

* ``step``: seconds added to an engine step (``step_s`` gives them from the step's shape);
* ``floor``: a least time of a step, which takes max(its work, this) (an eager step's kernel launches);
* ``request``: latency on a request's path that uses no GPU time (front end, scheduling lag), applied
  by the simulator;
* ``scheduler`` and ``memory``: knobs the simulator and the memory model read;
* ``kernel``: a property of the engine's kernels the step model reads (GQA KV re-reads).

Recipe for a new term (one file, see docs/guides/validation.md): build an :class:`EngineTerm` (a
``step`` or ``floor`` term with its ``step_s``) and pass it to :func:`register_engine_term`.  Entries
that do not give it take its default; the step model adds it (:func:`roofline.terms.engine.engine_step_s`);
``step --json`` lists it under ``engine.terms``; ``calibrate fit`` fits it when ``fitted`` is True.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from roofline.core.errors import RooflineError
from roofline.model.memory import Number

KINDS = ("step", "floor", "request", "scheduler", "memory", "kernel")


@dataclass(frozen=True)
class StepShape:
    """What a step or floor term may depend on: one replica's whole step (arrays broadcast)."""

    sequences: Number  # sequences that sample a token in the step (decodes + prompts that finish)
    tokens: Number  # tokens the weight matmuls see (decodes + new prompt tokens)
    prompts: Number  # prompts (or prompt chunks) in the step
    layers: float  # layers of the model


#: A step or floor term's seconds: f(the entry's values, the step's shape).
StepFn = Callable[[Mapping[str, float], StepShape], Number]


@dataclass(frozen=True)
class EngineTerm:
    """One engine term: name, unit, physical bounds, the default used where an entry omits it, its source."""

    name: str
    unit: str
    low: float
    high: float
    default: float
    source: str
    doc: str
    kind: str
    fitted: bool = False
    step_s: StepFn | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise RooflineError(f"engine term {self.name!r}: kind {self.kind!r}; allowed: {', '.join(KINDS)}")
        if not self.low <= self.default <= self.high:
            raise RooflineError(
                f"engine term {self.name!r}: default {self.default:g} outside [{self.low:g}, {self.high:g}]"
            )
        if self.kind in ("step", "floor") and self.step_s is None:
            raise RooflineError(f"engine term {self.name!r}: a {self.kind} term needs step_s")

    def checked(self, value: object, where: str) -> float:
        """``value`` as a float within the bounds, else a one-line error naming ``where`` and the range."""
        try:
            v = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            v = float("nan")
        if not (np.isfinite(v) and self.low <= v <= self.high):
            raise RooflineError(
                f"{where}: engine term {self.name} is {value!r}; allowed: {self.low:g} to {self.high:g} {self.unit}"
            )
        return v


REGISTRY: dict[str, EngineTerm] = {}


def register_engine_term(term: EngineTerm) -> EngineTerm:
    """Add (or replace) ``term`` in the registry and return it."""
    REGISTRY[term.name] = term
    return term


def terms_of(kind: str) -> tuple[EngineTerm, ...]:
    """The registered terms of one kind, in registration order."""
    return tuple(t for t in REGISTRY.values() if t.kind == kind)


def registered(name: str, where: str) -> EngineTerm:
    """The term ``name``, else a one-line error naming ``where`` and the registered terms."""
    term = REGISTRY.get(name)
    if term is None:
        raise RooflineError(f"{where}: unknown engine term {name!r}; registered: {', '.join(REGISTRY)}")
    return term


def _graph_free(values: Mapping[str, float], shape: StepShape) -> np.ndarray:
    """Where the step is not replayed from a CUDA graph: more tokens than the engine captures."""
    return np.greater(shape.tokens, values["cuda_graph_max_tokens"])


def _busy(shape: StepShape) -> np.ndarray:
    """Where the step does any work."""
    return np.greater(shape.tokens, 0)


VLLM_ARGS = "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults"

BUILT_IN_TERMS = (
    EngineTerm(
        "step_host_s", "s", 0.0, 0.05, 0.0,
        "0 until fitted: vLLM >= 0.12 (async scheduling) and SGLang (overlap scheduler) hide the host's work "
        "for the next step under the GPU's current one",
        "host time per step not hidden under the GPU (scheduling, input preparation, sampling)",
        "step", fitted=True, step_s=lambda v, s: np.where(_busy(s), v["step_host_s"], 0.0),
    ),
    EngineTerm(
        "seq_host_s", "s/sequence", 0.0, 5e-4, 0.0, "0 until fitted",
        "host time per sampled sequence per step (bookkeeping, sampling, output processing)",
        "step", fitted=True, step_s=lambda v, s: np.multiply(v["seq_host_s"], s.sequences),
    ),
    EngineTerm(
        "eager_launch_s_per_layer", "s/layer", 0.0, 2e-3, 0.0,
        "0: CUDA-graph and compiled engines launch a step at once",
        "host time to launch one layer's kernels in a step not replayed from a CUDA graph; such a step takes "
        "max(its device work, layers x this)", "floor", fitted=True,
        step_s=lambda v, s: np.where(_graph_free(v, s), s.layers * v["eager_launch_s_per_layer"], 0.0),
    ),
    EngineTerm(
        "cuda_graph_max_tokens", "tokens", 0.0, 1e7, 512.0,
        "vLLM: max_cudagraph_capture_size = min(2 x max_num_seqs, 512) (vllm/config/vllm.py _set_cudagraph_sizes)",
        "steps of at most this many tokens replay a CUDA graph (no per-layer launches)", "scheduler",
    ),
    EngineTerm(
        "frontend_in_s", "s", 0.0, 1.0, 0.002,
        "tenstorrent/tt-inference-server#190: vLLM online TTFT = offline + about 4 ms (HTTP server + ZMQ); "
        "half of it before the engine",
        "a request reaching the server -> the scheduler seeing it (HTTP, tokenise); no GPU time", "request",
    ),
    EngineTerm(
        "frontend_out_s", "s", 0.0, 1.0, 0.002,
        "tenstorrent/tt-inference-server#190 (as frontend_in_s: the other half)",
        "a token made by a step -> the client seeing it (detokenise, stream); no GPU time", "request",
        fitted=True,
    ),
    EngineTerm(
        "schedule_lag_steps", "steps", 0.0, 1.0, 0.0,
        "0: a request may join the next step (synchronous scheduling)",
        "steps a new request waits beyond the next step boundary: 1 with async scheduling, which schedules "
        "step k+1 while step k runs", "request",
    ),
    EngineTerm(
        "max_num_batched_tokens", "tokens", 1.0, 1e7, 8192.0, f"{VLLM_ARGS}: 8192 (OpenAI server, >= 70 GiB GPUs)",
        "token budget of one step (chunked prefill)", "scheduler",
    ),
    EngineTerm(
        "max_num_seqs", "sequences", 1.0, 1e6, 1024.0, f"{VLLM_ARGS}: 1024 (OpenAI server, >= 70 GiB GPUs)",
        "most sequences in one step", "scheduler",
    ),
    EngineTerm(
        "memory_utilization", "fraction", 0.05, 1.0, 0.9, "vLLM gpu_memory_utilization default 0.9",
        "fraction of physical HBM the engine may use for weights, activations and KV cache", "memory",
    ),
    EngineTerm(
        "memory_reserve_bytes", "B", 0.0, 1e11, 0.0, "0: the activation reserve is modelled apart",
        "HBM held besides weights, activations and KV cache (CUDA-graph pools, workspaces)", "memory",
    ),
    EngineTerm(
        "gqa_kv_reread", "fraction", 0.0, 1.0, 0.0,
        "0: decode attention reads each KV head once for its whole query group (XQA, FlashAttention)",
        "share of a GQA group's query heads that re-read their KV head (a decode kernel without grouped-query "
        "reuse, as TensorRT-LLM before XQA)", "kernel",
    ),
)  # fmt: skip

for _term in BUILT_IN_TERMS:
    register_engine_term(_term)
