"""Time and peak memory of refusing hostile inputs (prints a table; exit 1 if a target is missed).

    python benchmarks/refusals.py

Targets (issue 12): every refused input below is refused in under 2 s and under 500 MB of
peak resident memory.  Each case runs in a fresh Python process that imports roofline,
records its resident memory, then loads the input and must get a RooflineError; the time is
that of the load alone, the memory the process peak (the import's share included).
The last case, a measurement CSV just under the size limit with its bad cell in the last
row, is shown for information: reading is streamed into compact columns, so its memory stays
bounded, but its time grows with the rows read before the bad one (no target).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TIME_TARGET_S, MEMORY_TARGET_MB = 2.0, 500.0
V5E = (
    "name: chip\nflops_per_s: {bf16: 1.97e14}\nhbm_bytes: 16 GiB\nhbm_bandwidth_bytes_per_s: 819 GB/s\n"
    "ici_bandwidth_bytes_per_s: 4.5e+10\nici_links: 4\nici_hop_latency_s: 1 us\nprice_per_chip_hour: 1.2\n"
)
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
CHILD = """
import sys, time
from roofline.core.errors import RooflineError
kind, path = sys.argv[1], sys.argv[2]
if kind == "csv":
    from roofline.calibrate.kernels.importers import import_file as load
elif kind == "trace":
    from roofline.analyses.simulate import read_trace as load
elif kind == "lengths":
    from roofline.analyses.lengths import read_lengths_csv as load
elif kind == "e2e":
    from roofline.calibrate.engine.importers import MAX_VALIDATE_ROWS, import_file

    def load(path):
        return import_file(path, max_rows=MAX_VALIDATE_ROWS)
elif kind == "vllm":
    from roofline.calibrate.engine.importers import import_file
    from roofline.calibrate.engine.vllm_results import ImportOptions

    def load(path):
        return import_file(path, options=ImportOptions(hardware="h100-sxm"))
elif kind == "model":
    from roofline.specs import load_model as load
else:
    from roofline.specs import load_hardware as load
start = time.perf_counter()
try:
    load(path)
    outcome = "ACCEPTED"
except RooflineError as exc:
    outcome = str(exc)[:70]
elapsed = time.perf_counter() - start
status = open("/proc/self/status").read()
peak_kb = int(status.split("VmHWM:")[1].split()[0])  # this process's peak (ru_maxrss survives exec)
print(elapsed, peak_kb / 1024, outcome, sep="\\t")
"""


def cases(folder: Path) -> list[tuple[str, str, Path, bool]]:
    """(label, loader, file, has a target) of each hostile input, written into ``folder``."""
    out: list[tuple[str, str, Path, bool]] = []

    def add(label: str, kind: str, name: str, data: bytes, target: bool = True) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        out.append((label, kind, path, target))

    add("YAML alias bomb in source (470 B)", "hardware", "bomb.yaml", (BOMB + "source: *i\n").encode())
    add(
        "YAML alias bomb in hbm_bytes",
        "hardware",
        "bomb2.yaml",
        (V5E.replace("hbm_bytes: 16 GiB\n", "") + BOMB + "hbm_bytes: *i\n").encode(),
    )
    add("50 MB YAML", "hardware", "big.yaml", (V5E + "#" * 50_000_000 + "\n").encode())
    body = "".join(f"k{i}: {i}.5  # padding\n" for i in range(45_000))
    add(
        "1 MiB YAML, 45,000 unknown keys, bad unit",
        "hardware",
        "near.yaml",
        (V5E.replace("16 GiB", "80 ms") + body)[: 2**20 - 30].rsplit("\n", 1)[0].encode() + b"\n",
    )
    add("config.json, 100,000 nested [", "model", "deep/config.json", b"[" * 100_000 + b"]" * 100_000)
    add("config.json, 500,000 nested [ (1 MiB)", "model", "deep2/config.json", b"[" * 2**19 + b"]" * (2**19 - 8))
    add(
        "config.json, 5000-digit integer",
        "model",
        "long/config.json",
        json.dumps({"hidden_size": 1}).replace("1", "9" * 5000).encode(),
    )
    add("binary file as YAML (1 MB)", "model", "bin.yaml", bytes(range(256)) * 4000)
    row = b"h100-sxm,gemm,bf16,1024,8192,8192,,,,,,,,,0.000190693,fixture,\n"
    header = (
        b"hardware,op,dtype,m,n,k,batch,q_len,kv_len,num_heads,num_kv_heads,head_dim,message_bytes,"
        b"num_devices,time_s,source,impl\n"
    )
    bomb = folder / "bomb.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as handle:  # 1 GB of valid rows, written in pieces
        handle.write(header)
        for _ in range(1000):
            handle.write(row * (10**6 // len(row)))
    out.append((f"gzip bomb: 1 GB of rows in {bomb.stat().st_size / 1e6:.0f} MB", "csv", bomb, True))
    add("truncated .csv.gz", "csv", "cut.csv.gz", gzip.compress(header + row * 20_000)[:-100])
    add("100 MB CSV (over the limit)", "csv", "huge.csv", header + b"x" * 100_000_000)
    trace_head = b"arrival_time_s,input_len,output_len\n"
    add(
        "trace, 1,000,001 rows (over the row limit)",
        "trace",
        "trace_rows.csv",
        trace_head + b"0.001,64,8\n" * 1_000_001,
    )
    add("trace, 140 MB (over the 128 MiB limit)", "trace", "big.csv", trace_head + b"0,64,8\n" * 20_000_000)
    add("trace as UTF-16", "trace", "u16.csv", (trace_head + b"0,64,8\n" * 1000).decode().encode("utf-16"))
    add("trace gzip bomb (1 GB of newlines)", "trace", "bomb.csv", gzip.compress(trace_head + b"\n" * 10**9, 1))
    out.append(("trace /dev/zero", "trace", Path("/dev/zero"), True))
    add(
        "trace, 1e300 in the last of 500,000 rows",
        "trace",
        "trace_last.csv",
        trace_head + b"0,64,8\n" * 499_999 + b"0,1e300,8\n",
        target=False,
    )
    add("lengths file, 2,000,000 rows", "lengths", "len.csv", b"input_len,output_len\n" + b"64,8\n" * 2_000_000)
    e2e = (
        b"id,source,model,hardware,weight_dtype,kv_dtype,compute_dtype,engine,load,batch,input_len,output_len,ttft_s\n"
    )
    add(
        "e2e rows for validate, 30,000 rows",
        "e2e",
        "e2e_rows.csv",
        e2e
        + b"".join(b"r/%d,m,llama-3-8b,h100-sxm,bf16,bf16,bf16,vllm,static,8,512,64,0.05\n" % i for i in range(30_000)),
    )
    add("vLLM JSON, 100,000 nested [", "vllm", "deep.json", b"[" * 100_000 + b"]" * 100_000)
    add("vLLM JSON, 5000-digit completed", "vllm", "long.json", b'{"completed": ' + b"9" * 5000 + b"}")
    add("vLLM JSON Lines, 40 MB of objects", "vllm", "many.jsonl", b'{"completed": true}\n' * 2_000_000)
    rows = (64 * 2**20 - 200) // len(row)
    add(
        f"CSV at the limit, {rows:,} rows, bad last cell",
        "csv",
        "last.csv",
        header + row * rows + row.replace(b"1024", b"1e300"),
        target=False,
    )
    return out


def run(kind: str, path: Path) -> tuple[float, float, str]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path)], capture_output=True, text=True, cwd=REPO, timeout=600
    )
    if proc.returncode != 0:
        return float("nan"), float("nan"), "CRASHED: " + proc.stderr.strip().splitlines()[-1][:60]
    seconds, megabytes, outcome = proc.stdout.strip().split("\t", 2)
    return float(seconds), float(megabytes), outcome


def main() -> int:
    missed = 0
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'input':45} {'time s':>8} {'peak MB':>8}  message")
        for label, kind, path, target in cases(Path(folder)):
            seconds, megabytes, outcome = run(kind, path)
            bad = target and not (
                seconds < TIME_TARGET_S
                and megabytes < MEMORY_TARGET_MB
                and not outcome.startswith(("ACCEPTED", "CRASHED"))
            )
            missed += bad
            note = "  <- MISSED" if bad else ("" if target else "  (information)")
            print(f"{label:45} {seconds:8.3f} {megabytes:8.0f}  {outcome}{note}")
    print(f"targets: < {TIME_TARGET_S} s and < {MEMORY_TARGET_MB:.0f} MB per refusal; missed: {missed}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
