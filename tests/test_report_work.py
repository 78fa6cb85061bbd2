"""The report's work spread over worker processes gives what a serial run gives, and the values kept on a
frozen model are its own (computed once, recomputed for a changed copy or a mutable object)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from roofline.core.memo import derived
from roofline.model.params import param_counts
from roofline.specs import load_model
from roofline.views.report import Scenario
from roofline.views.report import work as report_work

TWO_MODELS = Scenario(
    models=("llama-2-7b", "mixtral-8x7b"),
    hardware=("h100-sxm-cal",),
    weights=("bf16",),
    batch=(1, 16, 64),
    chips=(1, 2),
)


@dataclasses.dataclass(frozen=True)
class _Frozen:
    n: int


@dataclasses.dataclass
class _Mutable:
    n: int


def test_derived_is_computed_once_per_frozen_object() -> None:
    calls = []

    def square(obj: _Frozen | _Mutable) -> int:
        calls.append(obj.n)
        return obj.n**2

    frozen = _Frozen(3)
    assert derived(frozen, "sq", lambda: square(frozen)) == 9
    assert derived(frozen, "sq", lambda: square(frozen)) == 9
    assert calls == [3]  # kept on the object
    changed = dataclasses.replace(frozen, n=4)
    assert derived(changed, "sq", lambda: square(changed)) == 16  # a new object: its own value
    mutable = _Mutable(5)
    assert derived(mutable, "sq", lambda: square(mutable)) == 25
    mutable.n = 6
    assert derived(mutable, "sq", lambda: square(mutable)) == 36  # a mutable object is never kept
    assert calls == [3, 4, 5, 6]


def test_param_counts_of_a_changed_model_are_its_own() -> None:
    # LLaMA-2-7B: 32 layers x (4 x 4096^2 attention + 3 x 4096 x 11008 MLP) = 6.476e9 matrix weights.
    model = load_model("llama-2-7b")
    assert param_counts(model).total == pytest.approx(6.738e9, rel=1e-3)  # + 2 x 32000 x 4096 embeddings, norms
    half = dataclasses.replace(model, num_layers=16)
    layer = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096
    assert param_counts(model).total - param_counts(half).total == pytest.approx(16 * layer)


@pytest.mark.slow
def test_pool_and_serial_runs_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    if report_work.workers(4) < 2:
        pytest.skip("one core: the pool path is the serial one")
    refs = TWO_MODELS.hardware_refs()
    pooled, _ = report_work.all_models(TWO_MODELS, refs)
    monkeypatch.setattr(report_work, "MAX_WORKERS", 1)
    serial, extra = report_work.all_models(TWO_MODELS, refs, lambda runs: list(runs))
    assert extra == ["llama-2-7b", "mixtral-8x7b"]  # the scenario's order, whatever finished first
    assert list(pooled.runs) == list(serial.runs) == list(TWO_MODELS.models)
    for name in TWO_MODELS.models:
        np.testing.assert_array_equal(pooled.runs[name].full_rate, serial.runs[name].full_rate)
        np.testing.assert_array_equal(pooled.curves[name].ttft_p99_s, serial.curves[name].ttft_p99_s)
        assert pooled.ops[name] is not None and serial.ops[name] is not None
        assert (pooled.ops[name].chips, pooled.ops[name].batch) == (serial.ops[name].chips, serial.ops[name].batch)
