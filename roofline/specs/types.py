"""Hardware and model specs as frozen dataclasses: the objects every estimator reads.

No pydantic here: the built-in catalog loads straight into these (see :mod:`roofline.specs.catalog`),
and :mod:`roofline.specs.schema` validates user files into them.  Each field's range (``gt``,
``ge``, ``le``) is declared once, in its :func:`spec_field`, and the schema is built from it.
``model_dump`` / ``model_copy`` / ``model_fields`` keep the names scripts used on the pydantic models.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from roofline.core.errors import SpecError
from roofline.core.types import JSONObject
from roofline.core.units import RATE_DTYPE

#: Keys of a field's constraints in its dataclass metadata (pydantic's Field arguments).
CONSTRAINTS = ("gt", "ge", "le")


def spec_field(
    default: Any = dataclasses.MISSING, *, gt: float | None = None, ge: float | None = None, le: float | None = None
) -> Any:  # a dataclass field() stands in for the default, as dataclasses.field does
    """A spec field with its allowed range (``gt``/``ge`` lower, ``le`` upper), checked by the schema."""
    limits = {k: v for k, v in (("gt", gt), ("ge", ge), ("le", le)) if v is not None}
    return field(default=default, metadata=limits)


def _dump(value: object, exclude_none: bool) -> object:
    """Plain data of a spec value: dataclasses to dicts (None fields left out when asked), copies of containers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
        return {k: _dump(v, exclude_none) for k, v in items if not (exclude_none and v is None)}
    if isinstance(value, dict):
        return {k: _dump(v, exclude_none) for k, v in value.items() if not (exclude_none and v is None)}
    if isinstance(value, list):
        return [_dump(v, exclude_none) for v in value]
    return value


_S = TypeVar("_S", bound="_Spec")


class _Spec:
    """Shared by every spec: plain-data dump and copy with changes, as on the former pydantic models."""

    def model_dump(self, *, exclude_none: bool = False) -> JSONObject:
        """The spec as plain data (dicts, lists, numbers, text); ``exclude_none`` drops unset optional fields."""
        return _dump(self, exclude_none)  # type: ignore[return-value]

    def model_copy(self: _S, *, update: dict[str, object] | None = None) -> _S:
        """A copy with ``update``'s fields replaced (not re-validated, as pydantic's model_copy)."""
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


@dataclass(frozen=True, kw_only=True)
class OpCalibration(_Spec):
    """Fitted parameters of one op class and dtype (written by ``roofline calibrate fit``).

    ``dtypes``, ``kernels`` (impl names) and ``rows`` say what it was fitted on; ``at_bound``
    names fitted parameters that ended at a bound (a term the model lacks).  Entries written
    before these fields existed leave them empty.
    """

    compute_efficiency: float = spec_field(1.0, gt=0, le=1.5)
    memory_efficiency: float = spec_field(1.0, gt=0, le=1.5)
    overhead_s: float = spec_field(0.0, ge=0)
    params: dict[str, float] = field(default_factory=dict)
    fit: dict[str, float] = field(default_factory=dict)
    dtypes: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    rows: int = spec_field(0, ge=0)
    at_bound: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class CalibrationSpec(_Spec):
    """A calibrated profile's fitted block, keyed ``<op_key>/<dtype>`` (gemm/bf16, gemm/fp8, ...).

    A key without ``/`` (older profiles) reads as bf16; see ``roofline.kernels.keys``.
    """

    source: str = "calibration"
    ops: dict[str, OpCalibration] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class EngineCalibration(_Spec):
    """A serving engine's fitted terms beyond the kernels (``roofline calibrate fit`` on end-to-end rows).

    Each is a physical quantity: per step, per layer, per token and layer (split over a tp group's
    chips, or repeated on each of them), per sampled or prefilled sequence, the engine's GEMM
    slowdown against the calibrated kernels, its latency per collective ring step, the share of
    a GQA group's query heads that re-read the KV cache, and the extra time per byte of its
    all-reduces from a message size on.
    """

    step_overhead_s: float = spec_field(0.0, ge=0, le=10.0)
    layer_overhead_s: float = spec_field(0.0, ge=0, le=1.0)
    layer_bytes_per_token: float = spec_field(0.0, ge=0, le=1e12)
    replicated_bytes_per_token: float = spec_field(0.0, ge=0, le=1e12)
    sample_s_per_seq: float = spec_field(0.0, ge=0, le=1.0)
    prefill_seq_overhead_s: float = spec_field(0.0, ge=0, le=10.0)
    gemm_slowdown: float = spec_field(0.0, ge=0, le=100.0)
    collective_hop_s: float = spec_field(0.0, ge=0, le=1e-2)
    gqa_kv_reread: float = spec_field(0.0, ge=0, le=1.0)
    # Extra seconds per byte each chip moves in a tp all-reduce whose message is at least
    # large_collective_bytes (chosen by the fit from powers of two; 0 with the term absent).
    large_collective_s_per_byte: float = spec_field(0.0, ge=0, le=1e-6)
    large_collective_bytes: float = spec_field(0.0, ge=0, le=1e12)
    # The least time of a step that carries only prompts (an eager, not graph-captured step: the host's
    # launches, which shorter device work hides under): the step is max(this, its work).
    prefill_floor_s: float = spec_field(0.0, ge=0, le=10.0)
    comms_overlap: float = spec_field(0.0, ge=0, le=1.0)
    # Set by hand, not fitted: the engine adds a parallel block's attention and MLP partial sums before
    # one all-reduce (vLLM's Falcon); TensorRT-LLM's published Falcon rows fit two all-reduces.
    fused_parallel_block: bool = False
    rows: int = spec_field(0, ge=0)
    sources: list[str] = field(default_factory=list)
    # at_bound: the terms at the bottom of their range (absent: written as 0) and those pinned within 1%
    # of the top; at_upper_bound: the latter alone (a term the model lacks, or for gqa_kv_reread a full
    # re-read).
    at_bound: list[str] = field(default_factory=list)
    fit: dict[str, float] = field(default_factory=dict)
    at_upper_bound: list[str] = field(default_factory=list)
    # Physical terms of the engine-term registry (roofline.deploy.engine_registry), by name: an entry
    # written by today's fit gives these and leaves the fields above at 0; a term it omits takes the
    # registry's default.  term_sources says where each value came from; spread is each fitted term's
    # spread (standard deviation over leave-one-out refits); policy names the simulator's scheduling
    # policy (decode-first, prefill-first).
    terms: dict[str, float] = field(default_factory=dict)
    term_sources: dict[str, str] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    policy: str = ""


@dataclass(frozen=True, kw_only=True)
class AchievableSpec(_Spec):
    """What real kernels reach on the chip (the honest spec sheet): fractions of the peaks, kernel floors.

    ``hbm_fraction`` of peak HBM bytes/s that weight- and KV-streaming kernels reach; ``flops_fraction``
    of peak FLOP/s per dtype (``default`` for a dtype not listed) that large GEMMs reach; ``floor_s`` the
    least time of one kernel per family (``gemm``, ``attention``, ``moe``; ``default`` for the others).
    Every number carries its source in the YAML; ``source`` summarises them.
    """

    hbm_fraction: float = spec_field(1.0, gt=0, le=1.0)
    flops_fraction: dict[str, float] = field(default_factory=dict)
    floor_s: dict[str, float] = field(default_factory=dict)
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class HardwareSpec(_Spec):
    """One accelerator chip; the YAML keys here are a contract relied on by scripts."""

    name: str
    kind: Literal["tpu", "gpu", "cpu"] = "gpu"
    flops_per_s: dict[str, float]
    hbm_bytes: float = spec_field(gt=0)
    hbm_bandwidth_bytes_per_s: float = spec_field(gt=0)
    ici_bandwidth_bytes_per_s: float = spec_field(gt=0)
    ici_links: int = spec_field(gt=0)
    ici_hop_latency_s: float = spec_field(gt=0)
    price_per_chip_hour: float = spec_field(gt=0)
    ici_topology: Literal["torus1d", "torus2d", "torus3d", "switch"] = "switch"
    max_ici_domain_chips: int | None = spec_field(None, gt=0)
    dcn_bandwidth_bytes_per_s: float | None = spec_field(None, gt=0)
    dcn_latency_s: float | None = spec_field(None, gt=0)
    host_dram_bytes: float | None = spec_field(None, gt=0)
    host_bandwidth_bytes_per_s: float | None = spec_field(None, gt=0)
    source: str = ""
    calibration: CalibrationSpec | None = None
    engine: dict[str, EngineCalibration] | None = None
    achievable: AchievableSpec | None = None
    #: Dtypes the chip's matrix units cannot run although their element type has a rate (AMD CDNA 4 runs
    #: MXFP4, not NVFP4): refused as compute dtypes.
    unsupported_dtypes: list[str] | None = None

    def flops_for(self, dtype: str) -> float:
        """Dense FLOP/s for ``dtype`` (a block-scaled format without its own entry: its element type's,
        nvfp4/mxfp4 -> fp4, fp8_block -> fp8); a clear error when the chip does not support it."""
        if dtype in (self.unsupported_dtypes or ()):
            raise SpecError(f"hardware {self.name!r} cannot run {dtype} matmuls (its unsupported_dtypes lists it)")
        try:
            return self.flops_per_s[dtype] if dtype in self.flops_per_s else self.flops_per_s[RATE_DTYPE[dtype]]
        except KeyError:
            have = ", ".join(self.flops_per_s)
            raise SpecError(f"hardware {self.name!r} has no {dtype} FLOP/s (flops_per_s has: {have})") from None


#: Mixer kinds of ``layer_types``: attention (full, sliding-window, chunked), linear attention
#: (Gated DeltaNet), state-space (Mamba), or none (an MLP-only block, Nemotron-H).
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention", "mamba", "none")
ATTENTION_TYPES = ("full_attention", "sliding_attention", "chunked_attention")
#: MLP kinds of ``mlp_types``.
MLP_TYPES = ("dense", "moe", "none")
#: Keys of a model's checkpoint ``precision``: the default and each weight component.
PRECISION_KEYS = ("default", "attention", "mlp", "experts", "embeddings", "lm_head")


@dataclass(frozen=True, kw_only=True)
class ModelSpec(_Spec):
    """A decoder-only transformer in the book's notation (L, D, F, N, K, H, V)."""

    name: str
    num_layers: int = spec_field(gt=0)
    d_model: int = spec_field(gt=0)
    d_ff: int = spec_field(gt=0)
    num_heads: int = spec_field(gt=0)
    num_kv_heads: int = spec_field(gt=0)
    head_dim: int = spec_field(gt=0)
    vocab_size: int = spec_field(gt=0)
    gated_mlp: bool = True
    tie_embeddings: bool = False
    num_experts: int = spec_field(1, gt=0)
    experts_per_token: int = spec_field(1, gt=0)
    # Mixture-of-experts extras (DeepSeek style).
    num_shared_experts: int = spec_field(0, ge=0)
    shared_expert_d_ff: int | None = spec_field(None, gt=0)
    num_dense_layers: int = spec_field(0, ge=0)
    dense_d_ff: int | None = spec_field(None, gt=0)
    # Local (sliding-window) attention: num_local_layers of num_layers use the window.
    sliding_window: int | None = spec_field(None, gt=0)
    num_local_layers: int = spec_field(0, ge=0)
    # Cross-layer KV sharing: each stored KV cache serves this many layers.
    kv_share_factor: int = spec_field(1, gt=0)
    # Multi-head latent attention (MLA): caches kv_lora_rank + qk_rope_head_dim per token.
    kv_lora_rank: int | None = spec_field(None, gt=0)
    q_lora_rank: int | None = spec_field(None, gt=0)
    qk_rope_head_dim: int | None = spec_field(None, ge=0)
    qk_nope_head_dim: int | None = spec_field(None, gt=0)
    v_head_dim: int | None = spec_field(None, gt=0)
    # Small terms counted when the architecture has them.
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    norm_bias: bool = False
    learned_position_embeddings: int = spec_field(0, ge=0)
    # Small per-layer weights not otherwise modelled (extra norms, q/k norms, gates), counted as norms.
    extra_params_per_layer: int = spec_field(0, ge=0)
    # LayerNorms per layer (2: before attention and before the MLP; 1: GPT-J, Falcon-7B's parallel block),
    # a LayerNorm on the embeddings (BLOOM) and a bias on the LM head (GPT-J).
    norms_per_layer: int = spec_field(2, ge=0)
    # Parallel block (GPT-J, Falcon, NeoX's parallel residual): attention and MLP read one input and
    # their outputs are summed, so tensor parallelism all-reduces once per layer, not twice.
    parallel_block: bool = False
    embedding_norm: bool = False
    lm_head_bias: bool = False
    max_position_embeddings: int | None = spec_field(None, gt=0)
    # Layer pattern (hybrid models): each layer's mixer and MLP kind.  None keeps the rules above
    # (num_local_layers windowed, num_dense_layers leading dense, the rest full attention / MoE).
    layer_types: list[str] | None = None
    mlp_types: list[str] | None = None
    # Chunked attention (Llama 4): chunked_attention layers attend within fixed chunks of this size.
    attention_chunk_size: int | None = spec_field(None, gt=0)
    # Attention sinks (gpt-oss): one learned logit per head per attention layer (N parameters).
    attention_sinks: bool = False
    # Gated attention output (Qwen3-Next): q_proj also emits an N·H gate.
    attention_output_gate: bool = False
    # Small weights of each attention layer only (q/k norms in a hybrid model), counted as norms.
    attention_extra_params: int = spec_field(0, ge=0)
    # Attention layers without positional encoding (Llama 4 NoPE): accepted; changes no count.
    num_nope_layers: int = spec_field(0, ge=0)
    # Gated DeltaNet (linear_attention layers): heads and head sizes of keys and values, conv kernel.
    linear_num_key_heads: int | None = spec_field(None, gt=0)
    linear_num_value_heads: int | None = spec_field(None, gt=0)
    linear_key_head_dim: int | None = spec_field(None, gt=0)
    linear_value_head_dim: int | None = spec_field(None, gt=0)
    linear_conv_kernel: int | None = spec_field(None, gt=0)
    # State-space (mamba layers): inner width, state size, conv kernel; Mamba-2 has heads and groups,
    # Mamba-1 (Jamba) a dt rank instead.
    mamba_d_inner: int | None = spec_field(None, gt=0)
    mamba_state_size: int | None = spec_field(None, gt=0)
    mamba_conv_kernel: int | None = spec_field(None, gt=0)
    mamba_num_heads: int | None = spec_field(None, gt=0)
    mamba_n_groups: int = spec_field(1, gt=0)
    mamba_dt_rank: int | None = spec_field(None, gt=0)
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False
    mamba_inner_norms: bool = False
    # The checkpoint's weight dtypes: {default: bf16, experts: mxfp4, ...} (see roofline.deploy.Precision).
    precision: dict[str, str] | None = None
    source: str = ""

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1


def hardware_from_data(data: JSONObject) -> HardwareSpec:
    """A HardwareSpec from validated plain data (a schema's ``model_dump()``), nested blocks included."""
    data = dict(data)
    if data.get("calibration") is not None:
        cal = data["calibration"]
        data["calibration"] = CalibrationSpec(
            **{**cal, "ops": {k: OpCalibration(**v) for k, v in cal.get("ops", {}).items()}}
        )
    if data.get("engine") is not None:
        data["engine"] = {k: EngineCalibration(**v) for k, v in data["engine"].items()}
    if data.get("achievable") is not None:
        data["achievable"] = AchievableSpec(**data["achievable"])
    return HardwareSpec(**data)


def model_from_data(data: JSONObject) -> ModelSpec:
    """A ModelSpec from validated plain data (a schema's ``model_dump()``)."""
    return ModelSpec(**data)
