"""Importers of TensorRT-LLM's published tables: static batching, first-token latency, perf overview."""

from __future__ import annotations

import math
import re
from pathlib import Path

from roofline.calibrate.engine.schema import E2EError, E2ERow
from roofline.calibrate.engine.table_cells import _hardware, _int, _key, _model, _need_columns, _number
from roofline.core.units import MS

TRTLLM_LICENSE = "Apache-2.0"
#: Published precision labels -> (weights, KV cache, compute).  TensorRT-LLM's FP8 builds and
#: ModelOpt FP8/FP4 checkpoints are read as FP8 KV caches (the tables do not state it: assumed).
PRECISION = {
    "fp8": ("fp8", "fp8", "fp8"),
    "fp16": ("fp16", "fp16", "fp16"),
    "fp4": ("fp4", "fp8", "fp4"),
    "bf16": ("bf16", "bf16", "bf16"),
}
KV_ASSUMED = "KV dtype not published: assumed fp8 for an FP8/FP4 build"


def _precision(label: str, origin: str) -> tuple[str, str, str]:
    try:
        return PRECISION[_key(label)]
    except KeyError:
        raise E2EError(f"{origin}: unknown precision {label!r}; allowed: {', '.join(PRECISION)}") from None


STATIC_COLUMNS = (
    "trtllm_version",
    "model",
    "gpu",
    "precision",
    "batch_size",
    "tp",
    "isl",
    "osl",
    "throughput_value",
    "throughput_unit_as_published",
    "source",
)


def _static_rows(header: list[str], rows: list[dict[str, str]], origin: str) -> list[E2ERow]:
    """Static-batch output tokens/s: per-GPU units ("/GPU", and v0.6.1 A100's unlabelled "out tok/s",
    read as per GPU: that reading gives a consistent ~50% MFU over TP 1/4/8) are multiplied by tp."""
    _need_columns(header, STATIC_COLUMNS, origin, "trtllm-static")
    out = []
    for line, r in enumerate(rows, start=2):
        tp, batch = _int(r, "tp", origin, line), _int(r, "batch_size", origin, line)
        isl, osl = _int(r, "isl", origin, line), _int(r, "osl", origin, line)
        value, unit = _number(r, "throughput_value", origin, line), r["throughput_unit_as_published"].strip()
        if "(total)" in unit:
            total, how = value, f"published {value:g} out tok/s total"
        elif "/GPU" in unit or "does not say per GPU" in unit:
            total, how = value * tp, f"published {value:g} out tok/s per GPU x tp {tp}"
            if "does not say" in unit:
                how += " (header says only 'out tok/s'; read as per GPU)"
        else:
            raise E2EError(
                f"{origin}: row {line}: column 'throughput_unit_as_published' is {unit!r}; allowed: "
                "'out tok/s/GPU', 'out tok/s (total)' or the A100 v0.6.1 label"
            )
        model, hw, ver = _model(r["model"], origin), _hardware(r["gpu"], origin), r["trtllm_version"].strip()
        w, kv, c = _precision(r["precision"], origin)
        notes = [how, "gptSessionBenchmark static batching"] + ([KV_ASSUMED] if w != "fp16" else [])
        out.append(
            E2ERow(
                id=f"trtllm-static/{ver}/{model}/{hw}/{w}/tp{tp}/b{batch}/i{isl}-o{osl}",
                source="trtllm-static-batch",
                reference=r["source"].strip(),
                license=TRTLLM_LICENSE,
                model=model,
                hardware=hw,
                tp=tp,
                weight_dtype=w,
                kv_dtype=kv,
                compute_dtype=c,
                engine="trtllm",
                engine_version=ver,
                input_len=isl,
                output_len=osl,
                load="static",
                batch=batch,
                output_tokens_per_s=total,
                notes="; ".join(notes),
            )
        )
    return out


FIRST_TOKEN_COLUMNS = ("gpu", "precision", "model", "tp", "batch_size", "isl", "first_token_latency_ms", "source")


def _first_token_rows(header: list[str], rows: list[dict[str, str]], origin: str) -> list[E2ERow]:
    """Batch-1 time to first token (ms -> s); output_len 1, since only the first token is timed."""
    _need_columns(header, FIRST_TOKEN_COLUMNS, origin, "trtllm-first-token")
    out = []
    for line, r in enumerate(rows, start=2):
        tp, batch, isl = _int(r, "tp", origin, line), _int(r, "batch_size", origin, line), _int(r, "isl", origin, line)
        model, hw = _model(r["model"], origin), _hardware(r["gpu"], origin)
        w, kv, c = _precision(r["precision"], origin)
        notes = [
            f"published {r['first_token_latency_ms'].strip()} ms first-token latency",
            "output_len 1: only the first token is timed",
            "latency data from v0.5",
        ]
        out.append(
            E2ERow(
                id=f"trtllm-first-token/0.5.0/{model}/{hw}/{w}/tp{tp}/b{batch}/i{isl}",
                source="trtllm-first-token",
                reference=r["source"].strip(),
                license=TRTLLM_LICENSE,
                model=model,
                hardware=hw,
                tp=tp,
                weight_dtype=w,
                kv_dtype=kv,
                compute_dtype=c,
                engine="trtllm",
                engine_version="0.5.0",
                input_len=isl,
                output_len=1,
                load="static",
                batch=batch,
                ttft_s=_number(r, "first_token_latency_ms", origin, line) * MS,
                notes="; ".join(notes + ([KV_ASSUMED] if w != "fp16" else [])),
            )
        )
    return out


OVERVIEW_COLUMNS = (
    "model",
    "gpu",
    "num_gpus",
    "tp",
    "weight_precision",
    "isl",
    "osl",
    "total_output_tokens_per_s",
    "source",
)


def _overview_rows(header: list[str], rows: list[dict[str, str]], origin: str) -> list[E2ERow]:
    """Max-throughput runs (trtllm-bench, all requests at once): load rate, arrival_rate inf."""
    _need_columns(header, OVERVIEW_COLUMNS, origin, "trtllm-perf-overview")
    version = re.search(r"_v(\d+(?:\.\d+)*)_", Path(origin).name)
    ver = version.group(1) if version else ""
    out = []
    for line, r in enumerate(rows, start=2):
        tp, gpus = _int(r, "tp", origin, line), _int(r, "num_gpus", origin, line)
        pp = _int(r, "pp", origin, line) if r.get("pp") else 1
        if gpus % (tp * pp):
            raise E2EError(f"{origin}: row {line}: num_gpus {gpus} is not a multiple of tp x pp = {tp * pp}")
        isl, osl = _int(r, "isl", origin, line), _int(r, "osl", origin, line)
        model, hw = _model(r["model"], origin), _hardware(r["gpu"], origin)
        w, kv, c = _precision(r["weight_precision"], origin)
        total = _number(r, "total_output_tokens_per_s", origin, line)
        commit = re.search(r"@\s*([0-9a-f]{7})", r["source"])
        tag = ver or (commit.group(1) if commit else "unknown")
        out.append(
            E2ERow(
                id=f"trtllm-perf-overview/{tag}/{model}/{hw}/{w}/tp{tp}pp{pp}/i{isl}-o{osl}",
                source="trtllm-perf-overview",
                reference=r["source"].strip(),
                license=TRTLLM_LICENSE,
                model=model,
                hardware=hw,
                tp=tp,
                pp=pp,
                dp=gpus // (tp * pp),
                weight_dtype=w,
                kv_dtype=kv,
                compute_dtype=c,
                engine="trtllm",
                engine_version=ver,
                input_len=isl,
                output_len=osl,
                load="rate",
                arrival_rate=math.inf,
                output_tokens_per_s=total,
                notes="; ".join(
                    [
                        f"published {total:g} total output tok/s on {gpus} GPU(s)",
                        "trtllm-bench max throughput (PyTorch flow, uniform ISL/OSL)",
                        KV_ASSUMED,
                    ]
                ),
            )
        )
    return out
