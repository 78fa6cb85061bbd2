"""Every script in examples/ runs to completion and prints its headline numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

EXAMPLES = sorted((REPO / "examples").glob("*.py"))
#: A line each example must print (its headline result).
EXPECTED = {
    "chat_service_plan.py": "binding constraint:",
    "v5e_vs_h100_cost.py": "cost-latency frontier:",
    # 0.9 x 8 x 16 GiB = 123.7 GB usable; (123.7 - 26.03 GB of weights) / 3.36 GB of int8 KV at 8192 tokens
    # = 29.1, so 16 is the largest power-of-two batch (bf16 KV: 8, from 14.5).
    "int8_kv_frontier.py": "int8 KV: largest batch that fits 16",
}


def test_every_example_is_checked():
    assert {p.name for p in EXAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path):
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert EXPECTED[script.name] in proc.stdout
