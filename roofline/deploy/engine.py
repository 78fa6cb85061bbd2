"""A serving engine's terms beyond the kernels: the entry a deployment runs with, and how it is found.

Terms are the rows of the engine-term registry (:mod:`roofline.deploy.engine_registry`).  An entry,
keyed ``<engine>/<version>``, comes from the chip profile's ``engine:`` section (``roofline calibrate
fit`` on the user's rows: it wins) or from the built-in entries (:mod:`roofline.deploy.engine_builtin`:
``vllm/...``, ``sglang/...``, ``trtllm/...``), which work with every profile, spec sheet included.
Asking for an engine no entry has is an error that lists the entries there are; no engine means the
kernel sum alone (said in ``sources``).  Entries fitted before the registry (the eleven per-layer and
per-token terms below) still load and price as they did.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from roofline.core.errors import OptionError
from roofline.deploy.engine_registry import REGISTRY, registered
from roofline.specs import EngineCalibration, HardwareSpec

#: Terms of entries fitted before the registry, in the order their fit and the step model use them.
ENGINE_TERMS = (
    "step_overhead_s",
    "layer_overhead_s",
    "layer_bytes_per_token",
    "replicated_bytes_per_token",
    "sample_s_per_seq",
    "prefill_seq_overhead_s",
    "gemm_slowdown",
    "collective_hop_s",
    "gqa_kv_reread",
    "large_collective_s_per_byte",
)
#: The engine's floor under a prompt-only step (not affine in the step: the step is max(floor, its work)).
ENGINE_FLOOR = "prefill_floor_s"
#: Every term of an entry fitted before the registry: the affine terms, then the floor.
FITTED_ENGINE_TERMS = (*ENGINE_TERMS, ENGINE_FLOOR)
#: The origin of a built-in entry (roofline/data/engines/).
BUILT_IN = "roofline/data/engines"
#: Scheduling policies an entry may name (the simulator's policies).
POLICIES = ("decode-first", "prefill-first")


@dataclass(frozen=True)
class EngineTerms:
    """The engine quantities one deployment runs with, and where they came from.

    ``values`` holds the registry terms the entry gives; any other registered term reads as its default
    (``engine.frontend_out_s``, :meth:`value`).  The fields before ``values`` are the terms of entries
    fitted before the registry (0 in a registry entry, except ``gqa_kv_reread``, a kernel property both use).
    """

    step_overhead_s: float = 0.0
    layer_overhead_s: float = 0.0
    layer_bytes_per_token: float = 0.0
    replicated_bytes_per_token: float = 0.0
    sample_s_per_seq: float = 0.0
    prefill_seq_overhead_s: float = 0.0
    gemm_slowdown: float = 0.0
    collective_hop_s: float = 0.0
    gqa_kv_reread: float = 0.0
    large_collective_s_per_byte: float = 0.0
    prefill_floor_s: float = 0.0
    # The all-reduce message size (bytes) from which large_collective_s_per_byte applies (chosen by the fit).
    large_collective_bytes: float = 0.0
    comms_overlap: float | None = None
    fused_parallel_block: bool = False
    key: str = ""
    source: str = "none (kernel times only: no engine terms)"
    values: Mapping[str, float] = field(default_factory=dict)
    term_sources: Mapping[str, str] = field(default_factory=dict)
    policy: str = ""
    #: Sources of the end-to-end rows the entry was fitted on (empty: documented values only).
    fitted_sources: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> float:
        # Registry terms read as attributes (``engine.frontend_in_s``): the entry's value, else the default.
        term = REGISTRY.get(name)
        if term is None or name.startswith("_"):
            raise AttributeError(name)
        return self.value(name)

    def value(self, name: str) -> float:
        """The entry's value of registry term ``name``, else its registered default."""
        if name in self.values:
            return float(self.values[name])
        return REGISTRY[name].default

    @property
    def registry_entry(self) -> bool:
        """Whether this entry is written in registry terms (a built-in entry or one fitted by today's fit)."""
        return bool(self.values) or bool(self.policy)

    @property
    def legacy_active(self) -> bool:
        """Whether any term of an entry fitted before the registry is set."""
        return any(getattr(self, name) for name in FITTED_ENGINE_TERMS)

    @property
    def active(self) -> bool:
        return self.legacy_active or self.registry_entry

    def terms(self) -> dict[str, float]:
        """Every registry term's value for this entry (defaults filled), by name."""
        return {name: self.value(name) for name in REGISTRY}

    def as_dict(self) -> dict[str, object]:
        """What ``--json`` shows of the entry: key, source, policy, each registry term and its source."""
        return {
            "key": self.key,
            "source": self.source,
            "policy": self.policy or "decode-first",
            "terms": self.terms(),
            "term_sources": {n: self.term_sources.get(n, f"default: {REGISTRY[n].source}") for n in REGISTRY},
        }


NO_ENGINE = EngineTerms()


def from_calibration(key: str, cal: EngineCalibration, origin: str) -> EngineTerms:
    """EngineTerms of one entry, its source naming the entry and the rows it was fitted on."""
    where = f"{origin}: engine {key}"
    values = {name: registered(name, where).checked(v, where) for name, v in (cal.terms or {}).items()}
    if cal.policy and cal.policy not in POLICIES:
        raise OptionError(f"{where}: policy {cal.policy!r}; allowed: {', '.join(POLICIES)}", parameters=("engine",))
    held = cal.fit.get("holdout_mape")
    note = f", held-out MAPE {held:.1%}" if held is not None else ""
    rows = f"{cal.rows} end-to-end rows{note}" if cal.rows else "documented defaults, no rows fitted"
    legacy = {name: float(getattr(cal, name)) for name in FITTED_ENGINE_TERMS}
    if "gqa_kv_reread" in values:
        legacy["gqa_kv_reread"] = values["gqa_kv_reread"]
    return EngineTerms(
        **legacy,
        comms_overlap=float(cal.comms_overlap),
        fused_parallel_block=bool(cal.fused_parallel_block),
        large_collective_bytes=float(cal.large_collective_bytes),
        key=key,
        source=f"{'built-in' if origin == BUILT_IN else 'calibrated'} engine {key} ({origin}; {rows})",
        values=values,
        term_sources=dict(cal.term_sources or {}),
        policy=cal.policy,
        fitted_sources=tuple(cal.sources or ()),
    )


def version_order(version: str) -> tuple[tuple[int, str], ...]:
    """A sort key for versions: '0.6.1' < '0.15.1' < '1.0'; non-numeric parts ('any', 'rc1') sort after digits."""
    return tuple((int(p), "") if p.isdigit() else (1 << 30, p) for p in version.replace("-", ".").split("."))


def entries_for(hw: HardwareSpec) -> dict[str, tuple[EngineCalibration, str]]:
    """Every entry a deployment on ``hw`` may use: the built-in ones, then the profile's (which win)."""
    from roofline.deploy.engine_builtin import BUILT_IN_ORIGIN, builtin_entries

    out = {key: (cal, BUILT_IN_ORIGIN) for key, cal in builtin_entries().items()}
    out.update({key: (cal, hw.name) for key, cal in (hw.engine or {}).items()})
    return out


def _latest(keys: list[str]) -> str:
    return max(keys, key=lambda k: version_order(k.split("/", 1)[1] if "/" in k else ""))


def engine_terms(hw: HardwareSpec, engine: str | None) -> EngineTerms:
    """The entry ``engine`` names: '<engine>/<version>', or an engine name (its only profile entry, else its
    latest built-in version); none when not asked, unless the profile holds exactly one entry.

    The profile's entries (``calibrate fit`` on the user's rows) win over the built-in ones of the same key.
    """
    own = hw.engine or {}
    if engine is None:
        if len(own) == 1:
            key, cal = next(iter(own.items()))
            return from_calibration(key, cal, hw.name)
        if own:
            return EngineTerms(source=f"none (profile has engines {', '.join(sorted(own))}: choose one)")
        return NO_ENGINE
    entries = entries_for(hw)
    if engine in entries:
        cal, origin = entries[engine]
        return from_calibration(engine, cal, origin)
    mine = [k for k in own if k.split("/")[0] == engine]
    if len(mine) == 1:
        return from_calibration(mine[0], own[mine[0]], hw.name)
    versions = [k for k in entries if k.split("/")[0] == engine]
    if versions and "/" not in engine:
        key = _latest(versions)
        cal, origin = entries[key]
        return from_calibration(key, cal, origin)
    have = ", ".join(sorted(entries)) or "none"
    raise OptionError(f"engine {engine!r}: no such engine entry (entries: {have})", parameters=("engine",))
