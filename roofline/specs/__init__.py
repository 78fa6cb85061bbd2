"""Hardware and model specs: loading chips and models by name or file (the public entry points).

A chip or a model is one YAML file.  ``load_hardware`` / ``load_model`` take a built-in
name (``tpu-v5e``), a path to a YAML file, or (models) a Hugging Face ``config.json``.
Every failure is a :class:`~roofline.core.errors.SpecError` with one line naming the file and
the field.  The pieces live by concern: the frozen spec types (:mod:`roofline.specs.types`),
pydantic validation of files (:mod:`roofline.specs.schema`), the built-in catalog and its
generated form (:mod:`roofline.specs.catalog`) and safe reading (:mod:`roofline.specs.files`);
every name they export is importable from here as before.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from roofline.core.errors import SpecError
from roofline.core.types import JSONObject
from roofline.specs.catalog import (
    PACKAGE_DIR,
    builtin_catalog,
    catalog_dirs,
    catalog_origins,
    full_catalog,
    generated_spec,
    hardware_names,
    model_names,
    resolve,
)
from roofline.specs.types import (
    ATTENTION_TYPES,
    LAYER_TYPES,
    MLP_TYPES,
    PRECISION_KEYS,
    CalibrationSpec,
    EngineCalibration,
    HardwareSpec,
    ModelSpec,
    OpCalibration,
    _Spec,
)

if TYPE_CHECKING:  # served lazily by __getattr__ below
    from roofline.specs.files import check_tree, read_json, read_yaml
    from roofline.specs.schema import check_spec_field, dimension_of

__all__ = [
    "ATTENTION_TYPES",
    "LAYER_TYPES",
    "MLP_TYPES",
    "PACKAGE_DIR",
    "PRECISION_KEYS",
    "CalibrationSpec",
    "EngineCalibration",
    "HardwareSpec",
    "ModelSpec",
    "OpCalibration",
    "SpecError",
    "catalog_dirs",
    "catalog_origins",
    "check_spec_field",
    "check_tree",
    "dimension_of",
    "dump_yaml",
    "hardware_from_dict",
    "hardware_names",
    "load_hardware",
    "load_model",
    "model_from_config_file",
    "model_from_dict",
    "model_names",
    "read_json",
    "read_yaml",
]

#: Names served lazily from the module that defines them (pydantic and YAML load only when used).
_LAZY = {
    "check_spec_field": "schema",
    "dimension_of": "schema",
    "read_json": "files",
    "read_yaml": "files",
    "check_tree": "files",
}


def __getattr__(name: str) -> object:
    """``check_spec_field``, ``dimension_of``, ``read_json``, ... imported on first use (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __package__), name)
    globals()[name] = value
    return value


class _SchemaFields:
    """``Spec.model_fields``: the pydantic schema's fields (annotation, metadata), built on first use.

    Attached here, by the package, so that :mod:`.types` never imports :mod:`.schema` (which imports it).
    """

    def __get__(self, obj: object, owner: type) -> dict[str, object]:
        from roofline.specs.schema import schema_for

        return schema_for(owner).model_fields


_Spec.model_fields = _SchemaFields()  # type: ignore[attr-defined]


# Former private names, kept for scripts that reached into this module.
_builtin_catalog = builtin_catalog
_catalog = full_catalog
_resolve = resolve


@functools.lru_cache(maxsize=256)
def _load_hardware_path(path: Path) -> HardwareSpec:
    spec = generated_spec("hardware", path)
    if isinstance(spec, HardwareSpec):
        return spec
    from roofline.specs.files import read_yaml

    return hardware_from_dict(read_yaml(path), str(path))


@functools.lru_cache(maxsize=256)
def _load_model_path(path: Path) -> ModelSpec:
    if path.suffix == ".json":
        return model_from_config_file(path)
    spec = generated_spec("models", path)
    if isinstance(spec, ModelSpec):
        return spec
    from roofline.specs.files import read_yaml

    return model_from_dict(read_yaml(path), str(path))


def load_hardware(ref: str | Path | HardwareSpec) -> HardwareSpec:
    """A chip by built-in name, YAML path or calibrated profile path."""
    if isinstance(ref, HardwareSpec):
        return ref
    return _load_hardware_path(resolve("hardware", ref).resolve())


def load_model(ref: str | Path | ModelSpec) -> ModelSpec:
    """A model by built-in name, YAML path or Hugging Face config.json path."""
    if isinstance(ref, ModelSpec):
        return ref
    return _load_model_path(resolve("models", ref).resolve())


def hardware_from_dict(data: JSONObject, origin: str = "<dict>") -> HardwareSpec:
    """Validate a hardware mapping (e.g. one built by calibration) into a spec."""
    from roofline.specs.schema import validate_hardware

    return validate_hardware(data, origin)


def model_from_dict(data: JSONObject, origin: str = "<dict>") -> ModelSpec:
    """Validate a model mapping into a spec."""
    from roofline.specs.schema import validate_model

    return validate_model(data, origin)


def model_from_config_file(path: Path) -> ModelSpec:
    """A model from a Hugging Face config.json (see :mod:`roofline.specs.hf.config`)."""
    from roofline.specs.files import read_json
    from roofline.specs.hf.config import model_dict_from_hf_config

    data = model_dict_from_hf_config(read_json(path), name=config_name(Path(path)), origin=str(path))
    return model_from_dict(data, str(path))


def config_name(path: Path) -> str:
    """A config file's model name: its folder's for ``config.json`` (a Hugging Face checkout), else its stem."""
    return (path.parent.name or path.stem) if path.name == "config.json" else path.stem


def dump_yaml(data: JSONObject) -> str:
    """YAML text for a spec mapping (numbers written so PyYAML reads them back as floats)."""
    import yaml

    return yaml.safe_dump(data, sort_keys=False)
