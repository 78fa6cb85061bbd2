"""One hardware entry of a report: ``REF[@ENGINE][:key=value,...]``.

``REF`` is a built-in chip or profile name, or a hardware YAML / calibrated profile file; ``@ENGINE``
picks an engine entry of the profile (``h100-sxm-cal@trtllm/1.0``); ``:key=value`` pairs (separated by
``,`` or ``:``) fix part of the deployment: ``tp``, ``ep``, ``chips``, ``pp`` (whole numbers),
``weights``, ``kv`` and ``compute`` (dtypes); an ``ep`` above ``tp`` runs attention data-parallel over
ep / tp ranks.  ``h200:tp=8,weights=fp8`` is an H200 slice of 8 chips at tp 8 with fp8 weights, its
batch still swept.  A path that exists is always read as a file, whatever it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from roofline.analyses.sweep.options import check_dtypes
from roofline.core.errors import OptionError, shown
from roofline.specs import HardwareSpec, load_hardware

#: Keys an entry may fix, and whether each is a whole number (else a dtype).
FIXED_KEYS = {"tp": True, "ep": True, "chips": True, "pp": True, "weights": False, "kv": False, "compute": False}


@dataclass(frozen=True)
class Entry:
    """A parsed hardware entry: the reference, its engine entry and the deployment choices it fixes."""

    ref: str = ""
    engine: str | None = None
    fixed: dict[str, int | str] = field(default_factory=dict)
    spec: HardwareSpec | None = None

    @property
    def is_file(self) -> bool:
        """True for a path (a hardware YAML or calibrated profile), False for a built-in name."""
        return self.spec is None and looks_like_file(self.ref)

    @property
    def short_name(self) -> str:
        """The file's name for a path, else the name as typed."""
        return Path(self.ref).name if self.is_file else self.ref

    @property
    def text(self) -> str:
        """The entry as one would type it."""
        return self.ref + self.suffix("engine") + self.suffix("fixed")

    def suffix(self, detail: str) -> str:
        """'@trtllm/1.0' (detail 'engine') or ':tp=8,weights=fp8' (detail 'fixed'); '' when absent."""
        if detail == "engine":
            return f"@{self.engine}" if self.engine else ""
        return f":{self.fixed_text()}" if self.fixed else ""

    def fixed_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.fixed.items())

    def with_engine(self, engine: str) -> Entry:
        return replace(self, engine=engine)

    def load(self) -> HardwareSpec:
        """The chip or profile this entry names (a clear error for an unknown name or a bad file)."""
        return self.spec if self.spec is not None else load_hardware(self.ref)

    def value(self, key: str) -> int | str | None:
        return self.fixed.get(key)


def looks_like_file(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml", ".json")) or "/" in ref or Path(ref).is_file()


def parse_entry(text: str, where: str = "hardware") -> Entry:
    """``REF[@ENGINE][:key=value,...]`` -> :class:`Entry`; an existing path is a file as a whole."""
    text = text.strip()
    if not text:
        raise OptionError(f"{where}: an entry is empty", parameters=(where,))
    if Path(text).is_file():
        return Entry(ref=text)
    head, _, tail = text.partition(":")
    ref, _, engine = head.partition("@")
    if not ref or ("@" in head and not engine):
        raise OptionError(
            f"{where}: cannot read {shown(text)}; write CHIP[@ENGINE][:key=value,...], e.g. h200-cal@trtllm/1.0:tp=8",
            parameters=(where,),
        )
    fixed: dict[str, int | str] = {}
    for item in (p.strip() for p in tail.replace(":", ",").split(",")) if tail else ():
        key, eq, value = item.partition("=")
        if not eq or key not in FIXED_KEYS or not value:
            raise OptionError(
                f"{where}: {shown(text)}: cannot read {shown(item)}; give key=value with key one of "
                f"{', '.join(FIXED_KEYS)}",
                parameters=(where,),
            )
        fixed[key] = _fixed_value(key, value, text, where)
    return Entry(ref=ref, engine=engine or None, fixed=fixed)


def _fixed_value(key: str, value: str, text: str, where: str) -> int | str:
    if not FIXED_KEYS[key]:
        return check_dtypes([value], f"{where}: {text}: {key}")[0]
    if not (value.isascii() and value.isdigit() and len(value) <= 6) or not 0 < int(value) <= 1 << 16:
        raise OptionError(f"{where}: {shown(text)}: {key} must be a whole number from 1 to 65536", parameters=(where,))
    return int(value)
