"""Run every benchmark in this folder with one command, and say how each went (prints; asserts nothing).

    python benchmarks/run_all.py            # every benchmark, in its full form
    python benchmarks/run_all.py --quick    # each in its short form (skips those with none)
    python benchmarks/run_all.py --only bench_simulate --only refusals
    python benchmarks/run_all.py --list     # the benchmarks and the command each runs

Each benchmark runs as its own process from the repository root (``roofline`` importable from the
tree, installed or not), its output passed through under a header, and a table at the end gives
each one's wall time and exit status.  A new script in ``benchmarks/`` is picked up by itself (run
with no arguments); give it a line in :data:`BENCHMARKS` to set its quick form.  ``device_gpu.sh``
needs a GPU machine and is not run here (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: name -> (arguments of the full run, arguments of the quick run or None: not run with --quick).
BENCHMARKS: dict[str, tuple[list[str], list[str] | None]] = {
    "bench": ([], ["--quick"]),
    "bench_simulate": ([], ["--requests", "10000"]),
    "refusals": ([], []),
    "calibration_figures": ([], None),
    "kernel_families": ([], None),
}


def discovered() -> dict[str, tuple[list[str], list[str] | None]]:
    """:data:`BENCHMARKS`, then any other script here (no arguments in either form; ``_*.py`` are helpers)."""
    found = dict(BENCHMARKS)
    for path in sorted(HERE.glob("*.py")):
        if path.name != Path(__file__).name and not path.name.startswith("_"):
            found.setdefault(path.stem, ([], []))
    return {name: args for name, args in found.items() if (HERE / f"{name}.py").is_file()}


def command(name: str, args: list[str]) -> list[str]:
    """The command line that runs one benchmark."""
    return [sys.executable, str(HERE / f"{name}.py"), *args]


def run(name: str, args: list[str]) -> tuple[float, int]:
    """Run one benchmark from the repository root; (wall seconds, exit status)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    print(
        f"\n=== {name}: {' '.join(Path(a).name if i < 2 else a for i, a in enumerate(command(name, args)))}", flush=True
    )
    start = time.perf_counter()
    status = subprocess.run(command(name, args), cwd=REPO, env=env, check=False).returncode
    return time.perf_counter() - start, status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each benchmark's short form")
    parser.add_argument("--only", action="append", default=[], help="run only this benchmark (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and their commands")
    options = parser.parse_args()
    table = discovered()
    unknown = [name for name in options.only if name not in table]
    if unknown:
        parser.error(f"--only: unknown benchmark {unknown[0]!r}; allowed: {', '.join(table)}")
    chosen = {n: a for n, a in table.items() if not options.only or n in options.only}
    if options.list:
        for name, (full, quick) in chosen.items():
            short = "not run" if quick is None else " ".join(["python", f"benchmarks/{name}.py", *quick])
            print(f"{name}: python benchmarks/{name}.py {' '.join(full)}".rstrip() + f"  (--quick: {short})")
        return 0
    results = []
    for name, (full, quick) in chosen.items():
        args = quick if options.quick else full
        if args is None:
            results.append((name, None, None))
            continue
        seconds, status = run(name, args)
        results.append((name, seconds, status))
    print("\n=== summary")
    for name, seconds, status in results:
        print(f"{name:22s} " + ("skipped (no quick form)" if seconds is None else f"{seconds:8.1f} s  exit {status}"))
    return 1 if any(status not in (None, 0) for _, _, status in results) else 0


if __name__ == "__main__":
    sys.exit(main())
