"""End-to-end rows shipped inside the package, and the script that builds them.

``roofline/data/e2e/*.csv`` are the public tables of the shared measurements folder converted
to the schema of :mod:`.schema` (sources and licences in ``NOTICE.md`` there).  Rebuild with
``python -m roofline.calibrate.engine.data ../shared/measurements``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from roofline.calibrate.engine.importers import ImportOptions, import_file
from roofline.calibrate.engine.rows_out import write_rows
from roofline.calibrate.engine.schema import E2ERow, read_rows
from roofline.core.errors import OptionError
from roofline.specs import hardware_names

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "e2e"
#: Shipped file -> (public tables relative to the shared measurements folder, format).
SHIPPED: dict[str, tuple[tuple[str, ...], str]] = {
    "trtllm-static-batch.csv": (("published_tables/trtllm_static_batch_throughput_v0.5_v0.6.1.csv",), "trtllm-static"),
    "trtllm-first-token.csv": (("published_tables/trtllm_first_token_latency_bs1_v0.5.csv",), "trtllm-first-token"),
    "trtllm-perf-overview.csv": (
        (
            "published_tables/trtllm_perf_overview_v1.0_total_output_tps.csv",
            "published_tables/trtllm_perf_overview_latest_per_gpu_llama33_70b.csv",
        ),
        "trtllm-perf-overview",
    ),
    "splitwise-sim.csv": (("splitwise-sim/data/perf_model.csv",), "splitwise"),
    "vllm-serving-h100.csv": (("vllm-serving-h100/llama-2-7b.json",), "inference-perf"),
}
#: Options a shipped file's import takes (what its README says and the file does not).
OPTIONS = {
    # README: the client gave up after about 300 s (the overloaded run's failures).
    "vllm-serving-h100.csv": ImportOptions(
        source="vllm-serving-h100", timeout_s=300.0, license="public (shared measurements README: redistributable)"
    ),
}


def shipped_files() -> list[Path]:
    """The shipped CSV files, in a fixed order."""
    return [DATA_DIR / name for name in SHIPPED]


def load_shipped(source: str | None = None) -> list[E2ERow]:
    """Every shipped row, or those whose ``source`` column equals (or starts with) ``source``."""
    rows = [r for path in shipped_files() for r in read_rows(path)]
    if source is None:
        return rows
    picked = [r for r in rows if r.source == source or r.source.startswith(source)]
    if not picked:
        names = sorted({r.source for r in rows})
        raise OptionError(
            f"source {source!r} matches no shipped rows; allowed: {', '.join(names)}", parameters=("source",)
        )
    return picked


def build(shared: Path) -> dict[str, list[E2ERow]]:
    """Convert the public tables; drop rows whose hardware has no built-in profile (GB200)."""
    known = set(hardware_names())
    out = {}
    for name, (rels, fmt) in SHIPPED.items():
        rows = [r for rel in rels for r in import_file(shared / rel, fmt, OPTIONS.get(name))]
        out[name] = [r for r in rows if r.hardware in known]
    return out


def main(argv: list[str]) -> int:
    shared = Path(argv[0] if argv else "../shared/measurements")
    if not shared.is_dir():
        print(f"{shared}: no such folder (the shared measurements)", file=sys.stderr)
        return 2
    for name, rows in build(shared).items():
        path = write_rows(rows, DATA_DIR / name)
        print(f"wrote {path} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
