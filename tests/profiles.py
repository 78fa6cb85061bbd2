"""Hypothesis example counts relative to the loaded profile (``dev`` quick, ``ci`` full; see conftest.py)."""

from __future__ import annotations

from hypothesis import settings


def at_most(n: int) -> settings:
    """The profile's settings with at most ``n`` examples: for tests whose every example is costly."""
    return settings(max_examples=min(n, settings().max_examples))
