"""Print the calibration figures quoted in the README (markdown), from the shipped H100 data.

Usage: python benchmarks/calibration_figures.py [MEASUREMENTS...] [--hardware h100-sxm]
(default measurements: builtin:h100-sxm, bf16 and fp8).  One row per profile entry and split
(every dtype present is its own entry).  Deterministic: seeded split and subsampling.
"""

from __future__ import annotations

import argparse

from roofline.calibrate.kernels.data import load_all
from roofline.calibrate.kernels.fit import calibrate
from roofline.specs import load_hardware


def pct(value: float | None) -> str:
    return "-" if value is None or value != value else f"{100 * value:.1f}%"


def triple(stats: dict[str, float], prefix: str) -> str:
    return " / ".join(pct(stats.get(f"{prefix}_{k}")) for k in ("mape", "median_ape", "p90_ape"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measurements", nargs="*", default=["builtin:h100-sxm"])
    parser.add_argument("--hardware", default="h100-sxm")
    args = parser.parse_args()
    _, fits = calibrate(load_all(args.measurements), load_hardware(args.hardware))
    print("Held-out error of predicted kernel time, MAPE / median / p90 absolute relative error.\n")
    head = ("entry", "rows", "split", "spec roofline", "constant η + overhead", "calibrated model", "at a bound")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key, fit in fits.items():
        for split, stats in (("random 80/20", fit.random), ("shape range", fit.shape_range)):
            if not stats:
                continue
            print(
                f"| {key} | {int(fit.stats['after_n'])} | {split} | {triple(stats, 'before')} | "
                f"{triple(stats, 'constant')} | {triple(stats, 'after')} | "
                f"{', '.join(fit.at_bound) or '-'} |"
            )


if __name__ == "__main__":
    main()
