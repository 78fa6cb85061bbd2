"""Exact shortcuts for the step model's arithmetic: operations that are identities are skipped.

A term that is exactly zero for a whole call (no collectives at tp = 1, no recurrent state,
no engine, no prefill in a decode step) or a factor that is exactly one (pp = 1, a one-stage
share) leaves its operand unchanged bit for bit (IEEE 754: x + 0 = x for x ≠ −0, 1·x = x,
max(x, 0) = x for x ≥ 0), so the step model may return the operand itself instead of a new
array of the same values.  Each shortcut applies only where the result would have the
operand's dtype (float64) and shape, so callers see the same numbers, shapes and dtypes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from roofline.model.memory import Number

F64 = np.dtype(np.float64)


def _shape(x: ArrayLike) -> tuple[int, ...]:
    return x.shape if isinstance(x, np.ndarray | np.generic) else np.shape(x)


def fits_into(inner: tuple[int, ...], outer: tuple[int, ...]) -> bool:
    """Whether an array of shape ``inner`` broadcasts against ``outer`` without widening it."""
    if inner == outer or not inner:
        return True
    return len(inner) <= len(outer) and all(i in (1, o) for i, o in zip(inner[::-1], outer[::-1], strict=False))


def _same_float_shape(a: ArrayLike, b: ArrayLike) -> bool:
    """Whether a ⊕ b would be float64 with a's shape (b broadcasts into a)."""
    return getattr(a, "dtype", None) == F64 and fits_into(_shape(b), _shape(a))


def all_zero(x: ArrayLike) -> bool:
    """Whether every element of ``x`` is zero (NaN counts as non-zero)."""
    return x == 0.0 if isinstance(x, float | int) else np.count_nonzero(x) == 0


def plus(a: Number, b: ArrayLike) -> Number:
    """a + b; ``a`` itself where b is all zero and does not widen a (a + 0 = a)."""
    if _same_float_shape(a, b) and all_zero(b):
        return a
    return np.add(a, b)


def times(k: ArrayLike, x: Number) -> Number:
    """k·x; ``x`` itself where k is all one and does not widen x (1·x = x)."""
    one = k == 1.0 if isinstance(k, float | int) else np.count_nonzero(np.not_equal(k, 1.0)) == 0
    if one and _same_float_shape(x, k):
        return x
    return k * x


#: Largest value :func:`nonnegative_finite` accepts: a sum of a few such values stays finite.
BOUNDED = 1e300


def nonnegative_finite(x: ArrayLike) -> bool:
    """Whether every element of ``x`` is in [0, 1e300] (so sums of a few stay finite; two reductions)."""
    x = np.asarray(x)
    return x.size == 0 or (
        bool(np.minimum.reduce(x, axis=None) >= 0.0) and bool(np.maximum.reduce(x, axis=None) <= BOUNDED)
    )


def zeros_shaped(*like: ArrayLike) -> Number:
    """A float64 zero with the broadcast shape of ``like``: a read-only view (no memory per element),
    or a numpy scalar for scalar inputs (what a ufunc of scalars returns)."""
    shape = np.broadcast_shapes(*(_shape(v) for v in like)) if len(like) > 1 else _shape(like[0])
    return np.broadcast_to(np.float64(0.0), shape) if shape else np.float64(0.0)
