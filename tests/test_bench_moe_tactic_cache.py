"""benchmarks/moe_tactic_cache.py: the collector's tactic-cache rule, by hand, on a few rows and on the B200 table.

aiconfigurator's collector (``collector/trtllm/collect_moe.py``) keys the file ``<dtype>_<hidden>_<inter/tp>_
<experts/ep>`` and loads the first file the glob ``<key>*`` finds before it would tune."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import sys
from pathlib import Path

from tests.test_calibration_targets import SHARED, needs_shared

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("kernel_source", "moe_dtype", "num_tokens", *("hidden_size", "inter_size", "topk", "num_experts"))


def bench():
    """The benchmark script as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("moe_tactic_cache_bench", REPO / "benchmarks" / "moe_tactic_cache.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def row(source, tokens, shape, distribution="balanced", dtype="nvfp4"):
    """One table row: shape = (hidden, inter, top-k, experts, tp, ep)."""
    names = (*COLUMNS, "moe_tp_size", "moe_ep_size")
    return {
        **dict(zip(names, (source, dtype, str(tokens), *map(str, shape)), strict=True)),
        "distribution": distribution,
    }


CUTLASS, MIN_LATENCY = "moe_torch_flow_cutlass", "moe_torch_flow_min_latency"


def test_classes_follow_the_collectors_cache_file_rule():
    """Keys by hand: (7168, 2048, 8, 256, 1, 1) -> 7168_2048_256; tp 8 -> 7168_256_256; tp 8 ep 16 ->
    7168_256_16; tp 8 ep 256 -> 7168_256_1, whose glob also finds 7168_256_16 (a prefix)."""
    ds = (7168, 2048, 8, 256)
    rows = [
        row(MIN_LATENCY, 1, (*ds, 1, 1)),  # writes 7168_2048_256
        row(CUTLASS, 1, (*ds, 1, 1)),  # loads it: tactics of the min-latency kernel
        row(CUTLASS, 1, (*ds, 8, 1)),  # no 7168_256_256*: tunes
        row(CUTLASS, 2, (*ds, 1, 1)),  # the second row of an earlier sweep: its start stays row 2
        row("x", 1, (*ds, 8, 1), dtype="bfloat16"),  # another dtype: another cache file
        row(CUTLASS, 1, (*ds, 8, 1), "power_law_1.01"),  # its own configuration's file
        row(CUTLASS, 1, (7168, 2048, 4, 256, 8, 1)),  # same key, top 4: another configuration's file
        row(CUTLASS, 1, (*ds, 8, 16)),  # 7168_256_16: nothing starts with it: tunes
        row(CUTLASS, 1, (*ds, 8, 256)),  # 7168_256_1*: finds 7168_256_16
    ]
    module = bench()
    got = module.provenance(rows)
    assert [got[module.sweep_of(r)] for r in rows if r["moe_dtype"] == "nvfp4"] == [
        "tuned", "min_latency", "tuned", "min_latency", "same_config", "other_config", "tuned", "prefix"
    ]  # fmt: skip
    assert module.cache_key(module.sweep_of(rows[-1])) == "7168_256_1"


@needs_shared
def test_deepseek_ep4_balanced_sweep_ran_with_a_min_latency_cache():
    """B200 table: the first nvfp4 row keyed 7168_2048_64 (DeepSeek's experts, tp 1, ep 4) is line 55,568, a
    min-latency run (power_law_1.2); the CUTLASS balanced sweep of that shape starts at line 208,199 (T = 32:
    0.532453 ms, as long as ep 2's 0.531227 ms at line 167,221 with twice the weights), so it loaded that file."""
    module = bench()
    with gzip.open(SHARED / module.TABLE, "rt", newline="") as f:
        rows = list(csv.DictReader(f))
    got = module.provenance(rows)
    assert rows[55568 - 2]["kernel_source"] == MIN_LATENCY
    assert got[module.sweep_of(rows[55568 - 2])] == "tuned"
    ep4 = rows[208199 - 2]
    assert module.sweep_of(ep4) == (CUTLASS, "7168", "2048", "8", "256", "1", "4", "balanced")
    assert got[module.sweep_of(ep4)] == "min_latency"
