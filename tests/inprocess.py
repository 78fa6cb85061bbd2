"""Run the real ``roofline`` entry point in-process (fast enough for fuzzing) and check refusals."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from typer.testing import CliRunner

from roofline.views.cli import main


@dataclass(frozen=True)
class Run:
    """Exit status and captured streams of one in-process ``roofline`` invocation."""

    code: int
    stdout: str
    stderr: str


def run_roofline(*args: str) -> Run:
    """``roofline ARGS`` through :func:`roofline.views.cli.main` (its exit-2 handling included).

    An exception that main does not turn into an exit status propagates: a traceback fails the test.
    """
    runner = CliRunner()
    saved = sys.argv
    with runner.isolation() as (out, err, _):
        sys.argv = ["roofline", *args]
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = saved
            sys.stdout.flush()
            sys.stderr.flush()
        return Run(code, out.getvalue().decode(errors="replace"), err.getvalue().decode(errors="replace"))


def assert_one_line(message: str, *needles: str, max_chars: int = 700) -> None:
    """A refusal: one short line containing every needle, no traceback."""
    text = message.strip()
    assert text, "empty message"
    assert "\n" not in text, f"more than one line: {text!r}"
    assert "Traceback" not in text
    assert len(text) <= max_chars, f"{len(text)} characters: {text[:200]!r}..."
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"


def assert_refused(run: Run, *needles: str) -> None:
    """Exit status 2, one line on stderr naming every needle, nothing on stdout."""
    assert run.code == 2, (run.code, run.stdout[-300:], run.stderr[-300:])
    assert not run.stdout.strip(), run.stdout[:300]
    assert_one_line(run.stderr, *needles)
