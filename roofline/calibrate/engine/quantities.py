"""The measured quantities the fit and ``validate`` compare: the row's columns for each, the prediction's key.

* ``ttft_s``: mean ``ttft_s`` (else ``ttft_p50_s``) vs the predicted TTFT
* ``tpot_s``: mean ``tpot_s`` (else ``tpot_p50_s``, else ``itl_s``) vs the predicted TPOT
* ``e2e_s``: mean ``e2e_s`` (else ``e2e_p50_s``) vs the predicted end-to-end latency (simulated rows)
* ``throughput``: ``output_tokens_per_s`` of the whole deployment vs the predicted one
"""

from __future__ import annotations

from roofline.calibrate.engine.schema import E2ERow

#: quantity -> (measured columns in order of preference, predicted key).
QUANTITIES: dict[str, tuple[tuple[str, ...], str]] = {
    "ttft_s": (("ttft_s", "ttft_p50_s"), "ttft_s"),
    "tpot_s": (("tpot_s", "tpot_p50_s", "itl_s"), "tpot_s"),
    "e2e_s": (("e2e_s", "e2e_p50_s"), "e2e_s"),
    "throughput": (("output_tokens_per_s",), "output_tokens_per_s"),
}


def measured_value(row: E2ERow, quantity: str) -> tuple[float, str] | None:
    """(value, column) the row measured for ``quantity``, or None."""
    for column in QUANTITIES[quantity][0]:
        value = getattr(row, column)
        if value is not None:
            return float(value), column
    return None
