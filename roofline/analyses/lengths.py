"""Request-length distributions: (input, output) lengths with weights, and averages over them.

A distribution is a small set of (input_len, output_len, weight) points: a histogram, a CSV of
observed requests, or a single fixed length.  Estimators accept arrays, so averaging an
estimate is one vectorised call followed by :func:`weighted_mean`.  :func:`read_lengths_csv`
and :func:`parse_lengths` are the only readers (input boundary); :func:`averaged_request` applies
:func:`roofline.analyses.step.request` to every point; the rest are pure functions of numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from roofline.analyses.request import request_from
from roofline.core.checks import MAX_COUNT, check_array, check_instance, check_number, check_scalar
from roofline.core.errors import OptionError, RooflineError, shown
from roofline.core.tables import Column, read_table
from roofline.deploy import Deployment
from roofline.specs import ModelSpec


@dataclass(frozen=True)
class LengthDistribution:
    """Request lengths: equal-length arrays of input tokens, output tokens and weights (sum 1)."""

    input_len: np.ndarray
    output_len: np.ndarray
    weight: np.ndarray
    source: str = "fixed lengths"

    @property
    def mean_input(self) -> float:
        return float(weighted_mean(self.input_len, self.weight))

    @property
    def mean_output(self) -> float:
        return float(weighted_mean(self.output_len, self.weight))

    @property
    def decode_context(self) -> float:
        """Mean context over decode steps: Σ w·O·(I + O/2) / Σ w·O (steps weight long outputs)."""
        return float(decode_weighted_context(self.input_len, self.output_len, self.weight))

    @property
    def max_context(self) -> float:
        return float(np.max(self.input_len + self.output_len))


def fixed_lengths(input_len: float, output_len: float) -> LengthDistribution:
    """A distribution with one point: every request has I input and O output tokens."""
    input_len = check_scalar(input_len, "input_len", minimum=1.0, open_low=False)
    output_len = check_scalar(output_len, "output_len", minimum=1.0, open_low=False)
    return from_points([input_len], [output_len], [1.0], source=f"fixed: {input_len:g} in, {output_len:g} out")


def from_points(
    input_len: ArrayLike, output_len: ArrayLike, weight: ArrayLike, source: str = "histogram"
) -> LengthDistribution:
    """Validate (I, O, weight) points and normalise the weights to sum to 1."""
    i = check_array(input_len, "input_len", minimum=1.0, open_low=False).ravel()
    o = check_array(output_len, "output_len", minimum=1.0, open_low=False).ravel()
    w = check_array(weight, "weight", minimum=0.0, open_low=False, maximum=1e15).ravel()
    if not (i.size == o.size == w.size) or i.size == 0:
        raise RooflineError(f"{source}: lengths need equally many input, output and weight values")
    if np.any(i < 1) or np.any(o < 1) or np.any(w < 0) or not np.all(np.isfinite(np.r_[i, o, w])):
        raise RooflineError(f"{source}: input and output lengths must be >= 1 and weights >= 0")
    if w.sum() <= 0:
        raise RooflineError(f"{source}: the weights sum to zero")
    return LengthDistribution(i, o, w / w.sum(), source)


def weighted_mean(values: ArrayLike, weight: ArrayLike) -> np.ndarray:
    """Σ w·x / Σ w along the last axis (the distribution's points)."""
    w = np.asarray(weight, dtype=float)
    return np.sum(np.multiply(values, w), axis=-1) / np.sum(w)


def decode_weighted_context(input_len: ArrayLike, output_len: ArrayLike, weight: ArrayLike) -> np.ndarray:
    """Context averaged over decode steps: Σ w·O·(I + O/2) / Σ w·O (each request spends O steps)."""
    o = np.asarray(output_len, dtype=float)
    return weighted_mean(o * (np.asarray(input_len, dtype=float) + o / 2.0), weight) / weighted_mean(o, weight)


def parse_lengths(text: str) -> LengthDistribution:
    """``'512:128:0.7,4096:512:0.3'`` (input:output:weight, weight optional) -> a distribution."""
    hint = "expected input:output[:weight] items, e.g. 512:128:0.7,4096:512:0.3"
    items = str(text).split(",")
    if len(str(text)) > 1 << 16 or len(items) > 4096:
        raise OptionError(f"lengths: too long (at most 4096 items); {hint}", parameters=("lengths",))
    points = []
    for item in items:
        parts = item.strip().split(":")
        if len(parts) not in (2, 3):
            raise OptionError(f"lengths: cannot read {shown(item)}; {hint}", parameters=("lengths",))
        try:
            lengths = [check_number(p, "", minimum=1.0, maximum=float(MAX_COUNT), open_low=False) for p in parts[:2]]
            weight = check_number(parts[2], "", minimum=0.0, open_low=False) if len(parts) == 3 else 1.0
        except OptionError as exc:
            raise OptionError(
                f"lengths: {shown(item)}: lengths are numbers in [1, {MAX_COUNT}] and the weight a number >= 0 ({exc})",
                parameters=("lengths",),
            ) from None
        points.append([*lengths, weight])
    arr = np.array(points)
    if not np.any(arr[:, 2] > 0):
        raise OptionError(
            f"lengths: every weight in {shown(text)} is 0; allowed: weights >= 0 with at least one > 0",
            parameters=("lengths",),
        )
    return from_points(arr[:, 0], arr[:, 1], arr[:, 2], source="lengths given as I:O:weight items")


def lengths_from_options(
    input_len: int | None,
    output_len: int | None,
    lengths: str | None,
    lengths_csv: str | None,
    model: ModelSpec | None = None,
    every_source: bool = False,
) -> LengthDistribution:
    """Exactly one of input_len/output_len, lengths (``I:O:weight,...``) or lengths_csv (a file).  With
    ``model``, the rows of a lengths file (with ``every_source``: any lengths, as for the simulator's
    requests) must fit its context window."""
    given = sum(x is not None for x in (lengths, lengths_csv)) + (input_len is not None or output_len is not None)
    every = ("input_len", "output_len", "lengths", "lengths_csv")
    if given != 1:
        raise OptionError(
            "give request lengths once: input_len= and output_len=, or lengths=, or lengths_csv=", parameters=every
        )
    dist = _lengths_from(input_len, output_len, lengths, lengths_csv)
    if model is not None and (every_source or lengths_csv is not None):
        flag = f"lengths_csv {lengths_csv}" if lengths_csv else "lengths" if lengths else "input_len"
        check_within_context(model.name, model.max_position_embeddings, dist.input_len, dist.output_len, flag)
    return dist


def _lengths_from(
    input_len: int | None, output_len: int | None, lengths: str | None, lengths_csv: str | None
) -> LengthDistribution:
    if lengths is not None:
        return parse_lengths(lengths)
    if lengths_csv is not None:
        try:
            return read_lengths_csv(lengths_csv)
        except RooflineError as exc:
            raise OptionError(f"lengths_csv: {exc}", parameters=("lengths_csv",)) from None
    if input_len is None or output_len is None:
        raise OptionError("input_len= and output_len= go together", parameters=("input_len", "output_len"))
    if input_len < 1 or output_len < 1:
        raise OptionError("input_len= and output_len= must be at least 1", parameters=("input_len", "output_len"))
    return fixed_lengths(input_len, output_len)


#: Most rows a lengths file may have: aggregate larger logs into histogram rows with a count column.
MAX_LENGTH_ROWS = 100_000
#: The lengths file's columns: whole-token lengths, an optional weight (default 1).
LENGTH_COLUMNS = (
    Column("input_len", "count"),
    Column("output_len", "count"),
    Column("count", "number", minimum=0.0, required=False, default=1.0),
)


def read_lengths_csv(path: str | Path) -> LengthDistribution:
    """A CSV with header input_len,output_len[,count]: one row per request or per histogram bin
    (lengths whole numbers in [1, 2**31-1], counts >= 0), at most :data:`MAX_LENGTH_ROWS` rows."""
    if not isinstance(path, (str, Path)) or not str(path):
        raise OptionError(f"path: must be a file name (got {shown(path)})", parameters=("path",))
    table = read_table(path, LENGTH_COLUMNS, max_rows=MAX_LENGTH_ROWS, kind="lengths", extra_columns=True)
    columns = table.columns
    return from_points(columns["input_len"], columns["output_len"], columns["count"], source=str(path))


def check_within_context(
    model_name: str,
    max_context: int | None,
    input_len: ArrayLike,
    output_len: ArrayLike,
    where: str,
    lines: ArrayLike | None = None,
) -> None:
    """Requests must fit the model's context window: input + output <= ``max_context`` (its
    max_position_embeddings; no check when the model declares none).  ``lines``: file lines for the message."""
    if max_context is None:
        return
    total = np.add(np.asarray(input_len, dtype=float), np.asarray(output_len, dtype=float)).ravel()
    over = np.flatnonzero(total > max_context)
    if over.size:
        k = int(over[0])
        at = f"line {int(np.asarray(lines).ravel()[k])}: " if lines is not None and np.size(lines) > k else ""
        raise OptionError(
            f"{where}: {at}input_len + output_len = {total[k]:.0f} tokens is beyond {model_name}'s context window; "
            f"allowed: at most {max_context} (max_position_embeddings)"
            + (f"; {over.size} such requests" if over.size > 1 else ""),
            parameters=(where.split()[0],) if where.split()[0].isidentifier() else (),
        )


def averaged_request(
    dep: Deployment, lengths: LengthDistribution, batch: ArrayLike = 1, mfu: float = 1.0
) -> dict[str, float]:
    """Every numeric field of :func:`roofline.analyses.step.request`, weighted over the distribution.

    One vectorised call over the deployment evaluates all the points.  Means of latencies are
    per request; ``tokens_per_s_per_chip`` is the
    weighted mean of the per-point values, not a ratio of means.
    """
    check_instance(lengths, "lengths", LengthDistribution, "from roofline.fixed_lengths(2048, 256)")
    res = request_from(dep, lengths.input_len, lengths.output_len, batch, mfu)
    out: dict[str, float] = {}
    for key, value in res.as_dict().items():
        arr = np.asarray(value)
        if arr.dtype.kind in "fiub":
            out[key] = float(weighted_mean(np.broadcast_to(arr, lengths.weight.shape).astype(float), lengths.weight))
    return out
