"""Shared test helpers, the hypothesis profiles and the quick/full split of the suite.

``python -m pytest`` is the quick run (hypothesis profile ``dev``, tests marked ``slow`` left out);
``python -m pytest --full`` runs everything with profile ``ci`` (CI does this).  A test is ``slow`` when
it fits or validates whole profiles, or runs many CLI processes: mark it with ``@pytest.mark.slow``.
``HYPOTHESIS_PROFILE`` overrides the profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: Example counts per profile; tests whose examples are costly ask for a fraction with ``examples(n)``.
settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile(
    "dev", max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true", help="run the slow tests too, with hypothesis profile 'ci'")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: fits, validations and CLI-heavy tests left out of the quick run")
    full = config.getoption("--full")
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if full else "dev"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--full"):
        return
    quick = [item for item in items if item.get_closest_marker("slow") is None]
    if len(quick) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in quick])
        items[:] = quick


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
