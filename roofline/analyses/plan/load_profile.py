"""A day of load: slots of a request rate (and optionally their own lengths and a replica cap).

A slot starts at ``start_hour`` (hours from the start of the day, in [0, 24)) and lasts until the next
slot starts; the day is a cycle, so the last slot runs on to the first one's start the next day.
:func:`read_load_profile` reads a CSV (the input boundary: header ``start_hour,rate`` with optional
``input_len,output_len`` and ``max_replicas``), :func:`diurnal_profile` builds the built-in shape, and
:func:`flat_profile` one steady rate.  A slot's ``max_replicas`` caps the replicas it may run: a
maintenance window is a slot with fewer replicas allowed.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roofline.analyses.lengths import LengthDistribution, fixed_lengths
from roofline.core.checks import MAX_COUNT, check_count, check_number
from roofline.core.errors import OptionError, RooflineError, shown
from roofline.core.files import read_text_limited

HOURS_PER_DAY = 24.0
#: Most slots a profile holds (one a minute); bounds the planner's work.
MAX_SLOTS = 1440
#: Largest load-profile file read.
MAX_PROFILE_BYTES = 2**20
#: Columns a load-profile CSV may have (the first two are required).
PROFILE_COLUMNS = ("start_hour", "rate", "input_len", "output_len", "max_replicas")
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


def read_load_profile(path: str | Path) -> LoadProfile:
    """A CSV with header start_hour,rate[,input_len,output_len][,max_replicas]: one row per slot."""
    p = Path(path)
    text = read_text_limited(p, MAX_PROFILE_BYTES, OptionError, "load-profile")
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in (reader.fieldnames or [])]
    reader.fieldnames = header
    unknown = [h for h in header if h not in PROFILE_COLUMNS]
    if not {"start_hour", "rate"} <= set(header) or unknown:
        raise OptionError(
            f"{p}: header must be start_hour,rate with optional input_len,output_len,max_replicas "
            f"(got {shown(','.join(header))})"
        )
    if ("input_len" in header) != ("output_len" in header):
        raise OptionError(f"{p}: input_len and output_len go together (header has one of them)")
    starts: list[float] = []
    rates: list[float] = []
    lengths: list[LengthDistribution | None] = []
    caps: list[float] = []
    for line, row in enumerate(reader, start=2):
        if len(starts) >= MAX_SLOTS:
            raise OptionError(f"{p}: more than {MAX_SLOTS} slots (one a minute at most)")
        if None in row or None in row.values():
            raise OptionError(f"{p}: line {line}: expected {len(header)} cells ({','.join(header)})")
        starts.append(_cell(p, line, row, "start_hour", maximum=HOURS_PER_DAY))
        rates.append(_cell(p, line, row, "rate", maximum=None))
        if "input_len" in header:
            lengths.append(fixed_lengths(*(_count(p, line, row, c, 1) for c in ("input_len", "output_len"))))
        else:
            lengths.append(None)
        cap = (row.get("max_replicas") or "").strip()
        caps.append(float(_count(p, line, row, "max_replicas", 1)) if cap else np.inf)
    if not starts:
        raise OptionError(f"{p}: no slots (a header and at least one row start_hour,rate)")
    return make_profile(starts, rates, lengths, caps, source=str(p))


def _cell(p: Path, line: int, row: dict[str, str], column: str, maximum: float | None) -> float:
    """A number >= 0 from one cell; empty, text, NaN, negative or too large names the line and column."""
    value = (row.get(column) or "").strip()
    if not value:
        raise OptionError(f"{p}: line {line}: {column} is missing")
    try:
        number = check_number(value, "", minimum=0.0, open_low=False, maximum=maximum)
    except RooflineError:
        bound = f"in [0, {maximum:g})" if maximum else "a finite number >= 0"
        raise OptionError(f"{p}: line {line}: {column} must be {bound} (got {shown(value)})") from None
    if maximum is not None and number >= maximum:
        raise OptionError(f"{p}: line {line}: {column} must be in [0, {maximum:g}) (got {shown(value)})")
    return number


def _count(p: Path, line: int, row: dict[str, str], column: str, minimum: int) -> int:
    value = (row.get(column) or "").strip()
    if not value:
        raise OptionError(f"{p}: line {line}: {column} is missing")
    try:
        return check_count(value, "", minimum=minimum, maximum=MAX_COUNT)
    except RooflineError:
        raise OptionError(
            f"{p}: line {line}: {column} must be a whole number in [{minimum}, {MAX_COUNT}] (got {shown(value)})"
        ) from None
