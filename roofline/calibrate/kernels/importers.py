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
* aiconfigurator ``moe_perf``, ``context_mla_perf``, ``generation_mla_perf`` and ``mla_bmm_perf``
  -> ``moe``, ``mla_prefill``, ``mla_decode`` and ``bmm`` (:mod:`.fused`)

Sliding-window attention rows, beam search rows, attention rows whose KV-cache dtype
differs from the attention dtype and weight-only quantised GEMMs (``int8_wo``, ``int4_wo``)
are skipped (the schema has one dtype per row).  SmoothQuant (``sq``) GEMMs are int8.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from roofline.calibrate.kernels.cells import DTYPES, Row, RowError, _cell, _dtype, _ms, _num
from roofline.calibrate.kernels.fused import FILE_NAMES as FUSED_FILE_NAMES
from roofline.calibrate.kernels.fused import FORMATS as FUSED_FORMATS
from roofline.core.errors import shown
from roofline.core.units import dtype_bytes
from roofline.kernels.csvfile import iter_csv
from roofline.kernels.schema import CalibrationError, Measurements, TableBuilder, concat, parse_table

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
__all__ = ["DTYPES", "RowError", "import_file", "import_files"]


def guess_hardware(path: Path) -> str:
    """The hardware a public table describes, from its folder names (else 'unknown')."""
    for part in reversed(path.parts):
        if part in HARDWARE:
            return HARDWARE[part]
    return "unknown"


def _gemm(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    kind = _cell(row, "gemm_dtype")
    if kind in WEIGHT_ONLY:
        return []
    return [
        {
            "op": "gemm",
            "dtype": _dtype(kind, ctx["origin"]),
            "m": _num(row, "m"),
            "n": _num(row, "n"),
            "k": _num(row, "k"),
            "time_s": _ms(row, "latency"),
            "impl": kind if kind in ("fp8_block", "sq") else "",
        }
    ]


def _attention(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    window = _num({"window_size": row.get("window_size") or "0"}, "window_size")
    if window != 0 or _num({"beam_width": row.get("beam_width") or "1"}, "beam_width") != 1:
        return []
    dtype = _dtype(_cell(row, "attn_dtype"), ctx["origin"])
    if _dtype(_cell(row, "kv_cache_dtype"), ctx["origin"]) != dtype:
        return []
    decode = ctx["format"] == "aiconfigurator-generation-attention"
    isl = _num(row, "isl")
    return [
        {
            "op": "attention_decode" if decode else "attention_prefill",
            "dtype": dtype,
            "batch": _num(row, "batch_size"),
            "q_len": 1.0 if decode else isl,
            "kv_len": _num(row, "step") + 1.0 if decode else isl,
            "num_heads": _num(row, "num_heads"),
            "num_kv_heads": _num(row, "num_key_value_heads"),
            "head_dim": _num(row, "head_dim"),
            "time_s": _ms(row, "latency"),
            "impl": row.get("kernel_source") or "",
        }
    ]


def _nccl(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    dtype = _dtype(_cell(row, "nccl_dtype"), ctx["origin"])
    op = NCCL_OPS.get(_cell(row, "op_name"))
    if op is None:
        return []
    return [
        {
            "op": op,
            "dtype": dtype,
            "num_devices": _num(row, "num_gpus"),
            "message_bytes": _num(row, "message_size") * dtype_bytes(dtype),
            "time_s": _ms(row, "latency"),
            "impl": "nccl",
        }
    ]


def _custom_allreduce(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    dtype = _dtype(_cell(row, "allreduce_dtype"), ctx["origin"])
    return [
        {
            "op": "allreduce",
            "dtype": dtype,
            "num_devices": _num(row, "num_gpus"),
            "message_bytes": _num(row, "message_size") * dtype_bytes(dtype),
            "time_s": _ms(row, "latency"),
            "impl": "custom",
        }
    ]


def _vidur_allreduce(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    workers = _num(row, "num_workers")
    if _num(row, "rank") != 0 or _num(row, "devices_per_node") < workers:
        return []
    return [
        {
            "op": "allreduce",
            "dtype": "fp16",
            "num_devices": workers,
            "message_bytes": _num(row, "size"),
            "impl": "nccl",
            "time_s": _ms(row, "time_stats.all_reduce.median"),
        }
    ]


def _vidur_mlp(row: dict[str, str], ctx: dict[str, str]) -> list[Row]:
    d, f = _num(row, "n_embd"), _num(row, "n_expanded_embd")
    heads, kv_heads = _num(row, "n_head", positive=True), _num(row, "n_kv_head")
    tp = _num(row, "num_tensor_parallel_workers", positive=True)
    head_dim = d / heads
    gated = _cell(row, "use_gated_mlp").strip().lower() == "true"
    shapes = {  # op -> (k, n) of the per-GPU shard
        "attn_pre_proj": (d, (heads + 2 * kv_heads) * head_dim / tp),
        "attn_post_proj": (heads * head_dim / tp, d),
        "mlp_up_proj": (d, (2 * f if gated else f) / tp),
        "mlp_down_proj": (f / tp, d),
    }
    return [
        {
            "op": "gemm",
            "dtype": "fp16",
            "m": _num(row, "num_tokens"),
            "k": k,
            "n": n,
            "time_s": _ms(row, f"time_stats.{name}.median"),
            "impl": f"vidur:{name}",
        }
        for name, (k, n) in shapes.items()
    ]


FORMATS: dict[str, tuple[tuple[str, ...], Callable[[dict[str, str], dict[str, str]], list[Row]]]] = {
    "aiconfigurator-gemm": (("gemm_dtype", "m", "n", "k", "latency"), _gemm),
    "aiconfigurator-generation-attention": (("isl", "step", "num_key_value_heads"), _attention),
    "aiconfigurator-context-attention": (("isl", "num_key_value_heads", "attn_dtype"), _attention),
    "aiconfigurator-nccl": (("op_name", "nccl_dtype", "num_gpus", "message_size"), _nccl),
    "aiconfigurator-custom-allreduce": (("allreduce_dtype", "num_gpus", "message_size"), _custom_allreduce),
    "vidur-allreduce": (("time_stats.all_reduce.median", "num_workers", "size"), _vidur_allreduce),
    "vidur-mlp": (("time_stats.mlp_up_proj.median", "num_tokens", "n_embd"), _vidur_mlp),
    **FUSED_FORMATS,
}
FILE_NAMES = {
    "aiconfigurator-generation-attention": "generation_attention",
    "aiconfigurator-context-attention": "context_attention",
    **FUSED_FILE_NAMES,
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
            f"{path}: unrecognised measurement columns ({shown(', '.join(header[:6]), 60)}, ...); "
            f"known formats: {known}"
        )
    return matches[0]


def _source(path: Path) -> str:
    text = path.as_posix()
    match = re.search(r"(aiconfigurator|vidur)/.*", text)
    return match.group(0) if match else path.name


def import_file(path: str | Path, hardware: str | None = None) -> Measurements:
    """Read a measurement file in this schema or any public format above.

    Rows are streamed and checked one by one; a bad cell is one line naming the file, the
    row and the source column.  A file whose every row is skipped is an error, not an empty table.
    """
    path = Path(path)
    header, rows = iter_csv(path)
    try:
        fmt = detect_format(header, path)
        if fmt == "schema":
            return parse_table(header, rows, str(path))
        return _convert(path, fmt, rows, hardware or guess_hardware(path))
    finally:
        rows.close()


def _convert(path: Path, fmt: str, rows: Iterator[tuple[int, dict[str, str]]], hardware: str) -> Measurements:
    """Rows of a public table converted into the schema, each checked as it is added."""
    convert = FORMATS[fmt][1]
    ctx = {"origin": str(path), "format": fmt}
    builder, seen, source = TableBuilder(), 0, _source(path)
    for lineno, row in rows:
        seen += 1
        where = f"{path}: row {lineno}"
        try:
            records = convert(row, ctx)
        except RowError as exc:
            raise CalibrationError(f"{where}: {exc}") from None
        except (KeyError, ValueError, TypeError, AttributeError, ArithmeticError) as exc:
            raise CalibrationError(f"{where}: cannot read {fmt} row ({shown(exc, 60)})") from None
        for rec in records:
            rec.setdefault("hardware", hardware)
            rec.setdefault("source", source)
            builder.add(rec, f"{where} ({fmt})")
    if not len(builder):
        raise CalibrationError(
            f"{path}: none of its {seen} rows could be imported (sliding-window, beam-search, mixed "
            "KV-dtype and weight-only rows, other ranks and unknown ops are skipped)"
        )
    return builder.build()


def import_files(paths: list[str | Path], hardware: str | None = None) -> Measurements:
    """Concatenate :func:`import_file` over several files."""
    return concat([import_file(p, hardware) for p in paths])
