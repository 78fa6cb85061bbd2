"""A day of load: slots of a request rate (and optionally their own lengths and a replica cap).

A slot starts at ``start_hour`` (hours from the start of the day, in [0, 24)) and lasts until the next
slot starts; the day is a cycle, so the last slot runs on to the first one's start the next day.
:func:`read_load_profile` reads a CSV (the input boundary: header ``start_hour,rate`` with optional
``input_len,output_len`` and ``max_replicas``), :func:`diurnal_profile` builds the built-in shape, and
:func:`flat_profile` one steady rate.  A slot's ``max_replicas`` caps the replicas it may run: a
maintenance window is a slot with fewer replicas allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roofline.analyses.lengths import LengthDistribution, fixed_lengths
from roofline.core.errors import OptionError, shown
from roofline.core.tables import Column, read_table

HOURS_PER_DAY = 24.0
#: Most slots a profile holds (one a minute); bounds the planner's work.
MAX_SLOTS = 1440
#: Largest load-profile file read.
MAX_PROFILE_BYTES = 2**20
#: Built-in diurnal shape: the trough is this fraction of the peak by default (an assumption, not measured).
DEFAULT_TROUGH_FRACTION = 0.3
#: Hours of the built-in shape's trough and peak (local time; an assumption: quiet at night, busy mid-afternoon).
TROUGH_HOUR, PEAK_HOUR = 4.0, 16.0


@dataclass(frozen=True)
class LoadProfile:
    """Slots of a day: start hours (sorted, in [0, 24)), rates (requests/s), each slot's own lengths
    (None: the plan's lengths) and replica cap (inf: none)."""

    start_hour: np.ndarray
    rate: np.ndarray
    lengths: tuple[LengthDistribution | None, ...]
    max_replicas: np.ndarray
    source: str

    def __len__(self) -> int:
        return int(self.rate.size)

    @property
    def hours(self) -> np.ndarray:
        """Each slot's duration: the next start minus this one, the last wrapping to the first + 24 h."""
        nxt = np.append(self.start_hour[1:], self.start_hour[0] + HOURS_PER_DAY)
        return nxt - self.start_hour

    @property
    def peak_rate(self) -> float:
        return float(np.max(self.rate))

    @property
    def has_own_lengths(self) -> bool:
        return all(x is not None for x in self.lengths)


def make_profile(
    start_hour: list[float],
    rate: list[float],
    lengths: list[LengthDistribution | None] | None = None,
    max_replicas: list[float] | None = None,
    source: str = "load profile",
) -> LoadProfile:
    """A checked profile: rates finite and >= 0, start hours in [0, 24), strictly increasing."""
    n = len(rate)
    if n == 0 or len(start_hour) != n:
        raise OptionError(f"{source}: give one start hour per rate (at least one slot)", parameters=("load_profile",))
    if n > MAX_SLOTS:
        raise OptionError(f"{source}: {n} slots; at most {MAX_SLOTS} (one a minute)", parameters=("load_profile",))
    for k, (h, r) in enumerate(zip(start_hour, rate, strict=True)):
        if not (math.isfinite(r) and r >= 0):
            raise OptionError(f"{source}: slot {k + 1}: rate must be a finite number >= 0 (got {shown(r)})")
        if not (math.isfinite(h) and 0 <= h < HOURS_PER_DAY):
            raise OptionError(f"{source}: slot {k + 1}: start_hour must be in [0, 24) (got {shown(h)})")
        if k and h <= start_hour[k - 1]:
            what = "overlaps the slot before it (same start)" if h == start_hour[k - 1] else "is before the slot above"
            raise OptionError(
                f"{source}: slot {k + 1}: start_hour {h:g} {what}; slots must be sorted by start_hour, one per start"
            )
    caps = np.full(n, np.inf) if max_replicas is None else np.asarray(max_replicas, dtype=float)
    return LoadProfile(
        np.asarray(start_hour, dtype=float),
        np.asarray(rate, dtype=float),
        tuple(lengths) if lengths is not None else (None,) * n,
        caps,
        source,
    )


def flat_profile(rate: float, slots: int = 24) -> LoadProfile:
    """``slots`` equal slots of one steady rate (the steady plan as a day)."""
    step = HOURS_PER_DAY / slots
    return make_profile([k * step for k in range(slots)], [rate] * slots, source=f"flat: {rate:g} req/s all day")


def diurnal_rate(hour: np.ndarray, peak_rate: float, trough_fraction: float) -> np.ndarray:
    """Raised cosine over the day: peak·(f + (1 - f)·(1 - cos(2π(h - 4)/24))/2); f·peak at 04:00, peak at 16:00."""
    phase = 2.0 * np.pi * (np.asarray(hour, dtype=float) - TROUGH_HOUR) / HOURS_PER_DAY
    return peak_rate * (trough_fraction + (1.0 - trough_fraction) * (1.0 - np.cos(phase)) / 2.0)


def diurnal_profile(peak_rate: float, trough_fraction: float = DEFAULT_TROUGH_FRACTION, slots: int = 24) -> LoadProfile:
    """The built-in day (an assumed shape, not measured): hourly slots, each at the curve's highest rate
    within it, so a slot is sized for its own peak."""
    if not (math.isfinite(peak_rate) and peak_rate > 0):
        raise OptionError(f"peak rate must be positive and finite (got {shown(peak_rate)})", parameters=("qps",))
    if not 0 <= trough_fraction <= 1:
        raise OptionError(
            f"trough_fraction must be in [0, 1] (got {shown(trough_fraction)})", parameters=("trough_fraction",)
        )
    step = HOURS_PER_DAY / slots
    starts = np.arange(slots) * step
    rates = np.maximum(
        diurnal_rate(starts, peak_rate, trough_fraction), diurnal_rate(starts + step, peak_rate, trough_fraction)
    )
    inside = (starts < PEAK_HOUR) & (PEAK_HOUR < starts + step)
    rates[inside] = peak_rate
    return make_profile(
        starts.tolist(),
        rates.tolist(),
        source=f"built-in diurnal shape (assumed, not measured): peak {peak_rate:g} req/s at 16:00, "
        f"trough {trough_fraction:g} of it at 04:00, {slots} slots",
    )


#: The load-profile CSV's columns (the input boundary's schema).
PROFILE_SCHEMA = (
    Column("start_hour", "number", minimum=0.0, maximum=HOURS_PER_DAY),
    Column("rate", "number", minimum=0.0),
    Column("input_len", "count", required=False),
    Column("output_len", "count", required=False),
    Column("max_replicas", "count", required=False),
)


def read_load_profile(path: str | Path, what: str = "load_profile") -> LoadProfile:
    """A CSV with header start_hour,rate[,input_len,output_len][,max_replicas]: one row per slot, sorted."""
    table = read_table(
        path,
        PROFILE_SCHEMA,
        max_rows=MAX_SLOTS,
        what=what,
        kind="load-profile",
        error=OptionError,
        max_bytes=MAX_PROFILE_BYTES,
    )
    origin = table.source
    if ("input_len" in table.header) != ("output_len" in table.header):
        raise OptionError(f"{origin}: input_len and output_len go together (the header has one of them)")
    cols = table.columns
    lengths: list[LengthDistribution | None] = []
    for k, line in enumerate(table.lines):
        pair = (cols["input_len"][k], cols["output_len"][k])
        if (pair[0] is None) != (pair[1] is None):
            raise OptionError(f"{origin}: line {line}: give both input_len and output_len, or neither")
        if pair[0] is None and "input_len" in table.header:
            raise OptionError(f"{origin}: line {line}: input_len and output_len are empty; give them on every row")
        lengths.append(None if pair[0] is None else fixed_lengths(*pair))
        if cols["start_hour"][k] >= HOURS_PER_DAY:
            raise OptionError(f"{origin}: line {line}: start_hour is {shown(cols['start_hour'][k])}; allowed: [0, 24)")
        if k and cols["start_hour"][k] <= cols["start_hour"][k - 1]:
            same = cols["start_hour"][k] == cols["start_hour"][k - 1]
            what_is = "overlaps the row above (same start)" if same else "is before the row above"
            raise OptionError(
                f"{origin}: line {line}: start_hour {cols['start_hour'][k]:g} {what_is}; slots must be sorted "
                "by start_hour, one per start"
            )
    caps = [np.inf if c is None else float(c) for c in cols["max_replicas"]]
    return make_profile(cols["start_hour"], cols["rate"], lengths, caps, source=str(path))
