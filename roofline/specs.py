"""Hardware and model specs: pydantic schemas and the only code that reads YAML.

A chip or a model is one YAML file.  ``load_hardware`` / ``load_model`` take a built-in
name (``tpu-v5e``), a path to a YAML file, or (models) a Hugging Face ``config.json``.
Every failure is a :class:`~roofline.errors.SpecError` with one line naming the file and
the field.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import SpecError, nearest, unknown_name_message
from .units import DTYPE_BYTES, parse_quantity

PACKAGE_DIR = Path(__file__).resolve().parent


def catalog_dirs(kind: Literal["hardware", "models"]) -> list[Path]:
    """Built-in catalog folders: inside the installed package, else the repo's top level."""
    candidates = [PACKAGE_DIR / "_catalog" / kind, PACKAGE_DIR.parent / kind]
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

    _numbers = field_validator(
        "hbm_bytes",
        "hbm_bandwidth_bytes_per_s",
        "ici_bandwidth_bytes_per_s",
        "ici_hop_latency_s",
        "price_per_chip_hour",
        "dcn_bandwidth_bytes_per_s",
        "dcn_latency_s",
        "host_dram_bytes",
        "host_bandwidth_bytes_per_s",
        mode="before",
    )(_number)

    @field_validator("flops_per_s", mode="before")
    @classmethod
    def _flops(cls, value: Any) -> Any:
        if not isinstance(value, dict) or not value:
            raise ValueError("must map compute dtypes to FLOP/s, e.g. {bf16: 1.97e+14}")
        out = {}
        for dtype, rate in value.items():
            if dtype not in DTYPE_BYTES:
                raise ValueError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}")
            number = _number(rate)
            if not isinstance(number, (int, float)) or number <= 0:
                raise ValueError(f"flops_per_s.{dtype} must be a positive number (got {rate!r})")
            out[dtype] = float(number)
        return out

    def flops_for(self, dtype: str) -> float:
        """Dense FLOP/s for ``dtype``; a clear error when the chip does not support it."""
        try:
            return self.flops_per_s[dtype]
        except KeyError:
            have = ", ".join(self.flops_per_s)
            raise SpecError(
                f"hardware {self.name!r} has no {dtype} FLOP/s (flops_per_s has: {have})"
            ) from None


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
    source: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read file ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{path}: malformed YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of keys to values at the top level")
    return data


def _validation_message(path: str, exc: ValidationError, schema: type[BaseModel]) -> str:
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            close = nearest(str(err["loc"][-1]), schema.model_fields)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            parts.append(f"field {field!r}: unknown key{hint}")
        elif err["type"] == "missing":
            parts.append(f"field {field!r}: missing (required)")
        else:
            got = err.get("input")
            shown = "" if isinstance(got, dict) else f" (got {got!r})"
            msg = err["msg"].removeprefix("Value error, ")
            parts.append(f"field {field!r}: {msg}{shown}")
    return f"{path}: " + "; ".join(parts)


def _validate(schema: type[_Spec], data: dict[str, Any], origin: str) -> Any:
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_validation_message(origin, exc, schema)) from None


@functools.cache
def _catalog(kind: Literal["hardware", "models"]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in catalog_dirs(kind):
        for path in sorted(folder.glob("*.yaml")):
            found.setdefault(path.stem, path)
    return found


def hardware_names() -> list[str]:
    """Names of the built-in chips."""
    return sorted(_catalog("hardware"))


def model_names() -> list[str]:
    """Names of the built-in models."""
    return sorted(_catalog("models"))


def _looks_like_path(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml", ".json")) or "/" in ref or Path(ref).is_file()


def _resolve(kind: Literal["hardware", "models"], ref: str | Path) -> Path:
    text = str(ref)
    if _looks_like_path(text):
        path = Path(text).expanduser()
        if not path.is_file():
            raise SpecError(f"{path}: no such file")
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


def read_json(path: Path) -> dict[str, Any]:
    """Read a JSON object, with a one-line error naming the file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"{path}: cannot read file ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: malformed JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object at the top level")
    return data


def model_from_config_file(path: Path) -> ModelSpec:
    """A model from a Hugging Face config.json (see :mod:`roofline.hf_config`)."""
    from .hf_config import model_dict_from_hf_config

    data = model_dict_from_hf_config(read_json(path), name=Path(path).parent.name or path.stem,
                                     origin=str(path))
    return model_from_dict(data, str(path))


def dump_yaml(data: dict[str, Any]) -> str:
    """YAML text for a spec mapping (numbers written so PyYAML reads them back as floats)."""
    return yaml.safe_dump(data, sort_keys=False)
