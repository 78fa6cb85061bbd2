"""Checks for one input number, flag or name: type, finiteness, sign, range and unit dimension.

The one place where a value entering roofline (a spec field, a config.json key, a CSV cell, a
Python argument, a CLI option) is checked before any estimator sees it.  Each check returns
the clean value or raises :class:`~roofline.core.errors.OptionError` whose one line names the
field (``name``; empty inside a spec, whose loader adds the file and the field), shows the
value shortened and says what is allowed.  Estimators stay pure and assume valid input.
"""

from __future__ import annotations

import math

import numpy as np

from roofline.core.errors import OptionError, shown
from roofline.core.units import Dimension, parse_quantity

#: Largest count (layers, heads, chips, tokens ...) accepted: a C int, so numpy never overflows.
MAX_COUNT = 2**31 - 1
#: Largest magnitude a dimensioned number may have: beyond any real system, far from overflow.
MAX_VALUE: dict[str, float] = {
    "bytes": 1e21,  # a zettabyte
    "bytes/s": 1e21,
    "FLOP/s": 1e24,
    "seconds": 1e7,  # about four months
    "dimensionless": 1e15,
}
#: Longest name and longest free text (``source``) in a spec, in characters.
MAX_NAME_CHARS = 200
MAX_TEXT_CHARS = 20_000


def _fail(name: str, message: str) -> OptionError:
    return OptionError(f"{name}: {message}" if name else message, parameters=(name,) if name.isidentifier() else ())


def _plain(x: float) -> str:
    """2147483647 for a whole number, else 1e+21 style."""
    if isinstance(x, int):
        return str(x)
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def interval(low: float | None, high: float | None, open_low: bool = False) -> str:
    """'(0, 3600]' or '[1, 2147483647]': the allowed range in a message."""
    left = "-inf" if low is None else _plain(low)
    right = "inf" if high is None else _plain(high)
    return f"{'(' if open_low or low is None else '['}{left}, {right}{')' if high is None else ']'}"


def check_count(value: object, name: str = "value", *, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """A whole number in [minimum, maximum]: no booleans, fractions, NaN or text that is not one."""
    allowed = f"must be a whole number in {interval(minimum, maximum)}"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _fail(name, f"{allowed} (got {shown(value)})")
    number: float | int = value if isinstance(value, int) else 0.0
    if not isinstance(value, int):
        try:
            number = parse_quantity(value, "dimensionless", name="")
        except OptionError:
            raise _fail(name, f"{allowed} (got {shown(value)})") from None
        if not float(number).is_integer():
            raise _fail(name, f"{allowed}, not a fraction (got {shown(value)})")
    if not minimum <= number <= maximum:
        raise _fail(name, f"{allowed} (got {shown(value)})")
    return int(number)


def check_number(
    value: object,
    name: str = "value",
    *,
    dimension: Dimension = "dimensionless",
    minimum: float | None = 0.0,
    maximum: float | None = None,
    open_low: bool = True,
) -> float:
    """A finite number of ``dimension`` (units checked) in the range; default ``(0, MAX_VALUE]``."""
    high = MAX_VALUE[dimension] if maximum is None else maximum
    what = "a number" if dimension == "dimensionless" else f"{dimension}"
    allowed = f"must be {what} in {interval(minimum, high, open_low)}"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _fail(name, f"{allowed} (got {shown(value)})")
    try:
        number = parse_quantity(value, dimension, name=name)
    except OptionError:
        if dimension != "dimensionless":
            raise
        raise _fail(name, f"{allowed} (got {shown(value)})") from None
    below = minimum is not None and (number <= minimum if open_low else number < minimum)
    if below or number > high:
        raise _fail(name, f"{allowed} (got {shown(value)})")
    return number


def check_probability(value: object, name: str = "value") -> float:
    """A finite fraction in [0, 1]."""
    return check_number(value, name, minimum=0.0, maximum=1.0, open_low=False)


def check_flag(value: object, name: str = "value") -> bool:
    """A real boolean (YAML true/false): text such as 'no' or a number is refused, not guessed."""
    if not isinstance(value, bool):
        raise _fail(name, f"must be true or false (got {shown(value)})")
    return value


def check_name(value: object, name: str = "name", *, max_chars: int = MAX_NAME_CHARS) -> str:
    """Non-empty one-line text of at most ``max_chars`` characters."""
    if not isinstance(value, str):
        raise _fail(name, f"must be text (got {shown(value)})")
    if not value.strip():
        raise _fail(name, "must not be empty")
    if len(value) > max_chars:
        raise _fail(name, f"must be at most {max_chars} characters (got {len(value)})")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise _fail(name, f"must be one line without control characters (got {shown(value)})")
    return value


def check_text(value: object, name: str = "value", *, max_chars: int = MAX_TEXT_CHARS) -> str:
    """Text (possibly empty) of at most ``max_chars`` characters."""
    if not isinstance(value, str):
        raise _fail(name, f"must be text (got {shown(value)})")
    if len(value) > max_chars:
        raise _fail(name, f"must be at most {max_chars} characters (got {len(value)})")
    return value


def is_finite_number(value: object) -> bool:
    """True for an int or float that is finite (and not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_array(
    value: object,
    name: str,
    *,
    minimum: float | None = 0.0,
    maximum: float | None = float(MAX_COUNT),
    open_low: bool = True,
    whole: bool = False,
    max_ndim: int = 8,
) -> np.ndarray:
    """``value`` (a number, a list or an array) as a float array: real numbers only (no text, complex,
    booleans or None), finite, in the range, whole numbers when ``whole``; one OptionError line
    naming ``name`` otherwise.  Accepts what the estimators broadcast over."""
    what = "whole numbers" if whole else "numbers"
    allowed = f"must be {what} in {interval(minimum, maximum, open_low)}"
    if value is None or isinstance(value, (bool, str, bytes, complex)):
        raise _fail(name, f"{allowed} (got {shown(value)})")
    try:
        raw = np.asarray(value)
    except (ValueError, TypeError):  # ragged nested lists
        raise _fail(name, f"{allowed}, as a number or a rectangular array (got {shown(value)})") from None
    if raw.dtype.kind not in "iuf":
        kind = {"b": "booleans", "c": "complex numbers", "U": "text", "S": "bytes", "O": "objects"}.get(
            raw.dtype.kind, f"dtype {raw.dtype}"
        )
        raise _fail(name, f"{allowed}, not {kind} (got {shown(value)})")
    if raw.ndim > max_ndim:
        raise _fail(name, f"must have at most {max_ndim} dimensions (got {raw.ndim})")
    if raw.size == 0:
        raise _fail(name, f"{allowed}; got an empty array")
    try:
        arr = raw.astype(float)
    except OverflowError:
        raise _fail(name, f"{allowed} (got {shown(value)})") from None
    bad = ~np.isfinite(arr)
    if minimum is not None:
        bad |= (arr <= minimum) if open_low else (arr < minimum)
    if maximum is not None:
        bad |= arr > maximum
    if whole:
        bad |= np.isfinite(arr) & (arr != np.round(arr))
    if np.any(bad):
        first = arr.ravel()[int(np.argmax(bad.ravel()))]
        raise _fail(name, f"{allowed} (got {_plain(float(first))}{'' if arr.ndim == 0 else ' in ' + shown(value)})")
    return arr


def check_scalar(value: object, name: str, **limits: object) -> float:
    """One real number (not an array) checked as :func:`check_array`; a 2-D ``mfu`` is refused here."""
    arr = check_array(value, name, **limits)  # type: ignore[arg-type]
    if arr.ndim != 0 and arr.size != 1:
        raise _fail(name, f"must be one number, not an array of shape {arr.shape}")
    return float(arr.ravel()[0])


def check_broadcast(**arrays: object) -> tuple[int, ...]:
    """The common shape of the named arrays; one OptionError line naming the mismatched ones."""
    shapes = {name: np.shape(value) for name, value in arrays.items()}
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        listed_shapes = ", ".join(f"{n} {s}" for n, s in shapes.items() if s)
        raise OptionError(
            f"{', '.join(n for n, s in shapes.items() if s)}: array shapes do not broadcast together "
            f"({listed_shapes}); give equal shapes, scalars, or shapes numpy can broadcast",
            parameters=tuple(n for n, s in shapes.items() if s),
        ) from None


def check_instance(value: object, name: str, kind: type, hint: str) -> None:
    """``value`` must be a ``kind`` (e.g. a ModelSpec); ``hint`` says how to make one."""
    if not isinstance(value, kind):
        raise _fail(name, f"must be a {kind.__name__} ({hint}), not {type(value).__name__} {shown(value)}")
