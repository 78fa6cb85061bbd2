"""The step model's exact shortcuts (roofline.terms.exact) give the bits of the operations they skip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from roofline.specs import load_hardware, load_model
from roofline.terms import decode_work, step_terms
from roofline.terms.exact import fits_into, nonnegative_finite, plus, times, zeros_shaped
from roofline.terms.step import bound_code
from tests.profiles import at_most

# Non-negative values, zeros included (the shortcuts' promise excludes −0 only).
VALUES = st.one_of(st.just(0.0), st.floats(0.0, 1e30, allow_nan=False))
SHAPES = st.sampled_from([(), (1,), (3,), (2, 3), (1, 3), (2, 1)])


def bits(x) -> np.ndarray:
    return np.asarray(x, dtype=float).view(np.int64)


@at_most(60)
@given(
    SHAPES.flatmap(lambda s: hnp.arrays(float, s, elements=VALUES)),
    SHAPES.flatmap(lambda s: hnp.arrays(float, s, elements=st.sampled_from([0.0, 1.0, 2.5]))),
)
def test_plus_and_times_equal_the_operations_they_skip(a, b) -> None:
    if not fits_into(b.shape, a.shape) and np.broadcast_shapes(a.shape, b.shape) != a.shape:
        return
    for got, want in ((plus(a, b), np.add(a, b)), (times(b, a), b * a)):
        assert np.shape(got) == np.shape(want)
        assert np.array_equal(bits(got), bits(want))


def test_fits_into_is_numpys_broadcast_rule() -> None:
    shapes = [(), (1,), (3,), (2, 3), (1, 3), (2, 1), (4, 2, 3)]
    for inner in shapes:
        for outer in shapes:
            try:
                widened = np.broadcast_shapes(inner, outer) != outer
            except ValueError:
                widened = True
            assert fits_into(inner, outer) == (not widened), (inner, outer)


def test_nonnegative_finite_and_zeros() -> None:
    assert nonnegative_finite(np.array([0.0, 3.0])) and nonnegative_finite(np.zeros(0))
    assert not nonnegative_finite(np.array([1.0, np.inf])) and not nonnegative_finite(np.array([np.nan, 1.0]))
    assert not nonnegative_finite(np.array([-1e-300, 1.0]))
    z = zeros_shaped(np.ones((2, 1)), np.ones(3))
    assert z.shape == (2, 3) and not z.any() and not z.flags.writeable
    assert type(zeros_shaped(1.0, 2.0)) is np.float64


@given(
    hnp.arrays(float, (2, 3), elements=VALUES),
    hnp.arrays(float, (2, 3), elements=VALUES),
    hnp.arrays(float, (1, 3), elements=VALUES),
)
def test_bound_code_without_collectives_is_the_code_with_zero_exposed(compute, nbytes, local) -> None:
    # exposed = 0 ≤ local: never network; the shortcut (None) must give the same codes and shape
    assert np.array_equal(bound_code(compute, nbytes, None, local), bound_code(compute, nbytes, 0.0, local))
    assert np.array_equal(bound_code(compute, nbytes, 2.0 * local + 1.0, local), np.full((2, 3), 2, dtype=np.int8))


def test_no_collectives_means_the_bounds_are_the_prediction() -> None:
    # tp = 1: no collectives (the book's single chip); 13B on one H100 at batch 1..64, 1k..8k context.
    from roofline.deploy import deployment

    dep = deployment(load_model("llama-2-13b"), load_hardware("h100-sxm"), 1.0, tp=1)
    t = step_terms(dep, decode_work(np.arange(1.0, 65.0)[None, :], np.array([[1024.0], [8192.0]])))
    assert np.array_equal(t.lower_s, t.time_s) and np.array_equal(t.upper_s, t.time_s)
    assert not np.any(t.comms_exposed_s) and not np.any(t.pipeline_bubble_s)
    assert np.shape(t.comms_exposed_s) == np.shape(t.time_s) == (2, 64)
    assert not np.any(t.bound_code == 2)


def test_step_arrays_shared_by_a_shortcut_are_read_only_and_inputs_untouched() -> None:
    # pp = 1, one chip: no collectives, so the prediction and both bounds are one array; an in-place
    # edit of one must raise rather than change the others, and the caller's arrays stay writable.
    from roofline.deploy import deployment

    dep = deployment(load_model("llama-3-8b"), load_hardware("h100-sxm"), 1)
    batch = np.arange(1.0, 5.0)
    t = step_terms(dep, decode_work(batch, 1024.0))
    assert np.array_equal(t.time_s, t.lower_s) and np.array_equal(t.time_s, t.upper_s)
    before = t.lower_s.copy()
    for name in ("time_s", "lower_s", "upper_s", "local_s", "kv_time_s"):
        arr = getattr(t, name)
        with pytest.raises(ValueError, match="read-only"):
            arr *= 2.0
    assert np.array_equal(t.lower_s, before) and batch.flags.writeable
