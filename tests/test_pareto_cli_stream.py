"""`roofline pareto` streams its sweep (roofline.decode_frontier): the same output as the whole sweep's frontiers."""

from __future__ import annotations

import json

import pytest

from roofline.analyses.pareto import OBJECTIVES, frontier_by_group
from roofline.analyses.sweep import run as sweep
from roofline.specs import load_hardware, load_model
from tests.inprocess import run_roofline

GRIDS = [
    # (CLI options, the same sweep's keyword arguments, --group)
    (
        [
            "--model",
            "llama-3-8b",
            "--hardware",
            "h100-sxm,tpu-v5e",
            "--batch",
            "1..4096",
            "--chips",
            "1,2,4,8",
            "--context",
            "512,8192",
        ],
        dict(
            model="llama-3-8b",
            hardware=["h100-sxm", "tpu-v5e"],
            batch=sweep.parse_int_list("1..4096", "b"),
            chips=[1, 2, 4, 8],
            context=[512, 8192],
        ),
        "hardware",
    ),
    (
        [
            "--model",
            "mixtral-8x7b",
            "--hardware",
            "h200",
            "--batch",
            "1,3,8,64,100,700",
            "--chips",
            "2,4,8",
            "--tp",
            "1,2",
            "--pp",
            "1,2",
            "--weights",
            "bf16,int8",
            "--kv-dtype",
            "bf16,int8",
        ],
        dict(
            model="mixtral-8x7b",
            hardware=["h200"],
            batch=[1, 3, 8, 64, 100, 700],
            chips=[2, 4, 8],
            tp=[1, 2],
            pp=[1, 2],
            weights=("bf16", "int8"),
            kv_dtypes=("bf16", "int8"),
        ),
        "all",
    ),
]


def old_path(kw: dict, group: str, objectives: list[str]) -> dict:
    """What `pareto --json` printed when it held the whole sweep: frontier_by_group over decode_sweep."""
    kw = {**kw, "model": load_model(kw["model"]), "hardware": [load_hardware(h) for h in kw["hardware"]]}
    result = sweep.decode_sweep(**kw)
    labels = result.group_labels(group)
    frontiers = {name: frontier_by_group(result.columns, labels, name) for name in objectives}
    return {
        "fit": len(result),
        "evaluated": result.evaluated,
        "dropped": result.dropped_out_of_memory,
        "frontiers": {
            name: {str(k): result.select(idx).rows() for k, idx in groups.items()} for name, groups in frontiers.items()
        },
    }


@pytest.mark.parametrize("options, kw, group", GRIDS)
def test_pareto_json_equals_the_whole_sweeps_frontiers(options, kw, group, monkeypatch) -> None:
    want = json.loads(json.dumps(old_path(kw, group, list(OBJECTIVES))))
    # The streamed command needs no room for the whole sweep: refuse any decode_sweep that holds > 10 points.
    monkeypatch.setattr(sweep, "MAX_SWEEP_POINTS", 10)
    run = run_roofline("pareto", *options, "--group", group, "--objective", "all", "--json")
    assert run.code == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["frontiers"] == want["frontiers"]
    assert (got["fit"], got["evaluated"], got["dropped_out_of_memory"]) == (
        want["fit"],
        want["evaluated"],
        want["dropped"],
    )
    assert want["fit"] > 10  # (so the refusal above would have fired on the old path)
