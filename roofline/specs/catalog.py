"""The built-in catalog: where its files are, name resolution, and its validated, generated form.

``roofline/data/validated/<kind>/<name>.json`` holds each built-in spec as pydantic validation
of its YAML file produced it (:func:`generate`; regenerate with ``python -m roofline.specs.catalog``),
with the file's size and CRC-32.  A built-in file whose bytes still match loads from there straight into
the frozen spec, without YAML parsing or pydantic (CLI start-up); any other file, or a built-in
one edited since, is read and validated as usual.  ``tests/test_spec_catalog.py`` checks the
generated form equals validation of every file, so it cannot go stale unnoticed.
"""

from __future__ import annotations

import functools
import json
import zlib
from pathlib import Path
from typing import Literal

from roofline.core.errors import SpecError, shown, unknown_name_message
from roofline.specs.types import HardwareSpec, ModelSpec, hardware_from_data, model_from_data

Kind = Literal["hardware", "models"]
PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: The generated, validated form of the built-in catalog: one JSON file per entry, by kind.
GENERATED = PACKAGE_DIR / "data" / "validated"
#: Version of the generated file's layout (a different one is ignored).
FORMAT = 1


def catalog_dirs(kind: Kind) -> list[Path]:
    """Built-in catalog folders: inside the installed package, else the repo's top level.

    Hardware also finds the shipped calibrated profiles (``<chip>-cal``, roofline/data/profiles).
    """
    candidates = [PACKAGE_DIR / "_catalog" / kind, PACKAGE_DIR.parent / kind]
    if kind == "hardware":
        candidates.append(PACKAGE_DIR / "data" / "profiles")
    return [d for d in candidates if d.is_dir()]


@functools.cache
def builtin_catalog(kind: Kind) -> dict[str, Path]:
    """Built-in name -> its YAML file (the first folder of :func:`catalog_dirs` holding it)."""
    found: dict[str, Path] = {}
    for folder in catalog_dirs(kind):
        for path in sorted(folder.glob("*.yaml")):
            found.setdefault(path.stem, path)
    return found


def full_catalog(kind: Kind) -> dict[str, Path]:
    """Built-in names, then the user catalog's (roofline.specs.user_catalog; a built-in name wins)."""
    from roofline.specs import user_catalog

    return {**user_catalog.entries(kind), **builtin_catalog(kind)}


def catalog_origins(kind: Kind) -> dict[str, str]:
    """Every catalog name -> 'built-in' or the saved file's path (the user catalog)."""
    builtin = builtin_catalog(kind)
    return {name: "built-in" if name in builtin else str(path) for name, path in sorted(full_catalog(kind).items())}


def hardware_names() -> list[str]:
    """Names of the built-in chips."""
    return sorted(builtin_catalog("hardware"))


def model_names() -> list[str]:
    """Names of the built-in models."""
    return sorted(builtin_catalog("models"))


def _looks_like_path(ref: str) -> bool:
    try:
        return ref.endswith((".yaml", ".yml", ".json")) or "/" in ref or Path(ref).is_file()
    except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte
        return False


def _not_a_file(path: Path) -> str:
    """Why a path is not a spec file: missing, a folder, or a device/FIFO (never read: it may not end)."""
    try:
        if path.is_dir():
            return "is a folder; give a YAML or config.json file"
        if path.exists():
            return "is not a regular file (a device, FIFO or socket); give a YAML or config.json file"
    except (OSError, ValueError):
        pass
    return "no such file"


def resolve(kind: Kind, ref: str | Path) -> Path:
    """The file a reference names: a path that must exist, else a catalog name (a clear error lists close ones)."""
    text = str(ref)
    if _looks_like_path(text):
        path = Path(text).expanduser()
        try:
            found = path.is_file()
        except (OSError, ValueError):  # a path too long for the file system
            found = False
        if not found:
            raise SpecError(f"{shown(str(path))}: {_not_a_file(path)}")
        return path
    catalog = full_catalog(kind)
    if text in catalog:
        return catalog[text]
    label = "hardware" if kind == "hardware" else "model"
    raise SpecError(unknown_name_message(label, text, catalog, f"roofline {label} list"))


def _fingerprint(raw: bytes) -> dict[str, int]:
    """Size and CRC-32 of a file's bytes: any edit since generation changes them."""
    return {"bytes": len(raw), "crc32": zlib.crc32(raw)}


def generated_path(kind: Kind, name: str) -> Path:
    """Where the generated form of one built-in entry lives."""
    return GENERATED / kind / f"{name}.json"


def generated_spec(kind: Kind, path: Path) -> HardwareSpec | ModelSpec | None:
    """The validated spec of a built-in file from the generated form, or None (not there, or edited since)."""
    try:
        entry = json.loads(generated_path(kind, path.stem).read_text(encoding="utf-8"))
        raw = path.read_bytes()
    except (OSError, ValueError):
        return None
    if (
        not isinstance(entry, dict)
        or entry.get("format") != FORMAT
        or {k: entry.get(k) for k in ("bytes", "crc32")} != _fingerprint(raw)
    ):
        return None
    return hardware_from_data(entry["spec"]) if kind == "hardware" else model_from_data(entry["spec"])


def generate(kind: Kind) -> dict[str, dict[str, object]]:
    """The generated form of ``kind``: name -> its file's fingerprint and pydantic-validated plain data."""
    from roofline.specs.files import read_yaml
    from roofline.specs.schema import validated

    spec = HardwareSpec if kind == "hardware" else ModelSpec
    return {
        name: {
            "format": FORMAT,
            "note": f"generated from {kind}/{name}.yaml by `python -m roofline.specs.catalog`; do not edit",
            **_fingerprint(path.read_bytes()),
            "spec": validated(spec, read_yaml(path), str(path)),
        }
        for name, path in sorted(builtin_catalog(kind).items())
    }


def generated_text(entry: dict[str, object]) -> str:
    """One entry's generated file text."""
    return json.dumps(entry, indent=1) + "\n"


def main() -> None:
    """Rewrite roofline/data/validated/ from the built-in YAML files (stale entries removed)."""
    for kind in ("hardware", "models"):
        folder = GENERATED / kind
        folder.mkdir(parents=True, exist_ok=True)
        entries = generate(kind)
        for old in folder.glob("*.json"):
            if old.stem not in entries:
                old.unlink()
        for name, entry in entries.items():
            generated_path(kind, name).write_text(generated_text(entry), encoding="utf-8")
        print(f"wrote {len(entries)} {kind} entries to {folder}")


if __name__ == "__main__":
    main()
