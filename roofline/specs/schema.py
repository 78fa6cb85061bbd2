"""Pydantic validation of spec files and mappings into the frozen specs of :mod:`roofline.specs.types`.

Each schema is built from its dataclass (fields, defaults and ``spec_field`` ranges declared
once there), plus the checks here: every field's type, finiteness, range and unit
(:func:`check_spec_field`), the FLOP/s table, layer kinds, precision, and the model's
consistency rules.  Only user files, mappings and calibration output come through here; the
built-in catalog is loaded from its validated, generated form (:mod:`roofline.specs.catalog`).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing

import annotated_types
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from roofline.core.checks import MAX_COUNT, check_count, check_flag, check_name, check_number, check_text
from roofline.core.errors import SHOWN_CHARS, SpecError, nearest, shown
from roofline.core.units import DTYPE_BYTES, Dimension
from roofline.specs import types as spec_types
from roofline.specs.types import (
    ATTENTION_TYPES,
    CONSTRAINTS,
    LAYER_TYPES,
    MLP_TYPES,
    PRECISION_KEYS,
    AchievableSpec,
    CalibrationSpec,
    EngineCalibration,
    HardwareSpec,
    ModelSpec,
    OpCalibration,
    hardware_from_data,
    model_from_data,
)


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
#: Upper limits tighter than :data:`roofline.core.checks.MAX_VALUE` for a dimension.
_FIELD_MAX: dict[str, float] = {"price_per_chip_hour": 1e6}
#: Text fields that are names (non-empty, one line) rather than free text.
_NAME_FIELDS = ("name",)


def _field_kind(annotation: object) -> tuple[object, bool]:
    """(base type, optional) of an annotation such as ``int | None``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), True
    return annotation, False


def _lower_bound(metadata: list[object]) -> tuple[float | None, bool]:
    """(bound, open) from a field's ``gt=``/``ge=`` constraint."""
    for item in metadata:
        if isinstance(item, annotated_types.Gt):
            return float(item.gt), True
        if isinstance(item, annotated_types.Ge):
            return float(item.ge), False
    return None, False


def check_spec_field(cls: type[BaseModel], value: object, info: ValidationInfo) -> object:
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
        return check_number(
            value, "", dimension=dimension, minimum=low, open_low=open_low, maximum=_FIELD_MAX.get(name)
        )
    if base is str:
        return check_name(value, "") if name in _NAME_FIELDS else check_text(value, "")
    return value


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _HardwareChecks(_Schema):
    _fields = field_validator("*", mode="before")(classmethod(check_spec_field))

    @field_validator("flops_per_s", mode="before", check_fields=False)
    @classmethod
    def _flops(cls, value: object) -> object:
        if not isinstance(value, dict) or not value:
            raise ValueError("must map compute dtypes to FLOP/s, e.g. {bf16: 1.97e+14}")
        out = {}
        for dtype, rate in value.items():
            if dtype not in DTYPE_BYTES:
                raise ValueError(f"unknown dtype {shown(dtype)}; allowed: {', '.join(DTYPE_BYTES)}")
            out[dtype] = check_number(rate, dtype, dimension="FLOP/s", minimum=1.0, open_low=False)
        return out

    @field_validator("unsupported_dtypes", mode="before", check_fields=False)
    @classmethod
    def _unsupported(cls, value: object) -> object:
        if value is None:
            return None
        if not isinstance(value, list | tuple) or not all(v in DTYPE_BYTES for v in value):
            raise ValueError(f"must list dtypes (got {shown(value)}); allowed: {', '.join(DTYPE_BYTES)}")
        return list(value)


class _CalibrationChecks(_Schema):
    """A calibrated profile's blocks: every field as strict as a spec's (``fused_parallel_block: "no"`` is
    refused, as ``gated_mlp: "no"`` is), and fitted parameter names read back by device count."""

    _fields = field_validator("*", mode="before")(classmethod(check_spec_field))

    @field_validator("params", mode="before", check_fields=False)
    @classmethod
    def _params(cls, value: object) -> object:
        if isinstance(value, dict):
            for key in value:
                check_param_key(key, value)
        return value


class _AchievableChecks(_Schema):
    """The achievable block: fractions in (0, 1] per known dtype, floors in [0, 10 ms] per kernel family."""

    _fields = field_validator("*", mode="before")(classmethod(check_spec_field))

    @field_validator("flops_fraction", mode="before", check_fields=False)
    @classmethod
    def _fractions(cls, value: object) -> object:
        if not isinstance(value, dict):
            raise ValueError("must map dtypes (or default) to fractions of peak FLOP/s, e.g. {bf16: 0.78}")
        out = {}
        for dtype, frac in value.items():
            if dtype != "default" and dtype not in DTYPE_BYTES:
                raise ValueError(f"unknown dtype {shown(dtype)}; allowed: default, {', '.join(DTYPE_BYTES)}")
            out[dtype] = check_number(frac, dtype, minimum=0.0, maximum=1.0, open_low=True)
        return out

    @field_validator("floor_s", mode="before", check_fields=False)
    @classmethod
    def _floors(cls, value: object) -> object:
        if not isinstance(value, dict):
            raise ValueError("must map kernel families (gemm, attention, moe, default) to seconds, e.g. {gemm: 4e-6}")
        return {
            str(k): check_number(v, str(k), dimension="seconds", minimum=0.0, maximum=0.01) for k, v in value.items()
        }


def check_param_key(key: object, params: dict[str, object]) -> None:
    """A fitted parameter's name: ``name`` or ``name@N``, N the device count it was fitted at (a whole
    number ≥ 1); a collective's ``latency_s@N`` needs ``bandwidth_bytes_per_s@N`` beside it."""
    base, at, devices = str(key).partition("@")
    if not at:
        return
    if not (base and devices.isascii() and devices.isdigit() and int(devices) >= 1):
        raise ValueError(
            f"key {shown(key)}: the part after '@' must be a device count, a whole number >= 1 (e.g. latency_s@8)"
        )
    if base == "latency_s" and f"bandwidth_bytes_per_s@{devices}" not in params:
        raise ValueError(f"key {shown(key)} needs bandwidth_bytes_per_s@{devices} beside it")


def _check_pattern(m: object) -> None:
    """Layer pattern rules: lengths, sliding count, each kind's sizes, Mamba variant, MoE layers, NoPE count."""
    for key in ("layer_types", "mlp_types"):
        kinds = getattr(m, key)
        if kinds is not None and len(kinds) != m.num_layers:
            raise ValueError(f"{key} has {len(kinds)} entries but num_layers is {m.num_layers}")
    kinds = m.layer_types or []
    if m.layer_types is not None and m.num_local_layers != kinds.count("sliding_attention"):
        raise ValueError(
            f"num_local_layers ({m.num_local_layers}) differs from layer_types' "
            f"{kinds.count('sliding_attention')} sliding_attention layers"
        )
    needs = {
        "chunked_attention": ("attention_chunk_size",),
        "linear_attention": (
            "linear_num_key_heads",
            "linear_num_value_heads",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "linear_conv_kernel",
        ),
        "mamba": ("mamba_d_inner", "mamba_state_size", "mamba_conv_kernel"),
    }
    for kind, fields in needs.items():
        missing = [f for f in fields if getattr(m, f) is None]
        if kind in kinds and missing:
            raise ValueError(f"{kind} layers need {', '.join(missing)}")
    if "mamba" in kinds and (m.mamba_num_heads is None) == (m.mamba_dt_rank is None):
        raise ValueError("mamba layers need mamba_num_heads (Mamba-2) or mamba_dt_rank (Mamba-1), not both")
    if m.mamba_num_heads and (m.mamba_d_inner or 0) % m.mamba_num_heads:
        raise ValueError("mamba_d_inner must be a multiple of mamba_num_heads")
    if m.mamba_num_heads and m.mamba_num_heads % m.mamba_n_groups:
        raise ValueError(
            f"mamba_num_heads ({m.mamba_num_heads}) must be a multiple of mamba_n_groups ({m.mamba_n_groups}): "
            "each group of B/C projections serves whole heads"
        )
    keys, values = m.linear_num_key_heads, m.linear_num_value_heads
    if keys and values and values % keys:
        raise ValueError(
            f"linear_num_value_heads ({values}) must be a multiple of linear_num_key_heads ({keys}): "
            "each key head serves whole value heads"
        )
    if m.mlp_types is not None:
        if m.num_dense_layers:
            raise ValueError("give num_dense_layers or mlp_types, not both")
        if ("moe" in m.mlp_types) != (m.num_experts > 1):
            raise ValueError("mlp_types lists moe layers exactly when num_experts > 1")
    attention = m.num_layers if m.layer_types is None else sum(t in ATTENTION_TYPES for t in kinds)
    if m.num_nope_layers > attention:
        raise ValueError(f"num_nope_layers ({m.num_nope_layers}) exceeds the {attention} attention layers")


def _check_model(m: object) -> None:
    """Consistency of a model's counts: heads per KV head, experts, local and dense layers, MLA sizes."""
    _check_pattern(m)
    if m.num_heads % m.num_kv_heads:
        raise ValueError(f"num_heads ({m.num_heads}) must be a multiple of num_kv_heads ({m.num_kv_heads})")
    if m.experts_per_token > m.num_experts:
        raise ValueError(f"experts_per_token ({m.experts_per_token}) exceeds num_experts ({m.num_experts})")
    if m.num_local_layers > m.num_layers:
        raise ValueError("num_local_layers exceeds num_layers")
    if m.num_local_layers and m.sliding_window is None:
        raise ValueError("num_local_layers > 0 needs sliding_window")
    if m.num_dense_layers > m.num_layers:
        raise ValueError("num_dense_layers exceeds num_layers")
    mla = (m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim)
    if any(v is not None for v in mla) and any(v is None for v in mla):
        raise ValueError("MLA needs all of kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim")


class _ModelChecks(_Schema):
    _fields = field_validator("*", mode="before")(classmethod(check_spec_field))

    @field_validator("layer_types", "mlp_types", mode="before", check_fields=False)
    @classmethod
    def _kinds(cls, value: object, info: ValidationInfo) -> object:
        allowed = LAYER_TYPES if info.field_name == "layer_types" else MLP_TYPES
        if value is None:
            return None
        if not isinstance(value, list) or not value:
            raise ValueError(f"must be a list of layer kinds, one per layer ({', '.join(allowed)})")
        bad = sorted({shown(v) for v in value if v not in allowed})
        if bad:
            raise ValueError(f"unknown kinds {', '.join(bad[:4])}; allowed: {', '.join(allowed)}")
        return value

    @field_validator("precision", mode="before", check_fields=False)
    @classmethod
    def _precision(cls, value: object) -> object:
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
    def _derive_counts(cls, data: object) -> object:
        """num_local_layers from layer_types (its sliding_attention entries) when not given."""
        if isinstance(data, dict) and isinstance(data.get("layer_types"), list) and "num_local_layers" not in data:
            data = {**data, "num_local_layers": sum(t == "sliding_attention" for t in data["layer_types"])}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> object:
        _check_model(self)
        return self


def _schema_from(spec: type, base: type[BaseModel], nested: dict[str, object]) -> type[BaseModel]:
    """A pydantic model with ``spec``'s fields, defaults and ranges (``nested``: field -> schema annotation)."""
    hints = typing.get_type_hints(spec, vars(spec_types))
    fields: dict[str, object] = {}
    for f in dataclasses.fields(spec):
        limits = {k: f.metadata[k] for k in CONSTRAINTS if k in f.metadata}
        if f.default is not dataclasses.MISSING:
            info = Field(f.default, **limits)
        elif f.default_factory is not dataclasses.MISSING:
            info = Field(default_factory=f.default_factory, **limits)
        else:
            info = Field(**limits)
        fields[f.name] = (nested.get(f.name, hints[f.name]), info)
    return create_model(f"{spec.__name__}Schema", __base__=base, __module__=__name__, **fields)


@functools.cache
def _schemas() -> dict[type, type[BaseModel]]:
    op = _schema_from(OpCalibration, _CalibrationChecks, {})
    calibration = _schema_from(CalibrationSpec, _CalibrationChecks, {"ops": dict[str, op]})  # type: ignore[valid-type]
    engine = _schema_from(EngineCalibration, _CalibrationChecks, {})
    achievable = _schema_from(AchievableSpec, _AchievableChecks, {})
    hardware = _schema_from(
        HardwareSpec,
        _HardwareChecks,
        {
            "calibration": calibration | None,
            "engine": dict[str, engine] | None,
            "achievable": achievable | None,  # type: ignore[valid-type]
        },
    )  # type: ignore[valid-type]
    model = _schema_from(ModelSpec, _ModelChecks, {})
    return {
        OpCalibration: op,
        CalibrationSpec: calibration,
        EngineCalibration: engine,
        AchievableSpec: achievable,
        HardwareSpec: hardware,
        ModelSpec: model,
    }


def schema_for(spec: type) -> type[BaseModel]:
    """The pydantic schema that validates ``spec`` (HardwareSpec, ModelSpec or a calibration block)."""
    return _schemas()[spec]


#: Problems listed in one spec error line at most.
_MAX_PROBLEMS = 3


def field_path(loc: tuple[object, ...]) -> str:
    """A field's dotted path, quoted, in full (each key of it shortened only if long): the value is what a
    message shortens, never the field it names."""
    return repr(".".join(str(p) if len(str(p)) <= SHOWN_CHARS else shown(str(p)) for p in loc) or "(top level)")


def _validation_message(path: str, exc: ValidationError, schema: type[BaseModel]) -> str:
    parts = []
    errors = exc.errors()
    for err in errors[:_MAX_PROBLEMS]:
        field = field_path(err["loc"])
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


def validated(spec: type, data: dict[str, object], origin: str) -> dict[str, object]:
    """``data`` checked against ``spec``'s schema, as plain data with defaults filled; one SpecError line."""
    from roofline.specs.files import check_tree

    if not isinstance(data, dict):
        raise SpecError(f"{origin}: expected a mapping of fields (got {type(data).__name__})")
    check_tree(data, origin)
    schema = schema_for(spec)
    try:
        return schema.model_validate(data).model_dump()
    except ValidationError as exc:
        raise SpecError(_validation_message(origin, exc, schema)) from None


def validate_hardware(data: dict[str, object], origin: str) -> HardwareSpec:
    """Validate a hardware mapping into a HardwareSpec."""
    return hardware_from_data(validated(HardwareSpec, data, origin))


def validate_model(data: dict[str, object], origin: str) -> ModelSpec:
    """Validate a model mapping into a ModelSpec."""
    return model_from_data(validated(ModelSpec, data, origin))
