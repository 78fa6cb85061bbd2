"""Hardware and model specs: pydantic schemas and the only code that reads YAML.

A chip or a model is one YAML file.  ``load_hardware`` / ``load_model`` take a built-in
name (``tpu-v5e``), a path to a YAML file, or (models) a Hugging Face ``config.json``.
Every failure is a :class:`~roofline.errors.SpecError` with one line naming the file and
the field.
"""

from __future__ import annotations

import functools
import types
import typing
from pathlib import Path
from typing import Any, Literal

import annotated_types
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .checks import MAX_COUNT, check_count, check_flag, check_name, check_number, check_text
from .errors import SpecError, nearest, shown, unknown_name_message
from .spec_files import check_tree, read_json, read_yaml
from .units import DTYPE_BYTES, RATE_DTYPE, Dimension, parse_quantity

PACKAGE_DIR = Path(__file__).resolve().parent


def catalog_dirs(kind: Literal["hardware", "models"]) -> list[Path]:
    """Built-in catalog folders: inside the installed package, else the repo's top level.

    Hardware also finds the shipped calibrated profiles (``<chip>-cal``, roofline/data/profiles).
    """
    candidates = [PACKAGE_DIR / "_catalog" / kind, PACKAGE_DIR.parent / kind]
    if kind == "hardware":
        candidates.append(PACKAGE_DIR / "data" / "profiles")
    return [d for d in candidates if d.is_dir()]


def _number(value: Any) -> Any:
    """Accept numbers, numeric strings ('8.2e11', YAML 1.1's trap) and '16 GiB'-style units."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float, str)):
        try:
            return parse_quantity(value)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
    return value


def dimension_of(field: str) -> Dimension:
    """A field's dimension from its SI name: ``*_bytes_per_s``, ``*flops_per_s``, ``*_bytes``, ``*_s``."""
    if field.endswith("flops_per_s"):
        return "FLOP/s"
    if field.endswith("_bytes_per_s"):
        return "bytes/s"
    if field.endswith("_bytes"):
        return "bytes"
    if field.endswith("_s"):
        return "seconds"
    return "dimensionless"


#: Smallest value of a positive byte count or rate: a smaller one would divide to infinity.
_MIN_POSITIVE: dict[str, float] = {"bytes": 1.0, "bytes/s": 1.0, "FLOP/s": 1.0}
#: Upper limits tighter than :data:`roofline.checks.MAX_VALUE` for a dimension.
_FIELD_MAX: dict[str, float] = {"price_per_chip_hour": 1e6}
#: Text fields that are names (non-empty, one line) rather than free text.
_NAME_FIELDS = ("name",)


def _field_kind(annotation: Any) -> tuple[Any, bool]:
    """(base type, optional) of an annotation such as ``int | None``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), True
    return annotation, False


def _lower_bound(metadata: list[Any]) -> tuple[float | None, bool]:
    """(bound, open) from a field's ``gt=``/``ge=`` constraint."""
    for item in metadata:
        if isinstance(item, annotated_types.Gt):
            return float(item.gt), True
        if isinstance(item, annotated_types.Ge):
            return float(item.ge), False
    return None, False


def check_spec_field(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """Every spec field once: type (no bool for int, no text for bool), finiteness, range, unit.

    Integers are whole numbers in [gt+1 or ge, MAX_COUNT]; floats are finite numbers of the
    field's dimension (its SI name); names are non-empty single lines.
    """
    name = info.field_name or ""
    field = cls.model_fields.get(name)
    if field is None:
        return value
    base, optional = _field_kind(field.annotation)
    if value is None and optional:
        return None
    low, open_low = _lower_bound(field.metadata)
    if base is bool:
        return check_flag(value, "")
    if base is int:
        minimum = 0 if low is None else int(low) + (1 if open_low else 0)
        return check_count(value, "", minimum=minimum, maximum=MAX_COUNT)
    if base is float:
        dimension = dimension_of(name)
        if low == 0 and open_low and dimension in _MIN_POSITIVE:
            low, open_low = _MIN_POSITIVE[dimension], False
        return check_number(value, "", dimension=dimension, minimum=low, open_low=open_low,
                            maximum=_FIELD_MAX.get(name))
    if base is str:
        return check_name(value, "") if name in _NAME_FIELDS else check_text(value, "")
    return value


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OpCalibration(_Spec):
    """Fitted parameters of one op class and dtype (written by ``roofline calibrate fit``).

    ``dtypes``, ``kernels`` (impl names) and ``rows`` say what it was fitted on; ``at_bound``
    names fitted parameters that ended at a bound (a term the model lacks).  Entries written
    before these fields existed leave them empty.
    """

    compute_efficiency: float = Field(1.0, gt=0, le=1.5)
    memory_efficiency: float = Field(1.0, gt=0, le=1.5)
    overhead_s: float = Field(0.0, ge=0)
    params: dict[str, float] = Field(default_factory=dict)
    fit: dict[str, float] = Field(default_factory=dict)
    dtypes: list[str] = Field(default_factory=list)
    kernels: list[str] = Field(default_factory=list)
    rows: int = Field(0, ge=0)
    at_bound: list[str] = Field(default_factory=list)


class CalibrationSpec(_Spec):
    """A calibrated profile's fitted block, keyed ``<op_key>/<dtype>`` (gemm/bf16, gemm/fp8, ...).

    A key without ``/`` (older profiles) reads as bf16; see ``roofline.calibration.keys``.
    """

    source: str = "calibration"
    ops: dict[str, OpCalibration] = Field(default_factory=dict)


class EngineCalibration(_Spec):
    """A serving engine's fitted terms beyond the kernels (``roofline calibrate fit`` on end-to-end rows).

    Each is a physical quantity: per step, per layer, per token and layer, per sampled or
    prefilled sequence, and the engine's GEMM slowdown against the calibrated kernels.
    """

    step_overhead_s: float = Field(0.0, ge=0, le=10.0)
    layer_overhead_s: float = Field(0.0, ge=0, le=1.0)
    layer_bytes_per_token: float = Field(0.0, ge=0, le=1e12)
    sample_s_per_seq: float = Field(0.0, ge=0, le=1.0)
    prefill_seq_overhead_s: float = Field(0.0, ge=0, le=10.0)
    gemm_slowdown: float = Field(0.0, ge=0, le=100.0)
    collective_hop_s: float = Field(0.0, ge=0, le=1e-2)
    comms_overlap: float = Field(0.0, ge=0, le=1.0)
    rows: int = Field(0, ge=0)
    sources: list[str] = Field(default_factory=list)
    at_bound: list[str] = Field(default_factory=list)
    fit: dict[str, float] = Field(default_factory=dict)


class HardwareSpec(_Spec):
    """One accelerator chip; the YAML keys here are a contract relied on by scripts."""

    name: str
    kind: Literal["tpu", "gpu", "cpu"] = "gpu"
    flops_per_s: dict[str, float]
    hbm_bytes: float = Field(gt=0)
    hbm_bandwidth_bytes_per_s: float = Field(gt=0)
    ici_bandwidth_bytes_per_s: float = Field(gt=0)
    ici_links: int = Field(gt=0)
    ici_hop_latency_s: float = Field(gt=0)
    price_per_chip_hour: float = Field(gt=0)
    ici_topology: Literal["torus1d", "torus2d", "torus3d", "switch"] = "switch"
    max_ici_domain_chips: int | None = Field(None, gt=0)
    dcn_bandwidth_bytes_per_s: float | None = Field(None, gt=0)
    dcn_latency_s: float | None = Field(None, gt=0)
    host_dram_bytes: float | None = Field(None, gt=0)
    host_bandwidth_bytes_per_s: float | None = Field(None, gt=0)
    source: str = ""
    calibration: CalibrationSpec | None = None
    engine: dict[str, EngineCalibration] | None = None

    _fields = field_validator("*", mode="before")(classmethod(check_spec_field))

    @field_validator("flops_per_s", mode="before")
    @classmethod
    def _flops(cls, value: Any) -> Any:
        if not isinstance(value, dict) or not value:
            raise ValueError("must map compute dtypes to FLOP/s, e.g. {bf16: 1.97e+14}")
        out = {}
        for dtype, rate in value.items():
            if dtype not in DTYPE_BYTES:
                raise ValueError(f"unknown dtype {shown(dtype)}; allowed: {', '.join(DTYPE_BYTES)}")
            out[dtype] = check_number(rate, dtype, dimension="FLOP/s", minimum=1.0,
                                      open_low=False)
        return out

    def flops_for(self, dtype: str) -> float:
        """Dense FLOP/s for ``dtype`` (a block-scaled format without its own entry: its element type's,
        nvfp4/mxfp4 -> fp4, fp8_block -> fp8); a clear error when the chip does not support it."""
        try:
            return self.flops_per_s[dtype] if dtype in self.flops_per_s else self.flops_per_s[RATE_DTYPE[dtype]]
        except KeyError:
            have = ", ".join(self.flops_per_s)
            raise SpecError(
                f"hardware {self.name!r} has no {dtype} FLOP/s (flops_per_s has: {have})"
            ) from None


#: Mixer kinds of ``layer_types``: attention (full, sliding-window, chunked), linear attention
#: (Gated DeltaNet), state-space (Mamba), or none (an MLP-only block, Nemotron-H).
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention", "mamba", "none")
ATTENTION_TYPES = ("full_attention", "sliding_attention", "chunked_attention")
#: MLP kinds of ``mlp_types``.
MLP_TYPES = ("dense", "moe", "none")
#: Keys of a model's checkpoint ``precision``: the default and each weight component.
PRECISION_KEYS = ("default", "attention", "mlp", "experts", "embeddings", "lm_head")


class ModelSpec(_Spec):
    """A decoder-only transformer in the book's notation (L, D, F, N, K, H, V)."""

    name: str
    num_layers: int = Field(gt=0)
    d_model: int = Field(gt=0)
    d_ff: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    gated_mlp: bool = True
    tie_embeddings: bool = False
    num_experts: int = Field(1, gt=0)
    experts_per_token: int = Field(1, gt=0)
    # Mixture-of-experts extras (DeepSeek style).
    num_shared_experts: int = Field(0, ge=0)
    shared_expert_d_ff: int | None = Field(None, gt=0)
    num_dense_layers: int = Field(0, ge=0)
    dense_d_ff: int | None = Field(None, gt=0)
    # Local (sliding-window) attention: num_local_layers of num_layers use the window.
    sliding_window: int | None = Field(None, gt=0)
    num_local_layers: int = Field(0, ge=0)
    # Cross-layer KV sharing: each stored KV cache serves this many layers.
    kv_share_factor: int = Field(1, gt=0)
    # Multi-head latent attention (MLA): caches kv_lora_rank + qk_rope_head_dim per token.
    kv_lora_rank: int | None = Field(None, gt=0)
    q_lora_rank: int | None = Field(None, gt=0)
    qk_rope_head_dim: int | None = Field(None, ge=0)
    qk_nope_head_dim: int | None = Field(None, gt=0)
    v_head_dim: int | None = Field(None, gt=0)
    # Small terms counted when the architecture has them.
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    norm_bias: bool = False
    learned_position_embeddings: int = Field(0, ge=0)
    # Small per-layer weights not otherwise modelled (extra norms, q/k norms, gates), counted as norms.
    extra_params_per_layer: int = Field(0, ge=0)
    # LayerNorms per layer (2: before attention and before the MLP; 1: GPT-J, Falcon-7B's parallel block),
    # a LayerNorm on the embeddings (BLOOM) and a bias on the LM head (GPT-J).
    norms_per_layer: int = Field(2, ge=0)
    embedding_norm: bool = False
    lm_head_bias: bool = False
    max_position_embeddings: int | None = Field(None, gt=0)
    # Layer pattern (hybrid models): each layer's mixer and MLP kind.  None keeps the rules above
    # (num_local_layers windowed, num_dense_layers leading dense, the rest full attention / MoE).
    layer_types: list[str] | None = None
    mlp_types: list[str] | None = None
    # Chunked attention (Llama 4): chunked_attention layers attend within fixed chunks of this size.
    attention_chunk_size: int | None = Field(None, gt=0)
    # Attention sinks (gpt-oss): one learned logit per head per attention layer (N parameters).
    attention_sinks: bool = False
    # Gated attention output (Qwen3-Next): q_proj also emits an N·H gate.
    attention_output_gate: bool = False
    # Small weights of each attention layer only (q/k norms in a hybrid model), counted as norms.
    attention_extra_params: int = Field(0, ge=0)
    # Attention layers without positional encoding (Llama 4 NoPE): accepted; changes no count.
    num_nope_layers: int = Field(0, ge=0)
    # Gated DeltaNet (linear_attention layers): heads and head sizes of keys and values, conv kernel.
    linear_num_key_heads: int | None = Field(None, gt=0)
    linear_num_value_heads: int | None = Field(None, gt=0)
    linear_key_head_dim: int | None = Field(None, gt=0)
    linear_value_head_dim: int | None = Field(None, gt=0)
    linear_conv_kernel: int | None = Field(None, gt=0)
    # State-space (mamba layers): inner width, state size, conv kernel; Mamba-2 has heads and groups,
    # Mamba-1 (Jamba) a dt rank instead.
    mamba_d_inner: int | None = Field(None, gt=0)
    mamba_state_size: int | None = Field(None, gt=0)
    mamba_conv_kernel: int | None = Field(None, gt=0)
    mamba_num_heads: int | None = Field(None, gt=0)
    mamba_n_groups: int = Field(1, gt=0)
    mamba_dt_rank: int | None = Field(None, gt=0)
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False
    mamba_inner_norms: bool = False
    # The checkpoint's weight dtypes: {default: bf16, experts: mxfp4, ...} (see roofline.deploy.Precision).
    precision: dict[str, str] | None = None
    source: str = ""

    _fields = field_validator("*", mode="before")(classmethod(check_spec_field))

    @field_validator("layer_types", "mlp_types", mode="before")
    @classmethod
    def _kinds(cls, value: Any, info: ValidationInfo) -> Any:
        allowed = LAYER_TYPES if info.field_name == "layer_types" else MLP_TYPES
        if value is None:
            return None
        if not isinstance(value, list) or not value:
            raise ValueError(f"must be a list of layer kinds, one per layer ({', '.join(allowed)})")
        bad = sorted({shown(v) for v in value if v not in allowed})
        if bad:
            raise ValueError(f"unknown kinds {', '.join(bad[:4])}; allowed: {', '.join(allowed)}")
        return value

    @field_validator("precision", mode="before")
    @classmethod
    def _precision(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict) or not value:
            raise ValueError(f"must map weight components ({', '.join(PRECISION_KEYS)}) to dtypes")
        for key, dtype in value.items():
            if key not in PRECISION_KEYS:
                raise ValueError(f"unknown component {shown(key)}; allowed: {', '.join(PRECISION_KEYS)}")
            if dtype not in DTYPE_BYTES:
                raise ValueError(f"{key}: unknown dtype {shown(dtype)}; allowed: {', '.join(DTYPE_BYTES)}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _derive_counts(cls, data: Any) -> Any:
        """num_local_layers from layer_types (its sliding_attention entries) when not given."""
        if isinstance(data, dict) and isinstance(data.get("layer_types"), list) and "num_local_layers" not in data:
            data = {**data, "num_local_layers": sum(t == "sliding_attention" for t in data["layer_types"])}
        return data

    def _check_pattern(self) -> None:
        for key in ("layer_types", "mlp_types"):
            kinds = getattr(self, key)
            if kinds is not None and len(kinds) != self.num_layers:
                raise ValueError(f"{key} has {len(kinds)} entries but num_layers is {self.num_layers}")
        types = self.layer_types or []
        if self.layer_types is not None and self.num_local_layers != types.count("sliding_attention"):
            raise ValueError(f"num_local_layers ({self.num_local_layers}) differs from layer_types' "
                             f"{types.count('sliding_attention')} sliding_attention layers")
        needs = {"chunked_attention": ("attention_chunk_size",),
                 "linear_attention": ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                                      "linear_value_head_dim", "linear_conv_kernel"),
                 "mamba": ("mamba_d_inner", "mamba_state_size", "mamba_conv_kernel")}
        for kind, fields in needs.items():
            missing = [f for f in fields if getattr(self, f) is None]
            if kind in types and missing:
                raise ValueError(f"{kind} layers need {', '.join(missing)}")
        if "mamba" in types and (self.mamba_num_heads is None) == (self.mamba_dt_rank is None):
            raise ValueError("mamba layers need mamba_num_heads (Mamba-2) or mamba_dt_rank (Mamba-1), not both")
        if self.mamba_num_heads and (self.mamba_d_inner or 0) % self.mamba_num_heads:
            raise ValueError("mamba_d_inner must be a multiple of mamba_num_heads")
        if self.mlp_types is not None:
            if self.num_dense_layers:
                raise ValueError("give num_dense_layers or mlp_types, not both")
            if ("moe" in self.mlp_types) != (self.num_experts > 1):
                raise ValueError("mlp_types lists moe layers exactly when num_experts > 1")
        attention = self.num_layers if self.layer_types is None else sum(t in ATTENTION_TYPES for t in types)
        if self.num_nope_layers > attention:
            raise ValueError(f"num_nope_layers ({self.num_nope_layers}) exceeds the {attention} attention layers")

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        self._check_pattern()
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads "
                f"({self.num_kv_heads})"
            )
        if self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) exceeds num_experts "
                f"({self.num_experts})"
            )
        if self.num_local_layers > self.num_layers:
            raise ValueError("num_local_layers exceeds num_layers")
        if self.num_local_layers and self.sliding_window is None:
            raise ValueError("num_local_layers > 0 needs sliding_window")
        if self.num_dense_layers > self.num_layers:
            raise ValueError("num_dense_layers exceeds num_layers")
        mla = (self.kv_lora_rank, self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim)
        if any(v is not None for v in mla) and any(v is None for v in mla):
            raise ValueError(
                "MLA needs all of kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim"
            )
        return self

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1


# --------------------------------------------------------------------------- loading


def _read_yaml(path: Path) -> dict[str, Any]:
    """A spec YAML file as a mapping (see :mod:`roofline.spec_files` for the limits)."""
    return read_yaml(path)


#: Problems listed in one spec error line at most.
_MAX_PROBLEMS = 3


def _validation_message(path: str, exc: ValidationError, schema: type[BaseModel]) -> str:
    parts = []
    errors = exc.errors()
    for err in errors[:_MAX_PROBLEMS]:
        field = shown(".".join(str(p) for p in err["loc"]) or "(top level)")
        if err["type"] == "extra_forbidden":
            close = nearest(str(err["loc"][-1]), schema.model_fields)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            parts.append(f"field {field}: unknown key{hint}")
        elif err["type"] == "missing":
            parts.append(f"field {field}: missing (required)")
        else:
            got = err.get("input")
            msg = err["msg"].removeprefix("Value error, ")
            value = "" if isinstance(got, dict) or "(got " in msg or shown(got) in msg else f" (got {shown(got)})"
            parts.append(f"field {field}: {msg}{value}")
    more = len(errors) - _MAX_PROBLEMS
    return f"{path}: " + "; ".join(parts) + (f"; and {more} more problems" if more > 0 else "")


def _validate(schema: type[_Spec], data: dict[str, Any], origin: str) -> Any:
    if not isinstance(data, dict):
        raise SpecError(f"{origin}: expected a mapping of fields (got {type(data).__name__})")
    check_tree(data, origin)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_validation_message(origin, exc, schema)) from None


@functools.cache
def _builtin_catalog(kind: Literal["hardware", "models"]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in catalog_dirs(kind):
        for path in sorted(folder.glob("*.yaml")):
            found.setdefault(path.stem, path)
    return found


def _catalog(kind: Literal["hardware", "models"]) -> dict[str, Path]:
    """Built-in names, then the user catalog's (roofline.user_catalog; a built-in name wins)."""
    from . import user_catalog

    return {**user_catalog.entries(kind), **_builtin_catalog(kind)}


def catalog_origins(kind: Literal["hardware", "models"]) -> dict[str, str]:
    """Every catalog name -> 'built-in' or the saved file's path (the user catalog)."""
    builtin = _builtin_catalog(kind)
    return {name: "built-in" if name in builtin else str(path) for name, path in sorted(_catalog(kind).items())}


def hardware_names() -> list[str]:
    """Names of the built-in chips."""
    return sorted(_builtin_catalog("hardware"))


def model_names() -> list[str]:
    """Names of the built-in models."""
    return sorted(_builtin_catalog("models"))


def _looks_like_path(ref: str) -> bool:
    try:
        return ref.endswith((".yaml", ".yml", ".json")) or "/" in ref or Path(ref).is_file()
    except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte
        return False


def _resolve(kind: Literal["hardware", "models"], ref: str | Path) -> Path:
    text = str(ref)
    if _looks_like_path(text):
        path = Path(text).expanduser()
        try:
            found = path.is_file()
        except (OSError, ValueError):  # a path too long for the file system
            found = False
        if not found:
            raise SpecError(f"{shown(str(path))}: no such file")
        return path
    catalog = _catalog(kind)
    if text in catalog:
        return catalog[text]
    label = "hardware" if kind == "hardware" else "model"
    raise SpecError(unknown_name_message(label, text, catalog, f"roofline {label} list"))


@functools.lru_cache(maxsize=256)
def _load_hardware_path(path: Path) -> HardwareSpec:
    return _validate(HardwareSpec, _read_yaml(path), str(path))


@functools.lru_cache(maxsize=256)
def _load_model_path(path: Path) -> ModelSpec:
    if path.suffix == ".json":
        return model_from_config_file(path)
    return _validate(ModelSpec, _read_yaml(path), str(path))


def load_hardware(ref: str | Path | HardwareSpec) -> HardwareSpec:
    """A chip by built-in name, YAML path or calibrated profile path."""
    if isinstance(ref, HardwareSpec):
        return ref
    return _load_hardware_path(_resolve("hardware", ref).resolve())


def load_model(ref: str | Path | ModelSpec) -> ModelSpec:
    """A model by built-in name, YAML path or Hugging Face config.json path."""
    if isinstance(ref, ModelSpec):
        return ref
    return _load_model_path(_resolve("models", ref).resolve())


def hardware_from_dict(data: dict[str, Any], origin: str = "<dict>") -> HardwareSpec:
    """Validate a hardware mapping (e.g. one built by calibration) into a spec."""
    return _validate(HardwareSpec, data, origin)


def model_from_dict(data: dict[str, Any], origin: str = "<dict>") -> ModelSpec:
    """Validate a model mapping into a spec."""
    return _validate(ModelSpec, data, origin)


def model_from_config_file(path: Path) -> ModelSpec:
    """A model from a Hugging Face config.json (see :mod:`roofline.hf_config`)."""
    from .hf_config import model_dict_from_hf_config

    data = model_dict_from_hf_config(read_json(path), name=Path(path).parent.name or path.stem,
                                     origin=str(path))
    return model_from_dict(data, str(path))


def dump_yaml(data: dict[str, Any]) -> str:
    """YAML text for a spec mapping (numbers written so PyYAML reads them back as floats)."""
    return yaml.safe_dump(data, sort_keys=False)
