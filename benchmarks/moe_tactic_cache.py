"""Which tactic cache each B200 nvfp4 fused-MoE sweep ran with, by aiconfigurator's collector rule (issue 24).

Usage: python benchmarks/moe_tactic_cache.py [--shared ../shared/measurements]

aiconfigurator's TensorRT-LLM collector (``collector/trtllm/collect_moe.py``) keys its autotuner cache file
``<dtype>_<hidden>_<inter/tp>_<experts/ep>`` and, before tuning, loads the first file the glob
``<key>*`` finds: any file whose key starts with the sweep's own (``7168_256_1`` also finds
``7168_256_16``).  A sweep that loads a file does not tune.  Its min-latency nvfp4 runs (TensorRT-LLM's
trtllm-gen kernel, ``moe_torch_flow_min_latency``, not imported) write under the same keys.  Taking the
table's row order as run order (a sweep starts at its first row; parallel collectors make that
approximate), each nvfp4 sweep is one of:

* ``tuned``: no file matched: it tuned its own tactics;
* ``same_config``: it loaded the file a sweep of its own configuration (another routing) tuned;
* ``min_latency``: it loaded the file a min-latency run wrote (tactics of another kernel);
* ``other_config``: the file another configuration with the same key tuned;
* ``prefix``: the file of a longer key the glob also matched.

It prints, per class, the sweeps and their level (median measured / fitted time, the fit of ``moe/nvfp4``
after the 1.5x sweep cleaning), and the held-out figures of ``moe/nvfp4`` with the sweeps measured with a
foreign cache (``min_latency``, or all three foreign classes) dropped from fit and scoring, against none
and against the ``tuned`` sweeps alone.
Not a cleaning rule of the fit: the figures are recorded in docs/guides/kernels.md ("Missed").
"""

from __future__ import annotations

import argparse
import csv
import gzip
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from roofline.calibrate.kernels.fit import cleaned, fit_op
from roofline.calibrate.kernels.holdout import predict_held_out
from roofline.calibrate.kernels.importers import import_file
from roofline.calibrate.kernels.sweeps import sweep_ids
from roofline.kernels.predict import error_stats, predict_op, row_entry_keys
from roofline.kernels.schema import Measurements
from roofline.specs import HardwareSpec, load_hardware

TABLE = "aiconfigurator/systems/data/b200_sxm/moe/trtllm/1.3.0rc20/moe_perf.csv.gz"
MIN_LATENCY = "moe_torch_flow_min_latency"
CLASSES = ("tuned", "same_config", "min_latency", "other_config", "prefix")
FOREIGN = ("min_latency", "other_config", "prefix")
SHAPE = ("hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size")


def sweep_of(row: dict[str, str]) -> tuple[str, ...]:
    """(kernel_source, hidden, inter, top-k, experts, tp, ep, distribution): the rows one collector call logs."""
    return (row["kernel_source"], *(str(int(float(row[c]))) for c in SHAPE), row["distribution"])


def cache_key(sweep: tuple[str, ...]) -> str:
    """``<hidden>_<inter//tp>_<experts//ep>``: the collector's cache file name after the dtype."""
    hidden, inter, _, experts, tp, ep = (int(v) for v in sweep[1:7])
    return f"{hidden}_{inter // tp}_{experts // ep}"


def provenance(rows: Iterable[dict[str, str]], dtype: str = "nvfp4") -> dict[tuple[str, ...], str]:
    """The cache class of each ``dtype`` sweep, its start taken as its first row in ``rows`` (file order)."""
    starts: dict[tuple[str, ...], int] = {}
    for i, row in enumerate(rows):
        if row["moe_dtype"] == dtype:
            starts.setdefault(sweep_of(row), i)
    files: dict[str, tuple[str, ...]] = {}  # key -> the sweep that tuned and wrote it
    out = {}
    for sweep in sorted(starts, key=starts.__getitem__):
        key = cache_key(sweep)
        found = sorted((k for k in files if k.startswith(key)), key=lambda k: starts[files[k]])
        if not found:
            files[key], out[sweep] = sweep, "tuned"
            continue
        writer = files[key] if key in files else files[found[0]]
        if writer[0] == MIN_LATENCY and sweep[0] != MIN_LATENCY:
            out[sweep] = "min_latency"
        elif writer[:7] == sweep[:7]:
            out[sweep] = "same_config"
        else:
            out[sweep] = "other_config" if key in files else "prefix"
    return out


def row_classes(table: Measurements, classes: dict[tuple[str, ...], str]) -> np.ndarray:
    """The class of each imported row (gated rows are ``moe_torch_flow_cutlass``, the others ``_nongated``)."""
    source = np.where(table["gated"] > 0, "moe_torch_flow_cutlass", "moe_torch_flow_nongated")
    cols = [table[c].astype(int).astype(str) for c in ("k", "n", "top_k", "num_experts", "tp", "ep")]
    return np.array([classes[(s, *v, r)] for s, *v, r in zip(source, *cols, table["routing"], strict=True)])


def held_out(rows: Measurements, hw: HardwareSpec) -> list[str]:
    """'routing rows MAPE / median / p90' of moe/nvfp4 held out by shape after the 1.5x sweep cleaning."""
    clean, excluded = cleaned("moe/nvfp4", rows, hw, 3000, 0)
    predicted = predict_held_out("moe/nvfp4", clean, hw, 5, 3000, 0)
    out = []
    for routing in clean.unique("routing"):
        mask = clean["routing"] == routing
        s = error_stats(predicted[mask], clean["time_s"][mask])
        figures = " / ".join(f"{100 * s[k]:.1f}%" for k in ("mape", "median_ape", "p90_ape"))
        out.append(f"{routing} {int(s['n']):,} rows (1.5x cleaning {excluded:,}): {figures}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared/measurements")
    path = Path(parser.parse_args(argv).shared) / TABLE
    if not path.is_file():
        parser.error(f"--shared: no {TABLE} there")
    with gzip.open(path, "rt", newline="") as f:
        classes = provenance(csv.DictReader(f))
    hw = load_hardware("b200")
    table = import_file(path, "b200")
    rows = table.take(row_entry_keys(table) == "moe/nvfp4")
    kind = row_classes(rows, classes)
    clean, _ = cleaned("moe/nvfp4", rows, hw, 3000, 0)
    log_ratio = np.log(rows["time_s"] / predict_op("moe/nvfp4", rows, hw, fit_op("moe/nvfp4", clean, hw, 3000, 0)))
    sweep = sweep_ids(rows, ("k", "n", "top_k", "num_experts", "tp", "ep", "gated", "routing"))
    for name in CLASSES:
        ids = np.unique(sweep[kind == name])
        level = np.array([np.median(log_ratio[sweep == i]) for i in ids])
        if len(level):
            print(
                f"{name}: {len(ids)} sweeps, level median {np.exp(np.median(level)):.3f}, "
                f">= 1.1x {np.mean(level > np.log(1.1)):.0%}, <= 0.95x {np.mean(level < np.log(0.95)):.0%}"
            )
    for label, drop in (
        ("no rule", ()),
        ("min_latency dropped", ("min_latency",)),
        ("foreign dropped", FOREIGN),
        ("self-tuned only", CLASSES[1:]),
    ):
        keep = ~np.isin(kind, drop)
        for line in held_out(rows.take(keep), hw):
            print(f"{label} ({int((~keep).sum()):,} rows dropped): {line}")


if __name__ == "__main__":
    main()
