"""Print the kernel-family figures quoted in the README and docs/guides/kernels.md (markdown).

Usage: python benchmarks/kernel_families.py [--shared ../shared/measurements] [--chips h100-sxm,b200]
       [--families moe,mla_decode,mla_prefill,bmm] [--folds 5] [--max-rows 3000]

* Fused MoE: per chip and dtype, held out by **whole model shape** (hidden, inter, top-k, experts,
  gated: 5 seeded folds of shapes, each predicted by a fit on the others), on the evenly spread
  (``balanced``) rows, after the sweep cleaning; the power-law rows are scored with the same held-out
  fits (their routing features are the skew model's), per alpha.  Per table: TensorRT-LLM on H100 and
  B200, vLLM on H100 (its own family, impl ``vllm``).
* MLA decode and prefill, MLA BMMs: per chip and dtype, held out by heads per GPU (the tables have one
  model shape: DeepSeek-V3's), after removing isolated spikes.
* Never pooled: one line per (table, family, dtype) and per routing.

Deterministic (seeded folds and subsampling); slow (minutes per line on two cores).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from roofline.calibrate.kernels.fit import cleaned
from roofline.calibrate.kernels.holdout import predict_held_out
from roofline.calibrate.kernels.importers import import_file
from roofline.calibrate.kernels.sweeps import sweep_ids
from roofline.kernels.predict import error_stats, model_for, predict_op
from roofline.kernels.schema import CalibrationError, Measurements
from roofline.specs import load_hardware

AIC = "aiconfigurator/systems/data"
TABLES = {
    ("h100-sxm", "moe"): ("h100_sxm/moe/trtllm/1.3.0rc20/moe_perf.csv.gz", "h100_sxm/moe/vllm/0.24.0/moe_perf.csv.gz"),
    ("b200", "moe"): ("b200_sxm/moe/trtllm/1.3.0rc20/moe_perf.csv.gz",),
    ("h100-sxm", "mla_decode"): ("h100_sxm/mla/trtllm/1.3.0rc20/generation_mla_perf.csv.gz",),
    ("b200", "mla_decode"): ("b200_sxm/mla/trtllm/1.3.0rc20/generation_mla_perf.csv.gz",),
    ("h100-sxm", "mla_prefill"): ("h100_sxm/mla/trtllm/1.3.0rc20/context_mla_perf.csv.gz",),
    ("b200", "mla_prefill"): ("b200_sxm/mla/trtllm/1.3.0rc20/context_mla_perf.csv.gz",),
    ("h100-sxm", "bmm"): ("h100_sxm/mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf.csv.gz",),
    ("b200", "bmm"): ("b200_sxm/mla_bmm/trtllm/1.3.0rc20/mla_bmm_perf.csv.gz",),
}


def pct(stats: dict[str, float]) -> str:
    """'MAPE / median / p90' in percent."""
    return " / ".join(f"{100 * stats[k]:.1f}%" for k in ("mape", "median_ape", "p90_ape"))


def entries(table: Measurements) -> list[tuple[str, Measurements]]:
    """(profile key, rows) per op class and dtype of ``table``."""
    from roofline.kernels.predict import row_entry_keys

    keys = row_entry_keys(table)
    return [(k, table.take(keys == k)) for k in sorted(set(keys))]


def report(chip: str, source: str, key: str, rows: Measurements, folds: int, max_rows: int) -> list[str]:
    """Markdown table lines of one entry: held out by shape, per routing where it has several."""
    hw = load_hardware(chip)
    clean, excluded = cleaned(key, rows, hw, max_rows, 0)
    try:
        predicted = predict_held_out(key, clean, hw, folds, max_rows, 0)
    except CalibrationError as exc:
        return [f"| {chip} | {source} | {key} | - | {len(clean):,} | 1 | {excluded:,} | - | {exc} |"]
    shapes = len(set(sweep_ids(clean, model_for(key).holdout).tolist()))
    lines = []
    for routing in clean.unique("routing") or [""]:
        mask = clean["routing"] == routing if routing else np.ones(len(clean), bool)
        stats = error_stats(predicted[mask], clean["time_s"][mask])
        spec = error_stats(predict_op(key, clean.take(mask), hw, None), clean["time_s"][mask])
        lines.append(
            f"| {chip} | {source} | {key} | {routing or '-'} | {int(stats['n']):,} | {shapes} | "
            f"{excluded:,} | {100 * spec['mape']:.1f}% | **{pct(stats)}** |"
        )
    return lines


def options(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: a shared folder that holds the tables, known chips and families, folds >= 2."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared/measurements")
    parser.add_argument("--chips", default="h100-sxm,b200")
    parser.add_argument("--families", default="moe,mla_decode,mla_prefill,bmm")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--max-rows", type=int, default=3000)
    args = parser.parse_args(argv)
    chips, families = sorted({c for c, _ in TABLES}), sorted({f for _, f in TABLES})
    for flag, given, allowed in (("--chips", args.chips, chips), ("--families", args.families, families)):
        bad = [v for v in given.split(",") if v not in allowed]
        if bad:
            parser.error(f"{flag}: unknown {bad[0]!r}; allowed: {', '.join(allowed)}")
    if args.folds < 2 or args.max_rows < 1:
        parser.error(f"--folds {args.folds} / --max-rows {args.max_rows}: need folds >= 2 and max-rows >= 1")
    if not (Path(args.shared) / AIC).is_dir():
        parser.error(f"--shared {args.shared}: no {AIC} folder there (the public measurement tables)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = options(argv)
    head = ("chip", "table", "entry", "routing", "rows", "shapes held out", "excluded", "ideal roofline MAPE")
    print("| " + " | ".join(head) + " | held out by shape: MAPE / median / p90 |")
    print("|" + "---|" * (len(head) + 1))
    for family in args.families.split(","):
        for chip in args.chips.split(","):
            for rel in TABLES.get((chip, family), ()):
                table = import_file(Path(args.shared) / AIC / rel, chip)
                source = "/".join(rel.split("/")[2:4])
                for key, rows in entries(table):
                    for line in report(chip, source, key, rows, args.folds, args.max_rows):
                        print(line, flush=True)


if __name__ == "__main__":
    main()
