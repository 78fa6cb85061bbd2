"""Importers from public measured-timing tables into the schema of :mod:`.schema`.

Formats (detected from the CSV header):

* aiconfigurator ``gemm_perf.csv`` (latency ms) -> ``gemm``
* aiconfigurator ``context_attention_perf.csv`` -> ``attention_prefill`` (kv_len = isl)
* aiconfigurator ``generation_attention_perf.csv`` -> ``attention_decode``
  (``step`` = cached tokens, so kv_len = step + 1; heads are per GPU after TP)
* aiconfigurator ``nccl_perf.csv`` (message_size in ELEMENTS of nccl_dtype) -> collectives
* aiconfigurator ``custom_allreduce_perf.csv`` (message_size in bf16 ELEMENTS) -> ``allreduce``
  with impl ``custom``
* vidur ``network/<topology>/all_reduce.csv`` (size in bytes, ms, one row per rank; rank 0
  and intra-node rows kept) -> ``allreduce``
* vidur ``compute/<gpu>/<model>/mlp.csv`` (ms, per-GPU TP shards) -> the four projection
  GEMMs of a layer

Sliding-window attention rows, beam search rows, attention rows whose KV-cache dtype
differs from the attention dtype and weight-only quantised GEMMs (``int8_wo``, ``int4_wo``)
are skipped (the schema has one dtype per row).  SmoothQuant (``sq``) GEMMs are int8.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..units import MS
from .schema import (
    CalibrationError,
    Measurements,
    concat,
    from_records,
    parse_table,
    read_csv_dicts,
    validate,
)

DTYPES = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "half": "fp16",
    "float16": "fp16",
    "fp16": "fp16",
    "fp8": "fp8",
    "fp8_block": "fp8",
    "int8": "int8",
    "float": "fp32",
    "float32": "fp32",
    "sq": "int8",
}
#: Weight-only quantised GEMMs (int weights, bf16 math): not one dtype, so not imported.
WEIGHT_ONLY = ("int8_wo", "int4_wo")
#: Folder names in the public tables -> built-in hardware names.
HARDWARE = {
    "h100_sxm": "h100-sxm",
    "a100_sxm": "a100-80gb",
    "b200_sxm": "b200",
    "h100_dgx": "h100-sxm",
    "a100_dgx": "a100-80gb",
    "h100": "h100-sxm",
    "a100": "a100-80gb",
    "h100_pairwise_nvlink": "h100-nvl",
    "a100_pairwise_nvlink": "a100-pcie",
}
NCCL_OPS = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "alltoall": "alltoall",
}
ELEMENT_BYTES = {"fp16": 2.0, "bf16": 2.0, "int8": 1.0, "fp8": 1.0, "fp32": 4.0}
Row = dict[str, object]


def guess_hardware(path: Path) -> str:
    """The hardware a public table describes, from its folder names (else 'unknown')."""
    for part in reversed(path.parts):
        if part in HARDWARE:
            return HARDWARE[part]
    return "unknown"


def _dtype(value: str, origin: str) -> str:
    try:
        return DTYPES[value]
    except KeyError:
        raise CalibrationError(
            f"{origin}: unknown dtype {value!r}; allowed: {', '.join(DTYPES)}"
        ) from None


def _gemm(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    if row["gemm_dtype"] in WEIGHT_ONLY:
        return []
    return [{
        "op": "gemm", "dtype": _dtype(row["gemm_dtype"], ctx["origin"]),
        "m": row["m"], "n": row["n"], "k": row["k"],
        "time_s": float(row["latency"]) * MS,
        "impl": row["gemm_dtype"] if row["gemm_dtype"] in ("fp8_block", "sq") else "",
    }]


def _attention(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    window = row.get("window_size", "0") or "0"
    if float(window) != 0 or float(row.get("beam_width", "1") or 1) != 1:
        return []
    dtype = _dtype(row["attn_dtype"], ctx["origin"])
    if _dtype(row["kv_cache_dtype"], ctx["origin"]) != dtype:
        return []
    decode = ctx["format"] == "aiconfigurator-generation-attention"
    isl = float(row["isl"])
    return [{
        "op": "attention_decode" if decode else "attention_prefill", "dtype": dtype,
        "batch": row["batch_size"], "q_len": 1.0 if decode else isl,
        "kv_len": float(row["step"]) + 1.0 if decode else isl,
        "num_heads": row["num_heads"], "num_kv_heads": row["num_key_value_heads"],
        "head_dim": row["head_dim"], "time_s": float(row["latency"]) * MS,
        "impl": row.get("kernel_source", ""),
    }]


def _nccl(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    dtype = _dtype(row["nccl_dtype"], ctx["origin"])
    op = NCCL_OPS.get(row["op_name"])
    if op is None:
        return []
    return [{
        "op": op, "dtype": dtype, "num_devices": row["num_gpus"],
        "message_bytes": float(row["message_size"]) * ELEMENT_BYTES[dtype],
        "time_s": float(row["latency"]) * MS, "impl": "nccl",
    }]


def _custom_allreduce(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    dtype = _dtype(row["allreduce_dtype"], ctx["origin"])
    return [{
        "op": "allreduce", "dtype": dtype, "num_devices": row["num_gpus"],
        "message_bytes": float(row["message_size"]) * ELEMENT_BYTES[dtype],
        "time_s": float(row["latency"]) * MS, "impl": "custom",
    }]


def _vidur_allreduce(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    workers = float(row["num_workers"])
    if float(row["rank"]) != 0 or float(row["devices_per_node"]) < workers:
        return []
    return [{
        "op": "allreduce", "dtype": "fp16", "num_devices": workers,
        "message_bytes": row["size"], "impl": "nccl",
        "time_s": float(row["time_stats.all_reduce.median"]) * MS,
    }]


def _vidur_mlp(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    d, f = float(row["n_embd"]), float(row["n_expanded_embd"])
    heads, kv_heads = float(row["n_head"]), float(row["n_kv_head"])
    tp = float(row["num_tensor_parallel_workers"])
    head_dim = d / heads
    gated = row["use_gated_mlp"].strip().lower() == "true"
    shapes = {  # op -> (k, n) of the per-GPU shard
        "attn_pre_proj": (d, (heads + 2 * kv_heads) * head_dim / tp),
        "attn_post_proj": (heads * head_dim / tp, d),
        "mlp_up_proj": (d, (2 * f if gated else f) / tp),
        "mlp_down_proj": (f / tp, d),
    }
    return [{
        "op": "gemm", "dtype": "fp16", "m": row["num_tokens"], "k": k, "n": n,
        "time_s": float(row[f"time_stats.{name}.median"]) * MS, "impl": f"vidur:{name}",
    } for name, (k, n) in shapes.items()]


FORMATS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, str], dict[str, str]], list[Row]]]] = {
    "aiconfigurator-gemm": (("gemm_dtype", "m", "n", "k", "latency"), _gemm),
    "aiconfigurator-generation-attention": (("isl", "step", "num_key_value_heads"), _attention),
    "aiconfigurator-context-attention": (("isl", "num_key_value_heads", "attn_dtype"), _attention),
    "aiconfigurator-nccl": (("op_name", "nccl_dtype", "num_gpus", "message_size"), _nccl),
    "aiconfigurator-custom-allreduce": (("allreduce_dtype", "num_gpus", "message_size"),
                                        _custom_allreduce),
    "vidur-allreduce": (("time_stats.all_reduce.median", "num_workers", "size"),
                        _vidur_allreduce),
    "vidur-mlp": (("time_stats.mlp_up_proj.median", "num_tokens", "n_embd"), _vidur_mlp),
}
FILE_NAMES = {
    "aiconfigurator-generation-attention": "generation_attention",
    "aiconfigurator-context-attention": "context_attention",
}


def detect_format(header: list[str], path: Path) -> str:
    """The public format a header belongs to, or 'schema' for this package's own."""
    if "op" in header and ("time_s" in header or "hardware" in header):
        return "schema"
    cols = set(header)
    matches = [name for name, (need, _) in FORMATS.items() if set(need) <= cols]
    if len(matches) > 1:  # context vs generation attention share columns
        named = [m for m in matches if FILE_NAMES.get(m, "~") in path.name]
        matches = named or matches
    if not matches:
        known = ", ".join(["schema", *FORMATS])
        raise CalibrationError(
            f"{path}: unrecognised measurement columns ({', '.join(header[:6])}, ...); "
            f"known formats: {known}"
        )
    return matches[0]


def _source(path: Path) -> str:
    text = path.as_posix()
    match = re.search(r"(aiconfigurator|vidur)/.*", text)
    return match.group(0) if match else path.name


def import_file(path: str | Path, hardware: str | None = None) -> Measurements:
    """Read a measurement file in this schema or any public format above."""
    path = Path(path)
    header, rows = read_csv_dicts(path)
    fmt = detect_format(header, path)
    if fmt == "schema":
        return parse_table(header, rows, str(path))
    convert = FORMATS[fmt][1]
    ctx = {"origin": str(path), "format": fmt}
    records: list[Row] = []
    for lineno, row in enumerate(rows, start=2):
        try:
            records.extend(convert(row, ctx))
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise CalibrationError(f"{path}: row {lineno}: cannot read {fmt} row ({exc})") from None
    name = hardware or guess_hardware(path)
    source = f"{_source(path)}"
    for rec in records:
        rec.setdefault("hardware", name)
        rec.setdefault("source", source)
    return validate(from_records(records), str(path))


def import_files(paths: list[str | Path], hardware: str | None = None) -> Measurements:
    """Concatenate :func:`import_file` over several files."""
    return concat([import_file(p, hardware) for p in paths])
