"""The cases of ``benchmarks/boundaries.py``: hostile inputs of the kinds of issue 28, on every command.

Each :class:`Case` is one command line (or one Python API call) run in an empty folder holding its
``files``; ``expect`` says whether it must be refused (exit 2, one line) or must work (exit 0).
Groups: numbers in trace/lengths/e2e/vendor-JSON cells, encodings and endless inputs on every file
argument, contradictory flags, impossible model configs, catalog names and homes, output files that
are devices or FIFOs, CSV formula injection, the Python API, and work bounds.
"""

from __future__ import annotations

import functools
import gzip
import json
from dataclasses import dataclass, field

FIFO, FIFO_READ, NULLDEV, DIR = "<fifo>", "<fifo-with-reader>", "<null-device>", "<dir>"


@dataclass(frozen=True)
class Case:
    group: str
    label: str
    argv: tuple[str, ...] = ()
    files: dict[str, object] = field(default_factory=dict)
    expect: str = "refuse"  # refuse | ok
    needles: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    python: str = ""
    nodes: tuple[str, ...] = ()  # device / FIFO names that must still be one afterwards
    csv_out: str = ""  # a CSV the command writes, scanned for formula cells
    timeout_s: float = 120.0


M8 = ("-m", "llama-3-8b", "-H", "h100-sxm")
SIM = ("simulate", *M8, "--requests", "20")
HUGE = "1" + "0" * 400
#: Bad numbers as CSV cells: what each means (label) -> text.
BAD_CELLS = {
    "400-digit": HUGE,
    "1e300": "1e300",
    "nan": "nan",
    "inf": "inf",
    "-inf": "-inf",
    "negative": "-5",
    "zero": "0",
    "text": "abc",
    "boolean": "true",
    "fraction": "1.5",
    "empty": "",
    "1e400": "1e400",
    "hex": "0x10",
    "comma": "1,5",
}
#: Bad JSON values (as JSON text).
BAD_JSON = {
    "400-digit": HUGE,
    "1e300": "1e300",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "negative": "-5",
    "zero": "0",
    "text": '"abc"',
    "numeric text": '"12"',
    "boolean": "true",
    "list": "[]",
    "object": "{}",
    "fraction": "1.5",
    "1e400": "1e400",
}


def _csv(header: str, row: str) -> bytes:
    return f"{header}\n{row}\n".encode()


# --------------------------------------------------------------------------- numbers in cells

TRACE_HEADER, TRACE_ROW = "arrival_time_s,input_len,output_len", ["0.5", "64", "8"]
LENGTHS_HEADER, LENGTHS_ROW = "input_len,output_len,count", ["64", "8", "3"]
E2E_HEADER = (
    "id,source,model,hardware,tp,pp,ep,dp,weight_dtype,kv_dtype,compute_dtype,engine,load,batch,concurrency,"
    "arrival_rate,num_requests,input_len,output_len,ttft_s,tpot_s,e2e_s,output_tokens_per_s,requests_per_s"
)
E2E_ROW = (
    "r/1,mine,llama-3-8b,h100-sxm,1,1,1,1,bf16,bf16,bf16,vllm,concurrency,,8,,100,512,64,0.05,0.01,0.7,700,10"
).split(",")
LENGTH_COMMANDS = {
    "simulate": (*SIM, "--qps", "2"),
    "request": ("request", *M8),
    "plan": ("plan", *M8, "--qps", "1", "--weights", "bf16", "--kv-dtype", "bf16", "--tp", "1"),
}
VLLM = json.loads(
    '{"date": "20250614-101500", "backend": "openai", "model_id": "meta-llama/Llama-3.1-8B-Instruct",'
    '"num_prompts": 200, "request_rate": "inf", "max_concurrency": 16, "duration": 13.4, "completed": 200,'
    '"total_input_tokens": 204800, "total_output_tokens": 25600, "request_throughput": 14.9,'
    '"output_throughput": 1910.4, "mean_ttft_ms": 45.2, "median_ttft_ms": 41.8, "p99_ttft_ms": 88.5,'
    '"mean_tpot_ms": 8.05, "median_tpot_ms": 8.01, "p99_tpot_ms": 9.12, "mean_itl_ms": 8.04, "mean_e2el_ms": 250.0}'
)
VLLM_KEYS = (
    "completed",
    "max_concurrency",
    "request_rate",
    "total_input_tokens",
    "total_output_tokens",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "mean_itl_ms",
    "mean_e2el_ms",
    "output_throughput",
    "request_throughput",
)


def _replace(row: list[str], header: str, column: str, value: str) -> str:
    cells = list(row)
    cells[header.split(",").index(column)] = value if "," not in value else f'"{value}"'
    return ",".join(cells)


def cell_cases() -> list[Case]:
    out = []
    for column in TRACE_HEADER.split(","):
        for label, value in BAD_CELLS.items():
            if column == "arrival_time_s" and label in ("zero", "fraction"):
                continue  # 0 s and 1.5 s are valid arrival times
            text = _csv(TRACE_HEADER, _replace(TRACE_ROW, TRACE_HEADER, column, value))
            out.append(Case("trace cell", f"{column}={label}", (*SIM, "--trace", "t.csv"), {"t.csv": text}))
    for name, command in LENGTH_COMMANDS.items():
        for column in LENGTHS_HEADER.split(","):
            for label, value in BAD_CELLS.items():
                if column == "count" and label in ("zero", "fraction", "empty"):
                    continue  # a zero or fractional weight is a valid histogram weight; empty = 1
                text = _csv(LENGTHS_HEADER, _replace(LENGTHS_ROW, LENGTHS_HEADER, column, value))
                out.append(
                    Case(
                        f"lengths cell ({name})",
                        f"{column}={label}",
                        (*command, "--lengths-csv", "l.csv"),
                        {"l.csv": text},
                    )
                )
    for column in ("tp", "dp", "batch", "concurrency", "num_requests", "input_len", "output_len", "ttft_s", "tpot_s"):
        for label, value in BAD_CELLS.items():
            if label == "empty" and column in ("tp", "dp", "batch", "ttft_s", "tpot_s", "num_requests"):
                continue  # empty = default 1, not needed, or not measured
            if label == "fraction" and column in ("input_len", "output_len", "ttft_s", "tpot_s"):
                continue  # mean lengths and seconds may be fractions
            row = _replace(E2E_ROW, E2E_HEADER, column, value)
            text = _csv(E2E_HEADER, row)
            out.append(
                Case("e2e row (validate)", f"{column}={label}", ("validate", "--rows", "r.csv"), {"r.csv": text})
            )
            out.append(
                Case(
                    "e2e row (import)",
                    f"{column}={label}",
                    ("e2e", "import", "r.csv", "--out", "o.csv"),
                    {"r.csv": text},
                )
            )
    for key in VLLM_KEYS:
        for label, value in BAD_JSON.items():
            if key == "request_rate" and label in ("Infinity",):
                continue  # vLLM writes inf for "all at once"
            if label == "fraction" and key not in ("completed", "max_concurrency"):
                continue  # milliseconds, rates and token totals may be fractions
            if label == "zero" and key not in ("completed", "max_concurrency", "total_input_tokens"):
                continue  # vLLM writes 0 for a latency or rate it did not measure
            body = json.dumps(VLLM).replace(f'"{key}": {json.dumps(VLLM[key])}', f'"{key}": {value}')
            argv = ("e2e", "import", "v.json", "--hardware", "h100-sxm", "--out", "o.csv")
            out.append(Case("vllm json", f"{key}={label}", argv, {"v.json": body.encode()}))
    return out


def length_limit_cases() -> list[Case]:
    """Lengths beyond the model's context (llama-3-8b: max_position_embeddings 8192) and over 2**31."""
    out = []
    for value in ("100000", "2147483647", "2147483648"):
        trace = _csv(TRACE_HEADER, f"0,{value},8")
        out.append(Case("beyond max length", f"trace input_len={value}", (*SIM, "--trace", "t.csv"), {"t.csv": trace}))
        lengths = _csv(LENGTHS_HEADER, f"{value},8,1")
        for name, command in LENGTH_COMMANDS.items():
            out.append(
                Case(
                    "beyond max length",
                    f"lengths ({name}) {value}",
                    (*command, "--lengths-csv", "l.csv"),
                    {"l.csv": lengths},
                )
            )
        row = _csv(E2E_HEADER, _replace(E2E_ROW, E2E_HEADER, "input_len", value))
        # measured rows are facts (published runs go past max_position_embeddings): refused past 2**31-1 only
        expect = "refuse" if int(value) > 2**31 - 1 else "any"
        out.append(
            Case(
                "beyond max length",
                f"validate row {value}",
                ("validate", "--rows", "r.csv"),
                {"r.csv": row},
                expect=expect,
            )
        )
        out.append(Case("beyond max length", f"simulate -i {value}", (*SIM, "--qps", "1", "-i", value, "-o", "8")))
        out.append(
            Case("beyond max length", f"simulate --lengths {value}:8", (*SIM, "--qps", "1", "--lengths", f"{value}:8"))
        )
    return out


# --------------------------------------------------------------------------- encodings and endless inputs

GOOD_TRACE = _csv(TRACE_HEADER, "0.5,64,8")
GOOD_LENGTHS = _csv(LENGTHS_HEADER, "64,8,1")
GOOD_E2E = _csv(E2E_HEADER, ",".join(E2E_ROW))
GOOD_MEASURE = (
    b"hardware,op,dtype,m,n,k,time_s,source\nh100-sxm,gemm,bf16,1024,4096,4096,0.0001,mine\n"
    b"h100-sxm,gemm,bf16,2048,4096,4096,0.0002,mine\n"
)
GOOD_CONFIG = json.dumps(
    {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
    }
).encode()
GOOD_MODEL_YAML = (
    b"name: mine\nd_model: 4096  # from config\nd_ff: 14336  # c\nnum_layers: 32  # c\nnum_heads: 32  # c\n"
    b"num_kv_heads: 8  # c\nhead_dim: 128  # c\nvocab_size: 128256  # c\n"
)
GOOD_HW_YAML = (
    b"name: chip\nflops_per_s: {bf16: 1.97e14}\nhbm_bytes: 16 GiB\nhbm_bandwidth_bytes_per_s: 819 GB/s\n"
    b"ici_bandwidth_bytes_per_s: 4.5e+10\nici_links: 4\nici_hop_latency_s: 1 us\nprice_per_chip_hour: 1.2\n"
)
#: file argument -> (command line with FILE in place of the path, the file's name, a valid body, text kind)
FILE_INPUTS: dict[str, tuple[tuple[str, ...], str, bytes, str]] = {
    "simulate --trace": ((*SIM, "--trace", "FILE"), "t.csv", GOOD_TRACE, "csv"),
    "simulate --lengths-csv": ((*SIM, "--qps", "1", "--lengths-csv", "FILE"), "l.csv", GOOD_LENGTHS, "csv"),
    "request --lengths-csv": (("request", *M8, "--lengths-csv", "FILE"), "l.csv", GOOD_LENGTHS, "csv"),
    "plan --lengths-csv": (
        ("plan", *M8, "--qps", "1", "--tp", "1", "--weights", "bf16", "--kv-dtype", "bf16", "--lengths-csv", "FILE"),
        "l.csv",
        GOOD_LENGTHS,
        "csv",
    ),
    "validate --rows": (("validate", "--rows", "FILE"), "r.csv", GOOD_E2E, "csv"),
    "e2e import csv": (("e2e", "import", "FILE", "--out", "o.csv"), "r.csv", GOOD_E2E, "csv"),
    "e2e import json": (
        ("e2e", "import", "FILE", "--out", "o.csv", "--hardware", "h100-sxm"),
        "v.json",
        json.dumps(VLLM).encode(),
        "json",
    ),
    "calibrate fit": (("calibrate", "fit", "FILE", "--out", "p.yaml"), "m.csv", GOOD_MEASURE, "csv"),
    "calibrate import": (("calibrate", "import", "FILE", "--out", "o.csv"), "m.csv", GOOD_MEASURE, "csv"),
    "calibrate evaluate": (("calibrate", "evaluate", "FILE", "--profile", "h100-sxm"), "m.csv", GOOD_MEASURE, "csv"),
    "model import": (("model", "import", "FILE"), "config.json", GOOD_CONFIG, "json"),
    "step --model config.json": (("step", "--model", "FILE", "-H", "h100-sxm"), "config.json", GOOD_CONFIG, "json"),
    "step --model yaml": (("step", "--model", "FILE", "-H", "h100-sxm"), "m.yaml", GOOD_MODEL_YAML, "yaml"),
    "step --hardware yaml": (("step", "-m", "llama-3-8b", "--hardware", "FILE"), "h.yaml", GOOD_HW_YAML, "yaml"),
    "model add": (("model", "add", "FILE"), "m.yaml", GOOD_MODEL_YAML, "yaml"),
    "hardware add": (("hardware", "add", "FILE"), "h.yaml", GOOD_HW_YAML, "yaml"),
}


def _encodings(body: bytes, kind: str) -> dict[str, object]:
    text = body.decode()
    out: dict[str, object] = {
        "latin-1": _latin1(body, kind),
        "utf-16 with BOM": text.encode("utf-16"),
        "utf-16-le no BOM": text.encode("utf-16-le"),
        "utf-32": text.encode("utf-32"),
        "binary": bytes(range(256)) * 64,
        "NUL inside": body[: len(body) // 2] + b"\x00" + body[len(body) // 2 :],
        "empty": b"",
        "folder": DIR,
        "FIFO without writer": FIFO,
        "gzip bomb": gzip.compress(body) + _bomb(),
        "truncated gzip": gzip.compress(body * 50)[:-20],
    }
    if kind == "json":
        out["nested 100k"] = b"[" * 100_000 + b"]" * 100_000
        out["nested 40 objects"] = ('{"a": ' * 40 + "1" + "}" * 40).encode()
    return out


@functools.cache
def _bomb() -> bytes:
    """A gzip member of 200 MB of newlines (about 200 kB), over every input's size limit (the largest, a
    trace's, is 128 MiB): appended to a file's own member."""
    return gzip.compress(b"\n" * 200_000_000, compresslevel=9)


def _latin1(body: bytes, kind: str) -> bytes:
    """The file with one Latin-1 'é' (byte 0xe9) in a name or comment."""
    if kind == "json":
        return body.replace(b'"llama"', '"llamé"'.encode("latin-1"), 1).replace(b'"openai"', b'"\xe9"', 1)
    if kind == "yaml":
        return body.replace(b"\n", b" # caf\xe9\n", 1)
    return _latin1_csv(body)


def _latin1_csv(body: bytes) -> bytes:
    lines = body.split(b"\n")
    return b"\n".join([lines[0], lines[1].replace(b",", "é,".encode("latin-1"), 1), *lines[2:]])


def encoding_cases() -> list[Case]:
    out = []
    for name, (argv, filename, body, kind) in FILE_INPUTS.items():
        for label, data in _encodings(body, kind).items():
            args = tuple(filename if a == "FILE" else a for a in argv)
            out.append(Case(f"encoding: {name}", label, args, {filename: data}, needles=(filename,)))
        for device in ("/dev/zero", "/dev/urandom"):
            args = tuple(device if a == "FILE" else a for a in argv)
            out.append(Case(f"encoding: {name}", device, args, needles=(device,), timeout_s=30))
        good = tuple(filename if a == "FILE" else a for a in argv)
        out.append(Case(f"encoding: {name}", "valid (control)", good, {filename: body}, expect="ok"))
    return out


# --------------------------------------------------------------------------- contradictory flags

SINGLE_DEPLOYMENT = {
    "step": ("step", *M8),
    "request": ("request", *M8, "-i", "128", "-o", "16"),
    "serve": ("serve", *M8, "-i", "128", "-o", "16"),
    "simulate": (*SIM, "--qps", "1", "-i", "64", "-o", "8"),
    "diff": ("diff", *M8, "--with", "chips=2"),
}
BAD_WEIGHTS = ("mlp=int8,mlp=fp8", "bf16,fp8", "bf16,", ",bf16", "bf16,,mlp=fp8", "mlp=", "=fp8", "MLP=fp8", "mlp=fp9")


def flag_cases() -> list[Case]:
    out = []
    for name, argv in SINGLE_DEPLOYMENT.items():
        for weights in BAD_WEIGHTS:
            out.append(
                Case(f"flags: {name}", f"--weights {weights}", (*argv, "--weights", weights), needles=("--weights",))
            )
        for tp in ("3", "5", "7", "64"):
            chips = ("--chips", tp) if name in ("step", "request", "serve", "diff") else ()
            # the closed forms price a what-if split (heads / tp); only a serving engine (simulate) refuses it
            expect = "refuse" if name == "simulate" else "any"
            out.append(
                Case(f"flags: {name}", f"--tp {tp} (32 heads, 8 KV heads)", (*argv, *chips, "--tp", tp), expect=expect)
            )
    for value in ("1.5", "true", "1e300", "-1", "0", "", "nan", HUGE):
        out.append(
            Case(
                "flags: simulate", f"--concurrency {value[:12]}", (*SIM, "--concurrency", value, "-i", "64", "-o", "8")
            )
        )
        out.append(
            Case(
                "flags: simulate",
                f"--replicas {value[:12]}",
                (*SIM, "--qps", "1", "-i", "9", "-o", "8", "--replicas", value),
            )
        )
    out.append(Case("flags: simulate", "two loads", (*SIM, "--qps", "1", "--concurrency", "2", "-i", "9", "-o", "8")))
    out.append(Case("flags: simulate", "--trace with -i", (*SIM, "--trace", "t.csv", "-i", "9"), {"t.csv": GOOD_TRACE}))
    out.append(
        Case("flags: simulate", "--warmup >= requests", (*SIM, "--qps", "1", "-i", "9", "-o", "8", "--warmup", "20"))
    )
    out.append(
        Case(
            "flags: simulate",
            "--cv with --concurrency",
            (*SIM, "--concurrency", "2", "-i", "9", "-o", "8", "--cv", "2"),
        )
    )
    return out


# --------------------------------------------------------------------------- impossible model configs

CONFIG_BREAKS = {
    "KV heads not dividing heads": {"num_key_value_heads": 7},
    "KV heads above heads": {"num_key_value_heads": 64},
    "rotary dim > head dim": {"head_dim": 64, "rotary_dim": 128},
    "partial rotary factor 2": {"partial_rotary_factor": 2.0},
    "hidden not a multiple of heads, no head_dim": {"hidden_size": 4001},
    "zero layers": {"num_hidden_layers": 0},
    "boolean heads": {"num_attention_heads": True},
    "float heads": {"num_attention_heads": 32.5},
    "string hidden": {"hidden_size": "4096"},
    "negative vocab": {"vocab_size": -1},
    "huge layers": {"num_hidden_layers": 10**30},
}
SSM_CONFIG = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "hidden_size": 4096,
    "intermediate_size": 21504,
    "num_hidden_layers": 4,
    "hybrid_override_pattern": "M-M*",
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "mamba_num_heads": 128,
    "mamba_head_dim": 64,
    "ssm_state_size": 128,
    "n_groups": 8,
    "conv_kernel": 4,
    "vocab_size": 131072,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}
SSM_BREAKS = {
    "SSM groups not dividing heads": {"n_groups": 7},
    "SSM heads x head dim != expand x hidden": {"mamba_num_heads": 100},
    "SSM zero state": {"ssm_state_size": 0},
}
LINEAR_CONFIG = {
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "intermediate_size": 5120,
    "num_hidden_layers": 8,
    "full_attention_interval": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "linear_num_value_heads": 32,
    "linear_num_key_heads": 16,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "vocab_size": 151936,
    "max_position_embeddings": 262144,
    "torch_dtype": "bfloat16",
}
LINEAR_BREAKS = {
    "linear-attention value heads not dividing key heads": {"linear_num_value_heads": 33},
    "linear-attention zero key heads": {"linear_num_key_heads": 0},
}


def model_config_cases() -> list[Case]:
    out = []
    base = json.loads(GOOD_CONFIG)
    for label, change in CONFIG_BREAKS.items():
        body = json.dumps({**base, **change}).encode()
        out.append(Case("model config", f"{label} (import)", ("model", "import", "config.json"), {"config.json": body}))
        out.append(
            Case(
                "model config",
                f"{label} (step)",
                ("step", "--model", "config.json", "-H", "h100-sxm"),
                {"config.json": body},
            )
        )
    for config, breaks in ((SSM_CONFIG, SSM_BREAKS), (LINEAR_CONFIG, LINEAR_BREAKS)):
        out.append(
            Case(
                "model config",
                f"{config['model_type']} valid (control)",
                ("model", "import", "config.json"),
                {"config.json": json.dumps(config).encode()},
                expect="any",
            )
        )
        for label, change in breaks.items():
            body = json.dumps({**config, **change}).encode()
            out.append(
                Case("model config", f"{label} (import)", ("model", "import", "config.json"), {"config.json": body})
            )
            out.append(
                Case(
                    "model config",
                    f"{label} (step)",
                    ("step", "--model", "config.json", "-H", "h100-sxm"),
                    {"config.json": body},
                )
            )
    yaml_breaks = {
        "KV heads not dividing": (b"num_kv_heads: 8", b"num_kv_heads: 7"),
        "KV heads above heads": (b"num_kv_heads: 8", b"num_kv_heads: 64"),
        "rotary dim > head dim": (b"head_dim: 128  # c\n", b"head_dim: 128  # c\nrotary_dim: 256  # c\n"),
        "zero heads": (b"num_heads: 32", b"num_heads: 0"),
    }
    for label, (old, new) in yaml_breaks.items():
        body = GOOD_MODEL_YAML.replace(old, new)
        out.append(
            Case(
                "model config",
                f"yaml {label} (step)",
                ("step", "--model", "m.yaml", "-H", "h100-sxm"),
                {"m.yaml": body},
            )
        )
        out.append(Case("model config", f"yaml {label} (add)", ("model", "add", "m.yaml"), {"m.yaml": body}))
    return out


# --------------------------------------------------------------------------- catalog

BAD_SAVE_NAMES = {
    "empty": "",
    "newline": "mine\n",
    "inner newline": "a\nb",
    "path": "../escape",
    "slash": "a/b",
    "long": "x" * 300,
    "upper": "Mine",
    "dash first": "-mine",
    "formula": "=cmd",
    "space": "my model",
    "built-in": "llama-3-8b",
    "yaml suffix": "mine.yaml",
    "NUL": "a\x00b",
}


def catalog_cases() -> list[Case]:
    out = []
    home = {"ROOFLINE_HOME": "home"}
    for label, name in BAD_SAVE_NAMES.items():
        if "\x00" in name:
            continue  # argv cannot hold a NUL
        out.append(
            Case(
                "catalog --save",
                f"model import --save --name {label}",
                ("model", "import", "config.json", "--save", "--name", name),
                {"config.json": GOOD_CONFIG},
                env=home,
            )
        )
        out.append(
            Case(
                "catalog --save",
                f"model add --name {label}",
                ("model", "add", "m.yaml", "--name", name),
                {"m.yaml": GOOD_MODEL_YAML},
                env=home,
            )
        )
        out.append(
            Case(
                "catalog --save",
                f"hardware add --name {label}",
                ("hardware", "add", "h.yaml", "--name", "h100-sxm" if label == "built-in" else name),
                {"h.yaml": GOOD_HW_YAML},
                env=home,
            )
        )
        out.append(
            Case(
                "catalog --save",
                f"calibrate fit --save {label}",
                ("calibrate", "fit", "m.csv", "--save", "h100-sxm" if label == "built-in" else name),
                {"m.csv": GOOD_MEASURE},
                env=home,
            )
        )
    homes = {
        "a file": ({"homefile": b"x"}, "homefile"),
        "under /dev/null": ({}, "/dev/null/roofline"),
        "/dev/null": ({}, "/dev/null"),
        "a FIFO": ({"homefifo": FIFO}, "homefifo"),
        "under a file": ({"homefile": b"x"}, "homefile/sub"),
    }
    commands = {
        "model import --save": (
            ("model", "import", "config.json", "--save", "--name", "mine"),
            {"config.json": GOOD_CONFIG},
        ),
        "model add": (("model", "add", "m.yaml"), {"m.yaml": GOOD_MODEL_YAML}),
        "hardware add": (("hardware", "add", "h.yaml"), {"h.yaml": GOOD_HW_YAML}),
    }
    for label, (files, path) in homes.items():
        for name, (argv, inputs) in commands.items():
            out.append(
                Case(
                    "catalog home",
                    f"{name}, home {label}",
                    argv,
                    {**files, **inputs},
                    env={"ROOFLINE_HOME": path},
                    needles=("ROOFLINE_HOME",) if False else (),
                )
            )
        for argv in (("model", "list"), ("hardware", "list"), ("step", *M8)):
            out.append(
                Case(
                    "catalog home",
                    f"{' '.join(argv[:2])}, home {label}",
                    argv,
                    files,
                    env={"ROOFLINE_HOME": path},
                    expect="ok",
                )
            )
    return out


# --------------------------------------------------------------------------- outputs

OUTPUT_FLAGS: dict[str, tuple[tuple[str, ...], dict[str, object]]] = {
    "sweep --csv": (("sweep", *M8, "--batch", "1,8", "--csv", "OUT"), {}),
    "pareto --csv": (("pareto", *M8, "--batch", "1,8", "--csv", "OUT"), {}),
    "pareto --html": (("pareto", *M8, "--batch", "1,8", "--html", "OUT"), {}),
    "plan --csv": (
        (
            "plan",
            *M8,
            "--qps",
            "1",
            "-i",
            "128",
            "-o",
            "16",
            "--tp",
            "1",
            "--weights",
            "bf16",
            "--kv-dtype",
            "bf16",
            "--csv",
            "OUT",
        ),
        {},
    ),
    "report --out": (
        (
            "report",
            "--models",
            "llama-3-8b",
            "--hardware",
            "h100-sxm",
            "--batch",
            "1,8",
            "--chips",
            "1",
            "--out",
            "OUT",
        ),
        {},
    ),
    "simulate --html": ((*SIM, "--qps", "1", "-i", "64", "-o", "8", "--html", "OUT"), {}),
    "validate --html": (("validate", "--rows", "r.csv", "--html", "OUT"), {"r.csv": GOOD_E2E}),
    "e2e import --out": (("e2e", "import", "r.csv", "--out", "OUT"), {"r.csv": GOOD_E2E}),
    "calibrate import --out": (("calibrate", "import", "m.csv", "--out", "OUT"), {"m.csv": GOOD_MEASURE}),
    "model import --out": (("model", "import", "config.json", "--out", "OUT"), {"config.json": GOOD_CONFIG}),
}
OUTPUT_TARGETS = {
    "character device": (NULLDEV, "ok"),
    "FIFO with a reader": (FIFO_READ, "ok"),
    "FIFO without reader": (FIFO, "refuse"),
    "folder": (DIR, "refuse"),
    "under a file": ("afile/x.out", "refuse"),
    "under /dev/null": ("/dev/null/x.out", "refuse"),
    "trailing slash": ("newdir/", "refuse"),
}


def output_cases() -> list[Case]:
    out = []
    for name, (argv, inputs) in OUTPUT_FLAGS.items():
        for label, (target, expect) in OUTPUT_TARGETS.items():
            files = dict(inputs)
            path = target
            nodes: tuple[str, ...] = ()
            if target in (NULLDEV, FIFO_READ, FIFO, DIR):
                path = "target.out"
                files[path] = target
                nodes = (path,) if target != DIR else ()
            if target.startswith("afile/"):
                files["afile"] = b"x"
            args = tuple(path if a == "OUT" else a for a in argv)
            out.append(Case(f"output: {name}", label, args, files, expect=expect, nodes=nodes))
    return out


# --------------------------------------------------------------------------- CSV injection

INJECT = ('=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)")


def injection_cases() -> list[Case]:
    out = []
    for name in INJECT:
        model = GOOD_MODEL_YAML.replace(b"name: mine", ("name: " + json.dumps(name)).encode())
        chip = GOOD_HW_YAML.replace(b"name: chip", ("name: " + json.dumps(name)).encode())
        files = {"m.yaml": model, "h.yaml": chip}
        runs = {
            "sweep --csv (model)": ("sweep", "-m", "m.yaml", "-H", "h100-sxm", "--batch", "1,8", "--csv", "o.csv"),
            "sweep --csv (chip)": ("sweep", "-m", "llama-3-8b", "-H", "h.yaml", "--batch", "1,8", "--csv", "o.csv"),
            "pareto --csv (model)": ("pareto", "-m", "m.yaml", "-H", "h100-sxm", "--batch", "1,8", "--csv", "o.csv"),
            "plan --csv (model)": (
                "plan",
                "-m",
                "m.yaml",
                "-H",
                "h100-sxm",
                "--qps",
                "1",
                "-i",
                "128",
                "-o",
                "16",
                "--tp",
                "1",
                "--weights",
                "bf16",
                "--kv-dtype",
                "bf16",
                "--csv",
                "o.csv",
            ),
        }
        for label, argv in runs.items():
            out.append(Case("csv injection", f"{label} {name[:10]}", argv, files, expect="any", csv_out="o.csv"))
        row = _csv(E2E_HEADER, _replace(E2E_ROW, E2E_HEADER, "source", name))
        out.append(
            Case(
                "csv injection",
                f"e2e import (source) {name[:10]}",
                ("e2e", "import", "r.csv", "--out", "o.csv"),
                {"r.csv": row},
                expect="any",
                csv_out="o.csv",
            )
        )
        measure = GOOD_MEASURE.replace(b",mine\n", b"," + json.dumps(name).encode() + b"\n")
        out.append(
            Case(
                "csv injection",
                f"calibrate import (source) {name[:10]}",
                ("calibrate", "import", "m.csv", "--out", "o.csv"),
                {"m.csv": measure},
                expect="any",
                csv_out="o.csv",
            )
        )
    return out


# --------------------------------------------------------------------------- the Python API

#: Snippets run with ``rl`` (roofline), ``np``, ``m`` (llama-3-8b) and ``h`` (h100-sxm) defined.
API_CALLS = {
    "decode_step": "rl.decode_step(m, h, {arg})",
    "request": "rl.request(m, h, {arg})",
    "serve": "rl.serve(rl.deployment(m, h, 1), 'static', {arg})",
    "deployment": "rl.deployment(m, h, {arg})",
    "decode_sweep": "rl.decode_sweep(m, [h], {arg})",
    "plan_capacity": "rl.plan_capacity(m, [h], {arg})",
}
API_ARGS = {
    "decode_step": {
        "batch=[1,2,3], context=[1,2]": "shape mismatch",
        "batch=np.array([1+2j])": "complex",
        "batch=np.array(['8'])": "string array",
        "batch='8'": "string",
        "batch=None": "None",
        "batch=True": "boolean",
        "batch=2**31": "2**31",
        "context=1e300": "1e300",
        "context=float('nan')": "nan",
        "batch=0.5": "fraction",
        "batch=[[1, 2], [3]]": "ragged",
        "chips=np.ones((2, 2, 2, 2, 2, 2, 2, 2, 2))": "9-D",
        "precision='fp8'": "precision as text",
        "tp=2.5, chips=5": "tp fraction",
        "memory_utilization=np.array([0.5, 0.9])": "array memory_utilization",
        "price_per_chip_hour=float('inf')": "inf price",
    },
    "request": {
        "input_len=2**31, output_len=4": "input_len 2**31",
        "input_len=20, output_len=0.5": "output_len 0.5",
        "input_len=20, output_len=4, mfu=np.ones((2, 2))": "2-D mfu",
        "input_len=20, output_len=4, mfu=np.array([0.5, 0.6])": "1-D mfu",
        "input_len=20, output_len=4, mfu='0.5'": "mfu text",
        "input_len=[1, 2, 3], output_len=[1, 2]": "shape mismatch",
        "input_len=np.array([1j]), output_len=4": "complex",
        "input_len=np.array(['a']), output_len=4": "string array",
        "input_len=None, output_len=4": "None",
        "input_len=10**400, output_len=4": "400-digit",
        "input_len=20, output_len=4, batch=-1": "negative batch",
        "input_len=20, output_len=True": "boolean",
        "input_len=1e12, output_len=4": "1e12",
    },
    "serve": {
        "input_len=2**31, output_len=4": "input_len 2**31",
        "input_len=20, output_len=0.5": "output_len 0.5",
        "input_len=[1, 2], output_len=[1, 2, 3]": "shape mismatch",
        "input_len=20, output_len=4, mfu=np.ones((2, 2))": "2-D mfu",
    },
    "deployment": {
        "chips=0": "zero chips",
        "chips=1, precision='bf16'": "precision text",
        "chips=np.array([1j])": "complex chips",
        "chips=1, tp=3": "tp 3 on 1 chip",
        "chips=1, memory_utilization=2": "memory_utilization 2",
    },
    "decode_sweep": {
        "batch=[1, -1], chips=[1]": "negative batch",
        "batch=['a'], chips=[1]": "text batch",
        "batch=[1], chips=[1j]": "complex chips",
        "batch=[], chips=[1]": "empty batch",
        "batch=[1, float('nan')], chips=[1]": "nan batch",
    },
    "plan_capacity": {
        "qps=float('nan'), lengths=rl.fixed_lengths(10, 10)": "nan qps",
        "qps=1, lengths=(10, 10)": "lengths tuple",
        "qps=1, lengths=None": "lengths None",
        "qps='1', lengths=rl.fixed_lengths(10, 10)": "qps text",
        "qps=1, lengths=rl.fixed_lengths(10, 10), tpot_slo_s=-1": "negative slo",
    },
}
API_WHOLE = {
    "decode_step(None, h)": "rl.decode_step(None, h)",
    "decode_step('llama-3-8b', h)": "rl.decode_step('llama-3-8b', h)",
    "decode_step(m, 'h100-sxm')": "rl.decode_step(m, 'h100-sxm')",
    "decode_step(h, m)": "rl.decode_step(h, m)",
    "request(None, h)": "rl.request(None, h, 10, 10)",
    "request('llama-3-8b', h)": "rl.request('llama-3-8b', h, 10, 10)",
    "serve(None, ...)": "rl.serve(None, 'static', input_len=10, output_len=10)",
    "serve(m, h, ...)": "rl.serve(m, h, input_len=10, output_len=10)",
    "deployment(None, h)": "rl.deployment(None, h, 1)",
    "decode_sweep(m, h)": "rl.decode_sweep(m, h, batch=[1], chips=[1])",
    "decode_sweep(m, ['h100-sxm'])": "rl.decode_sweep(m, ['h100-sxm'], batch=[1], chips=[1])",
    "decode_sweep(None, [h])": "rl.decode_sweep(None, [h], batch=[1], chips=[1])",
    "plan_capacity(m, h)": "rl.plan_capacity(m, h, qps=1, lengths=rl.fixed_lengths(10, 10))",
    "plan_capacity('x', [h])": "rl.plan_capacity('x', [h], qps=1, lengths=rl.fixed_lengths(10, 10))",
    "step_from(None)": "rl.step_from(None, 1, 1)",
    "request_from(None)": "rl.request_from(None, 1, 1)",
    "step_terms(None)": "rl.step_terms(None, None)",
    "chip_rates(None)": "rl.chip_rates(None)",
    "averaged_request(None)": "rl.averaged_request(None, rl.fixed_lengths(10, 10))",
    "averaged_request(dep, None)": "rl.averaged_request(rl.deployment(m, h, 1), None)",
    "fixed_lengths(nan)": "rl.fixed_lengths(float('nan'), 3)",
    "fixed_lengths(2**40)": "rl.fixed_lengths(2**40, 3)",
    "fixed_lengths('a')": "rl.fixed_lengths('a', 3)",
    "from_points complex": "rl.from_points([1j], [2], [1])",
    "from_points text": "rl.from_points(['a'], [2], [1])",
    "from_points shapes": "rl.from_points([1, 2], [2], [1])",
    "from_points 2**40": "rl.from_points([2**40], [2], [1])",
    "read_lengths_csv(None)": "rl.read_lengths_csv(None)",
    "read_lengths_csv('/dev/zero')": "rl.read_lengths_csv('/dev/zero')",
    "frontier_of(None)": "rl.frontier_of(None, 'cost-latency')",
    "frontier_of bad objective": "rl.frontier_of(rl.decode_sweep(m, [h], batch=[1, 8], chips=[1]).columns, 'nope')",
    "pareto_mask complex": "rl.pareto_mask(np.array([1j]), np.array([1.0]))",
    "pareto_mask shapes": "rl.pareto_mask(np.array([1.0, 2.0]), np.array([1.0]))",
    "pareto_mask text": "rl.pareto_mask(np.array(['a']), np.array(['b']))",
    "diff_steps(None, None)": "rl.diff_steps(None, None)",
    "explain_step(None)": "rl.explain_step(None, 1, 1, None)",
    "Precision(weights='bf17')": "rl.Precision(weights='bf17')",
    "Precision(weights=None)": "rl.Precision(weights=None)",
    "Precision components twice": "rl.Precision(components=(('mlp', 'int8'), ('mlp', 'fp8')))",
    "model_from_dict(None)": "rl.model_from_dict(None)",
    "hardware_from_dict('x')": "rl.hardware_from_dict('x')",
    "load_model(None)": "rl.load_model(None)",
    "load_model(5)": "rl.load_model(5)",
    "load_model('/dev/zero')": "rl.load_model('/dev/zero')",
    "load_hardware('')": "rl.load_hardware('')",
    "model_dict_from_hf_config(None)": "rl.model_dict_from_hf_config(None, 'x')",
    "model_dict_from_hf_config deep": "rl.model_dict_from_hf_config({'a': " + "[" * 40 + "1" + "]" * 40 + "}, 'x')",
}


def api_cases() -> list[Case]:
    out = []
    for entry, template in API_CALLS.items():
        for arg, label in API_ARGS[entry].items():
            out.append(Case(f"api: {entry}", label, python=template.format(arg=arg)))
    for label, code in API_WHOLE.items():
        out.append(Case("api: arguments", label, python=code))
    return out


# --------------------------------------------------------------------------- work bounds


def bound_cases() -> list[Case]:
    trace_rows = b"arrival_time_s,input_len,output_len\n" + b"0.001,64,8\n" * 1_000_001
    lengths_rows = b"input_len,output_len\n" + b"64,8\n" * 2_000_000
    many_rows = GOOD_E2E.decode().split("\n")
    e2e_30k = (
        many_rows[0] + "\n" + "".join(many_rows[1].replace("r/1", f"r/{i}") + "\n" for i in range(30_000))
    ).encode()
    return [
        Case(
            "work bounds",
            "simulate 4096 replicas x 1e9/s x 1M requests",
            (*SIM[:-2], "--replicas", "4096", "--arrival-rate", "1e9", "--requests", "1000000", "-i", "64", "-o", "8"),
            timeout_s=60,
        ),
        Case(
            "work bounds",
            "simulate 1M requests x 8k output",
            (*SIM[:-2], "--arrival-rate", "100", "--requests", "1000000", "-i", "64", "-o", "8000"),
            timeout_s=60,
        ),
        Case(
            "work bounds",
            "simulate 4096 prefill + 4096 replicas",
            (
                *SIM[:-2],
                "--replicas",
                "4096",
                "--prefill-replicas",
                "4096",
                "--qps",
                "10",
                "--requests",
                "1000000",
                "-i",
                "64",
                "-o",
                "8",
            ),
            timeout_s=60,
        ),
        Case(
            "work bounds",
            "simulate --concurrency 1M",
            (*SIM[:-2], "--concurrency", "1000000", "--requests", "1000000", "-i", "64", "-o", "8"),
            timeout_s=60,
        ),
        Case(
            "work bounds",
            "trace over its row limit",
            (*SIM[:-2], "--trace", "t.csv"),
            {"t.csv": trace_rows},
            timeout_s=60,
        ),
        Case(
            "work bounds",
            "lengths file with 2M rows (request)",
            ("request", *M8, "--lengths-csv", "l.csv"),
            {"l.csv": lengths_rows},
            timeout_s=60,
        ),
        Case(
            "work bounds",
            "lengths file with 2M rows (simulate)",
            (*SIM, "--qps", "1", "--lengths-csv", "l.csv"),
            {"l.csv": lengths_rows},
            timeout_s=60,
        ),
        Case("work bounds", "validate on 30k rows", ("validate", "--rows", "r.csv"), {"r.csv": e2e_30k}, timeout_s=60),
        Case(
            "work bounds",
            "--lengths with 5000 items",
            (*SIM, "--qps", "1", "--lengths", ",".join(["64:8:1"] * 5000)),
            timeout_s=60,
        ),
    ]


def all_cases() -> list[Case]:
    return [
        *cell_cases(),
        *length_limit_cases(),
        *encoding_cases(),
        *flag_cases(),
        *model_config_cases(),
        *catalog_cases(),
        *output_cases(),
        *injection_cases(),
        *api_cases(),
        *bound_cases(),
    ]
