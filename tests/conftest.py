"""Shared test helpers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m roofline ARGS`` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "roofline", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=120,
    )


def run_json(*args: str, cwd: Path | None = None) -> object:
    """Run a CLI command with --json and parse its output (asserting exit 0)."""
    proc = run_cli(*args, "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def cli():
    return run_cli
