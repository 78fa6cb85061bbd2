"""Issue 28's harness: about 1,250 hostile inputs on every command and the Python API, classified.

    python benchmarks/boundaries.py                 # all cases, a table of counts (exit 1 if any is bad)
    python benchmarks/boundaries.py --only trace -v # cases whose group or label contains 'trace', each shown
    python benchmarks/boundaries.py --list          # the groups and their case counts

Each case (``benchmarks/boundary_cases.py``) runs ``roofline`` in a child forked from a process that
has already imported it (so a case costs its own work, not the import), in an empty folder with its
files, under a time limit.  Outcomes:

- ``refused``: exit 2 with one clear line (no traceback, < 700 characters, naming its needles);
- ``ok``: exit 0 where the case is valid, with no ``nan``/``inf`` in the output;
- ``hang`` (killed at its time limit), ``traceback`` (any other exit or a traceback),
  ``unsafe write`` (a device or FIFO no longer one), ``partial write`` (a refused case left a file),
  ``absurd`` (nan/inf at exit 0), ``formula cell`` (a CSV cell a spreadsheet would run),
  ``accepted bad`` (exit 0 where a refusal was expected), ``unclear`` (exit 2 but not one clear line),
  ``slow refusal`` (over 2 s of CPU or 500 MB).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import resource
import select
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from boundary_cases import DIR, FIFO, FIFO_READ, NULLDEV, Case, all_cases  # noqa: E402

GOOD = ("refused", "ok")
TIME_TARGET_S, MEMORY_TARGET_MB = 2.0, 500.0
NONFINITE = re.compile(r"(?<![\w.])-?(nan|inf|NaN|Infinity)(?![\w])")


def _setup(folder: Path, case: Case) -> list[threading.Thread]:
    readers = []
    for name, data in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if data == DIR:
            path.mkdir()
        elif data in (FIFO, FIFO_READ):
            os.mkfifo(path)
            if data == FIFO_READ:
                readers.append(_drain(path))
        elif data == NULLDEV:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        else:
            path.write_bytes(data if isinstance(data, bytes) else str(data).encode())
    return readers


def _drain(path: Path) -> threading.Thread:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def run() -> None:
        poller = select.poll()  # until a writer comes (a FIFO without one reads as end of file)
        poller.register(fd, select.POLLIN)
        poller.poll(150_000)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            while handle.read(65536):
                pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _child(case: Case, folder: Path) -> None:
    """In the forked child: run the case, exit 0 / 2 / 1 like the CLI would."""
    out = os.open(folder / ".stdout", os.O_WRONLY | os.O_CREAT, 0o600)
    err = os.open(folder / ".stderr", os.O_WRONLY | os.O_CREAT, 0o600)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.chdir(folder)
    os.environ.update(case.env)
    code = 1
    try:
        if case.python:
            code = _api(case.python)
        else:
            from roofline.views.cli import main

            sys.argv = ["roofline", *case.argv]
            main()
            code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - a traceback is what we count
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _api(code: str) -> int:
    import numpy as np

    import roofline as rl

    scope = {"rl": rl, "np": np, "m": rl.load_model("llama-3-8b"), "h": rl.load_hardware("h100-sxm")}
    try:
        result = eval(code, scope)  # noqa: S307 - our own snippets
    except rl.RooflineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    values = result.as_dict() if hasattr(result, "as_dict") else getattr(result, "__dict__", {})
    for key, value in dict(values).items():
        arr = np.asarray(value) if not isinstance(value, dict) else np.asarray(0.0)
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            print(f"{key}: nan", flush=True)
    print("ok")
    return 0


def _snapshot(folder: Path) -> dict[str, int]:
    out = {}
    for path in folder.rglob("*"):
        if path.name in (".stdout", ".stderr"):
            continue
        try:
            out[str(path.relative_to(folder))] = path.lstat().st_mode
        except OSError:
            pass
    return out


def run_case(case: Case) -> tuple[str, str, float, float]:
    """(outcome, detail, CPU seconds, peak MB) of one case."""
    folder = Path(tempfile.mkdtemp(prefix="bnd-"))
    home = case.env.get("ROOFLINE_HOME")
    if home and not home.startswith("/"):
        case = Case(**{**case.__dict__, "env": {**case.env, "ROOFLINE_HOME": str(folder / home)}})
    try:
        readers = _setup(folder, case)
        before = _snapshot(folder)
        pid = os.fork()
        if pid == 0:
            _child(case, folder)
        deadline = time.monotonic() + case.timeout_s
        status, usage = 0, None
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                _, status, usage = os.wait4(pid, 0)
                return "hang", f"killed after {case.timeout_s:g} s", case.timeout_s, 0.0
            time.sleep(0.02)
        for thread in readers:
            thread.join(timeout=2)
        cpu = usage.ru_utime + usage.ru_stime
        peak_mb = usage.ru_maxrss / 1024
        code = os.waitstatus_to_exitcode(status)
        stdout = (folder / ".stdout").read_text(errors="replace")
        stderr = (folder / ".stderr").read_text(errors="replace")
        outcome, detail = classify(case, folder, before, code, stdout, stderr)
        if outcome == "refused" and (cpu > TIME_TARGET_S or peak_mb > MEMORY_TARGET_MB):
            outcome, detail = "slow refusal", f"{cpu:.1f} s CPU, {peak_mb:.0f} MB: {detail}"
        return outcome, detail, cpu, peak_mb
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def classify(case: Case, folder: Path, before: dict[str, int], code: int, stdout: str, stderr: str) -> tuple[str, str]:
    text = stderr.strip()
    last = text.splitlines()[-1][:200] if text else ""
    for name in case.nodes:
        mode = (folder / name).lstat().st_mode if (folder / name).exists() else 0
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            return "unsafe write", f"{name} replaced: {last}"
    if "Traceback" in text or code not in (0, 2):
        return "traceback", last or f"exit {code}"
    if case.csv_out and code == 0 and (folder / case.csv_out).is_file():
        with open(folder / case.csv_out, newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    if cell.startswith(("=", "+", "-", "@", "\t", "\r")) and not _number(cell):
                        return "formula cell", cell[:40]
    if code == 2:
        after = _snapshot(folder)
        new = sorted(set(after) - set(before))
        if new:
            return "partial write", f"left {', '.join(new)[:80]}: {last}"
        if "\n" in text or len(text) > 700 or not text.startswith("error:"):
            return "unclear", text.replace("\n", " | ")[:200]
        missing = [n for n in case.needles if n not in text]
        if missing:
            return "unclear", f"does not name {missing}: {last}"
        return ("refused" if case.expect != "ok" else "refused valid"), last
    if NONFINITE.search(stdout):
        return "absurd", NONFINITE.search(stdout).group(0) + " in output"
    if case.expect == "refuse":
        return "accepted bad", stdout.strip().splitlines()[0][:120] if stdout.strip() else "exit 0"
    return "ok", ""


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="run cases whose group or label contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case, not only the bad ones")
    parser.add_argument("--list", action="store_true", help="list the groups and exit")
    args = parser.parse_args()
    cases = [c for c in all_cases() if args.only.lower() in f"{c.group} {c.label}".lower()]
    if args.list:
        for group, n in Counter(c.group for c in cases).items():
            print(f"{n:5d}  {group}")
        print(f"{len(cases):5d}  in all")
        return 0
    import numpy  # noqa: F401  (imported once, shared by every forked child)

    import roofline
    from roofline.views.cli import register_commands

    register_commands()
    roofline.load_model("llama-3-8b")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    worst: list[tuple[str, str, str, str]] = []
    cpu_max = mem_max = 0.0
    start = time.monotonic()
    for case in cases:
        outcome, detail, cpu, peak = run_case(case)
        if outcome == "refused":
            cpu_max, mem_max = max(cpu_max, cpu), max(mem_max, peak)
        counts[case.group.split(":")[0].split(" (")[0]][outcome] += 1
        if outcome not in GOOD or args.verbose:
            print(f"{outcome:14} {case.group} | {case.label} | {detail}", flush=True)
            if outcome not in GOOD:
                worst.append((outcome, case.group, case.label, detail))
    total = Counter()
    print(f"\n{'group':24}" + "".join(f"{k:>9}" for k in ("cases", "refused", "ok", "bad")))
    for group, c in counts.items():
        bad = sum(v for k, v in c.items() if k not in GOOD)
        total.update(c)
        print(f"{group:24}{sum(c.values()):9d}{c['refused']:9d}{c['ok']:9d}{bad:9d}")
    print(
        f"\n{len(cases)} cases in {time.monotonic() - start:.0f} s: "
        + ", ".join(f"{k} {v}" for k, v in total.most_common())
    )
    targets = f"targets {TIME_TARGET_S} s, {MEMORY_TARGET_MB:.0f} MB"
    print(f"slowest refusal {cpu_max:.2f} s CPU, largest {mem_max:.0f} MB peak ({targets})")
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
