"""Cells of the end-to-end schema: the error type, a number as a cell, and the checked parsers of one cell."""

from __future__ import annotations

import math

from roofline.core.checks import MAX_COUNT, check_count, check_number
from roofline.core.errors import OptionError, RooflineError, shown


class E2EError(RooflineError):
    """A malformed end-to-end measurement file or row."""


def cell_text(value: float | None) -> str:
    """A number as a CSV cell: empty for None, inf, an integer without a point, else 10 digits."""
    if value is None:
        return ""
    if math.isinf(value):
        return "inf"
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else format(value, ".10g")


def bad_cell(origin: str, line: int, column: str, value: str, allowed: str) -> E2EError:
    """The one-line refusal of one cell: file, row, column, the value and what is allowed."""
    return E2EError(f"{origin}: row {line}: column {column!r} is {shown(value)}; allowed: {allowed}")


#: Largest value of each numeric column (beyond any real run, far from overflow).
MAX_SECONDS = 1e7  # about four months
MAX_RATE = 1e15  # tokens/s or requests/s of a whole deployment


def positive_cell(
    text: str, origin: str, line: int, column: str, allow_inf: bool = False, maximum: float | None = None
) -> float:
    if allow_inf and text.strip().lower() in ("inf", "infinity"):
        return math.inf
    high = maximum if maximum is not None else (MAX_SECONDS if column.endswith("_s") else MAX_RATE)
    allowed = f"a number > 0 and at most {high:g}" + (" or inf" if allow_inf else "")
    try:
        return check_number(text, "", minimum=0.0, maximum=high)
    except OptionError:
        raise bad_cell(origin, line, column, text, allowed) from None


def count_cell(text: str, origin: str, line: int, column: str) -> int:
    try:
        return check_count(text, "")
    except OptionError:
        raise bad_cell(origin, line, column, text, f"a whole number >= 1 and at most {MAX_COUNT}") from None


def zero_count_cell(text: str, origin: str, line: int, column: str) -> int:
    """A whole number >= 0 (a count that may be zero)."""
    return 0 if text.strip() in ("0", "0.0") else count_cell(text, origin, line, column)


def hit_rate_cell(text: str, origin: str, line: int) -> float | None:
    """The prefix-cache hit rate in [0, 1), or None for an empty cell."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value < 1.0:
        raise bad_cell(origin, line, "prefix_hit_rate", text, "a share in [0, 1)")
    return value
