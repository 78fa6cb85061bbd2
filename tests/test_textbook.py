"""Every answer-key case of the book passes, and the key reports what it must."""

from __future__ import annotations

import pytest

from roofline.answer_key import book as textbook

CASES = textbook.all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_passes(case):
    row = textbook.check(case)
    assert row.passed, f"{case.id}: book {case.expected}, computed {row.computed} ({row.rel_error:.2%})"


def test_key_covers_the_chapter():
    ids = {c.id for c in CASES}
    for needed in (
        "crit-batch-v5e-bf16",
        "pop-quiz-30b-b4",
        "pop-quiz-30b-b256",
        "llama2-13b-kv-8192",
        "llama2-13b-table1-step-b16",
        "llama2-13b-table2-tps-b240",
        "p1-params",
        "p2-max-batch",
        "p3-weight-load",
        "p5-crit-batch",
        "mp-limit-generation",
        "ici-latency-bound-8way",
    ):
        assert needed in ids
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"


def test_a_wrong_value_fails():
    wrong = textbook.Case("x", "deliberately wrong", 100.0, lambda: 103.0, "u", tolerance=0.01)
    assert not textbook.check(wrong).passed


def test_book_discrepancy_is_checked_against_exact_value():
    h100 = next(c for c in CASES if c.id == "crit-batch-h100-bf16")
    row = textbook.check(h100)
    assert row.expected == 280 and row.exact == pytest.approx(295.2) and row.note
