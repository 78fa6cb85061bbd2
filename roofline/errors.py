"""Errors for bad input: each carries one line that says what is wrong and where."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class RooflineError(Exception):
    """Bad input or an impossible configuration; the CLI prints it on one line, exit 2."""


class SpecError(RooflineError):
    """A hardware or model spec that cannot be found, parsed or validated."""


def nearest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The closest names to ``name`` among ``choices`` (case-insensitive, best first)."""
    options = sorted(set(choices))
    lowered = {c.lower(): c for c in options}
    query = name.lower()
    prefixed = [c for c in options if c.lower().startswith(query)] if query else []
    close = [lowered[c] for c in difflib.get_close_matches(query, list(lowered), n=n, cutoff=0.4)]
    out = prefixed + [c for c in close if c not in prefixed]
    return out[:n]


def unknown_name_message(kind: str, name: str, choices: Iterable[str], hint: str) -> str:
    """'unknown hardware 'h10'; did you mean: h100-sxm, h200? (see: roofline hardware list)'."""
    options = list(choices)
    close = nearest(name, options)
    suggestion = f"; did you mean: {', '.join(close)}?" if close else ""
    return f"unknown {kind} {name!r}{suggestion} (see: {hint})"
