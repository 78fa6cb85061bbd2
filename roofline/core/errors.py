"""Errors for bad input: each carries one line that says what is wrong and where.

Every error is a :class:`RooflineError`, which is also a ``ValueError`` (so ``except
ValueError`` keeps working).  Messages name the file or the parameter, the field, the value
(through :func:`shown`, never longer than a few dozen characters) and what is allowed.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Iterable

#: Characters of a bad value an error message shows at most.
SHOWN_CHARS = 40


class RooflineError(ValueError):
    """Bad input or an impossible configuration; the CLI prints it on one line, exit 2.

    ``parameters`` lists the Python parameter names the message mentions (``batch``,
    ``price_per_chip_hour``), so the CLI can show its own flags (``--batch``, ``--price``)
    while the Python API keeps naming the parameter.
    """

    def __init__(self, message: str, *, parameters: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.parameters = tuple(parameters)


class SpecError(RooflineError):
    """A hardware or model spec (YAML) or a config.json that cannot be found, parsed or validated."""


class OptionError(RooflineError):
    """A bad CLI option or Python argument; the message names the parameter (``parameters``)."""


class MeasurementError(RooflineError):
    """A measurement table (CSV) that cannot be read, or an impossible calibration request."""


class _ShortRepr(reprlib.Repr):
    """reprlib with small limits: cost bounded however large or deeply shared the value is."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple = 2, 3, 4, 4
        self.maxset = self.maxfrozenset = self.maxdeque = self.maxarray = 4
        self.maxstring, self.maxother = SHOWN_CHARS, SHOWN_CHARS

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:  # str() of a huge int is slow (and refused past 4300 digits)
            return f"<a {int(x.bit_length() * 0.30103) + 1}-digit integer>"
        return super().repr_int(x, level)

    def repr_str(self, x: str, level: int) -> str:
        return super().repr_str(x[: SHOWN_CHARS + 2], level) if len(x) > SHOWN_CHARS else repr(x)


_SHORT = _ShortRepr()


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """A repr of ``value`` for messages: at most ``limit`` characters, cheap for any input."""
    if type(value) is str and len(value) > limit:
        return repr(value[: limit - 5]) + "..."
    try:
        text = _SHORT.repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__}>"
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def listed(names: Iterable[object], limit: int = 8) -> str:
    """'a, b, c' for messages: the first ``limit`` names (each shortened), then 'and N more'."""
    items = list(names)
    head = ", ".join(str(n) if isinstance(n, str) and len(n) <= SHOWN_CHARS else shown(n) for n in items[:limit])
    return head + (f" and {len(items) - limit} more" if len(items) > limit else "")


def nearest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The closest names to ``name`` among ``choices`` (case-insensitive, best first)."""
    options = sorted(set(choices))
    lowered = {c.lower(): c for c in options}
    query = name.lower()[:100]
    prefixed = [c for c in options if c.lower().startswith(query)] if query else []
    close = [lowered[c] for c in difflib.get_close_matches(query, list(lowered), n=n, cutoff=0.4)]
    out = prefixed + [c for c in close if c not in prefixed]
    return out[:n]


def unknown_name_message(kind: str, name: str, choices: Iterable[str], hint: str) -> str:
    """'unknown hardware 'h10'; did you mean: h100-sxm, h200? (see: roofline hardware list)'."""
    options = list(choices)
    close = nearest(name, options)
    suggestion = f"; did you mean: {', '.join(close)}?" if close else ""
    return f"unknown {kind} {shown(name)}{suggestion} (see: {hint})"
