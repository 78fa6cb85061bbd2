"""Derived values kept on the frozen object they derive from (a model's layer counts, its parameter
counts): computed once per object, never shared between objects, and recomputed for anything mutable."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


def derived(obj: object, name: str, compute: Callable[[], _T]) -> _T:
    """``compute()``, kept in ``obj``'s ``__dict__`` under ``name`` when ``obj`` is a frozen dataclass
    (its fields cannot change, and ``dataclasses.replace`` builds a new object without the kept value)."""
    params = getattr(type(obj), "__dataclass_params__", None)
    cache = getattr(obj, "__dict__", None)
    if params is None or not params.frozen or cache is None:
        return compute()
    key = f"_derived_{name}"
    if key not in cache:
        cache[key] = compute()
    return cache[key]
