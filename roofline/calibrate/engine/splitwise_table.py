"""Importer of splitwise-sim's perf_model.csv (prefill and per-token decode times, repeats averaged)."""

from __future__ import annotations

import statistics
from collections import defaultdict

from roofline.calibrate.engine.schema import E2ERow
from roofline.calibrate.engine.table_cells import _hardware, _int, _model, _need_columns, _number
from roofline.core.units import MS

SPLITWISE_LICENSE = "MIT"
SPLITWISE_COLUMNS = (
    "model",
    "hardware",
    "prompt_size",
    "batch_size",
    "token_size",
    "prompt_time",
    "token_time",
    "e2e_time",
    "tensor_parallel",
)
SPLITWISE_REFERENCE = "Mutinifni/splitwise-sim @ 8f99e7dc9b407f4ce2488d03dd44c0b8b946dab0, data/perf_model.csv"
#: e2e_time is kept only when it agrees with prompt + (O-1)·token within this fraction.
E2E_CONSISTENCY = 0.10


def _splitwise_rows(header: list[str], rows: list[dict[str, str]], origin: str) -> list[E2ERow]:
    """Mean over repeats of each (model, hardware, tp, prompt, batch, output) point, ms -> s.

    Skipped: ``h100-80gb-pcap`` (derived from h100-80gb, not measured) and TP2 batch 64 (its
    prefill is faster than batch 32's: the README calls these rows anomalous).
    """
    _need_columns(header, SPLITWISE_COLUMNS, origin, "splitwise")
    groups: dict[tuple[str, str, int, int, int, int], set[tuple[float, float, float]]] = defaultdict(set)
    for line, r in enumerate(rows, start=2):
        if r["hardware"].strip() == "h100-80gb-pcap":
            continue
        key = (
            _model(r["model"], origin),
            _hardware(r["hardware"], origin),
            _int(r, "tensor_parallel", origin, line),
            _int(r, "prompt_size", origin, line),
            _int(r, "batch_size", origin, line),
            _int(r, "token_size", origin, line),
        )
        if key[2] == 2 and key[4] == 64:
            continue
        # Identical rows recur where sweeps share a point; a set keeps each repeat once.
        groups[key].add(tuple(_number(r, c, origin, line) * MS for c in ("prompt_time", "token_time", "e2e_time")))
    return [_splitwise_row(key, sorted(repeats)) for key, repeats in sorted(groups.items())]


def _splitwise_row(key: tuple[str, str, int, int, int, int], repeats: list[tuple[float, ...]]) -> E2ERow:
    model, hw, tp, isl, batch, osl = key
    prefill = statistics.fmean(p for p, _, _ in repeats)
    token = statistics.fmean(t for _, t, _ in repeats)
    consistent = [e for p, t, e in repeats if abs((p + (osl - 1) * t) / e - 1.0) <= E2E_CONSISTENCY]
    notes = [
        f"mean of {len(repeats)} repeats",
        "prompt_time = prefill of the whole batch -> ttft_s",
        "token_time = one decode iteration -> tpot_s",
        "FP16 per the Splitwise paper (not re-verified)",
        "engine as profiled for the Splitwise paper (not stated in the data)",
    ]
    if len(consistent) < len(repeats):
        notes.append(
            f"e2e_time of {len(repeats) - len(consistent)} repeats disagrees with prompt + (O-1) x token "
            f"by > {E2E_CONSISTENCY:.0%}: left out"
        )
    return E2ERow(
        id=f"splitwise-sim/{model}/{hw}/tp{tp}/b{batch}/i{isl}-o{osl}",
        source="splitwise-sim",
        reference=SPLITWISE_REFERENCE,
        license=SPLITWISE_LICENSE,
        model=model,
        hardware=hw,
        tp=tp,
        weight_dtype="fp16",
        kv_dtype="fp16",
        compute_dtype="fp16",
        engine="unknown",
        input_len=isl,
        output_len=osl,
        load="static",
        batch=batch,
        num_requests=batch,
        ttft_s=prefill,
        tpot_s=token,
        e2e_s=statistics.fmean(consistent) if consistent else None,
        notes="; ".join(notes),
    )
