"""JSON from untrusted files: bounded depth and size, no NaN or infinities, no huge integers.

:func:`load_json` parses text (JSON, or JSON Lines with ``lines=True``) and walks the result
once without recursion (:func:`check_tree`): nesting past :data:`MAX_DEPTH`, more than
:data:`MAX_NODES` values, ``NaN``/``Infinity``, integers of more than :data:`MAX_INT_DIGITS`
digits, non-text keys and duplicate keys are refused with one line naming the file and the
dotted field.  Read the text with :func:`roofline.core.files.read_input_text` first.
"""

from __future__ import annotations

import json
import math
from typing import Any

from roofline.core.errors import RooflineError, shown

#: Deepest nesting of objects and arrays accepted (real configs and results: under 8 levels).
MAX_DEPTH = 32
#: Most values (keys, scalars, arrays) in one file.
MAX_NODES = 2_000_000
#: Most objects ({...}) in one file: each costs a few hundred bytes parsed, so this bounds memory.
MAX_OBJECTS = 100_000
#: Longest integer literal read as a number; longer ones are refused where they are used.
MAX_INT_DIGITS = 30


class HugeInteger(str):
    """An integer literal of more than MAX_INT_DIGITS digits, kept as text so nothing overflows."""

    def __repr__(self) -> str:
        return f"<a {len(self.lstrip('-'))}-digit integer>"


def _parse_int(text: str) -> int | HugeInteger:
    return int(text) if len(text) <= MAX_INT_DIGITS else HugeInteger(text)


class _DuplicateKey(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _parse(text: str, origin: str, error: type[RooflineError], line: int | None = None) -> Any:
    where = f"line {line}" if line is not None else "line {lineno}"
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise error(f"{origin}: malformed JSON at {where.format(lineno=exc.lineno)}: {exc.msg}") from None
    except RecursionError:
        raise error(f"{origin}: JSON nested deeper than {MAX_DEPTH} levels") from None
    except _DuplicateKey as exc:
        raise error(f"{origin}: malformed JSON: duplicate key {shown(exc.args[0])}") from None
    except (ValueError, OverflowError) as exc:
        raise error(f"{origin}: malformed JSON: {str(exc).splitlines()[0][:80]}") from None


def _check_size(text: str, origin: str, error: type[RooflineError], max_nodes: int) -> None:
    """Refuse, before parsing, text with more objects or values than the limits (braces and commas
    counted, those inside strings too: an upper bound found in one fast pass)."""
    objects = text.count("{")
    if objects > MAX_OBJECTS:
        raise error(f"{origin}: more than {MAX_OBJECTS:,} JSON objects (about {objects:,}); split the file")
    values = text.count(",") + text.count("\n") + 1
    if values > max_nodes:
        raise error(f"{origin}: more than {max_nodes:,} JSON values (about {values:,}); split the file")


def load_json(
    text: str,
    origin: str,
    error: type[RooflineError] = RooflineError,
    lines: bool = False,
    finite: bool = True,
    max_nodes: int = MAX_NODES,
) -> Any:
    """The value of JSON ``text`` (with ``lines``: one document, else a list of one per non-empty
    line), checked by :func:`check_tree`; every problem is one ``error`` line naming ``origin``."""
    if not text.strip():
        raise error(f"{origin}: empty file (expected JSON)")
    _check_size(text, origin, error, max_nodes)
    try:
        data = _parse(text, origin, error)
    except RooflineError:
        if not lines or "\n" not in text.strip():
            raise
        data = [_parse(part, origin, error, n) for n, part in enumerate(text.splitlines(), start=1) if part.strip()]
    check_tree(data, origin, error, finite, max_nodes)
    return data


def check_tree(
    data: Any,
    origin: str,
    error: type[RooflineError] = RooflineError,
    finite: bool = True,
    max_nodes: int = MAX_NODES,
) -> None:
    """Refuse deep nesting, more than ``max_nodes`` values, non-text keys, huge integers and (``finite``)
    NaN or infinities; iterative (untrusted depth never recurses); names the dotted field of the first problem."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    count = 0
    while stack:
        value, where, depth = stack.pop()
        count += 1
        field = where or "(top level)"
        if depth > MAX_DEPTH or count > max_nodes:
            deep = depth > MAX_DEPTH
            problem = f"nested deeper than {MAX_DEPTH} levels" if deep else f"more than {max_nodes:,} values"
            raise error(f"{origin}: field {field!r}: {problem}")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise error(f"{origin}: key {shown(key)} under {field!r} must be text")
                stack.append((item, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, HugeInteger) or (isinstance(value, int) and value.bit_length() > 100):
            raise error(f"{origin}: field {field!r}: number out of range (got {shown(value)})")
        elif finite and isinstance(value, float) and not math.isfinite(value):
            raise error(f"{origin}: field {field!r}: must be a finite number (got {value})")
