"""Issue 28 at the command line: each kind of hostile input, on the surfaces it names, is one line
naming the file or flag, the field, the value and what is allowed; exit 2; nothing written; a
device or FIFO given as an output is written through, never replaced.  In-process (fast) runs of
``roofline``; the ~1,250-case harness is ``benchmarks/boundaries.py``."""

from __future__ import annotations

import gzip
import json
import os
import stat
from pathlib import Path

import pytest

from tests.inprocess import assert_refused, run_roofline

SIM = ("simulate", "-m", "llama-3-8b", "-H", "h100-sxm", "--requests", "20")
TRACE_HEADER = "arrival_time_s,input_len,output_len\n"


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path / "home"))
    return tmp_path


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# --------------------------------------------------------------------------- numbers in files


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ("1" + "0" * 400, "'10000000000000000000000000000000000'..."),
        ("1e300", "'1e300'"),
        ("nan", "'nan'"),
        ("-5", "'-5'"),
        ("true", "'true'"),
        ("1.5", "'1.5'"),
    ],
)
def test_trace_cells(here, cell, shown):
    (here / "t.csv").write_text(f"{TRACE_HEADER}0.5,{cell},8\n")
    run = run_roofline(*SIM, "--trace", "t.csv")
    assert_refused(
        run, "--trace t.csv: line 2: column 'input_len' is", shown, "allowed: a whole number in [1, 2147483647]"
    )


def test_lengths_beyond_the_models_context_are_refused(here):
    """llama-3-8b's config says max_position_embeddings 8192 (models/llama-3-8b.yaml)."""
    (here / "t.csv").write_text(f"{TRACE_HEADER}0,1,1\n0,9000,8\n")
    assert_refused(run_roofline(*SIM, "--trace", "t.csv"), "line 3: input_len + output_len = 9008", "at most 8192")
    (here / "l.csv").write_text("input_len,output_len\n100000,8\n")
    run = run_roofline("request", "-m", "llama-3-8b", "-H", "h100-sxm", "--lengths-csv", "l.csv")
    assert_refused(run, "--lengths-csv l.csv", "beyond llama-3-8b's context window")
    assert_refused(run_roofline(*SIM, "--qps", "1", "-i", "9000", "-o", "8"), "--input-len", "at most 8192")


@pytest.mark.parametrize("value", ["1.5", "true", "1e300", "0"])
def test_concurrency_must_be_a_whole_number(here, value):
    run = run_roofline(*SIM, "--concurrency", value, "-i", "64", "-o", "8")
    assert_refused(run, "--concurrency", "whole number")


def test_row_limits(here, monkeypatch):
    from roofline.analyses import lengths
    from roofline.analyses.simulate import trace_io

    monkeypatch.setattr(trace_io, "MAX_TRACE_ROWS", 5)
    monkeypatch.setattr(lengths, "MAX_LENGTH_ROWS", 5)
    (here / "t.csv").write_text(TRACE_HEADER + "0,64,8\n" * 6)
    assert_refused(run_roofline(*SIM, "--trace", "t.csv"), "more than 5 rows; trace files are limited to 5 rows")
    (here / "l.csv").write_text("input_len,output_len\n" + "64,8\n" * 6)
    run = run_roofline("request", "-m", "llama-3-8b", "-H", "h100-sxm", "--lengths-csv", "l.csv")
    assert_refused(run, "--lengths-csv: l.csv: more than 5 rows; lengths files are limited to 5 rows")


# --------------------------------------------------------------------------- encodings, endless inputs


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (f"{TRACE_HEADER}0,64,8\n".encode("utf-16"), "UTF-16 text (byte-order mark FF FE)"),
        (f"{TRACE_HEADER}0,64,8\n".encode("utf-16-le"), "UTF-16 text (NUL bytes between characters)"),
        ((TRACE_HEADER + "0,64,8 # café\n").encode("latin-1"), "not UTF-8 text (byte 0xe9 on line 2"),
        (gzip.compress(f"{TRACE_HEADER}0,64,x\n".encode(), mtime=0), "line 2: column 'output_len' is 'x'"),
        (gzip.compress(b"\n" * 200_000_000, mtime=0), "decompresses to more than"),
    ],
)
def test_trace_encodings(here, data, needle):
    (here / "t.csv").write_bytes(data)
    assert_refused(run_roofline(*SIM, "--trace", "t.csv"), "--trace t.csv", needle)


def test_endless_and_blocking_inputs(here):
    assert_refused(run_roofline(*SIM, "--trace", "/dev/zero"), "--trace /dev/zero: binary file")
    os.mkfifo(here / "f.csv")
    assert_refused(run_roofline(*SIM, "--trace", "f.csv"), "--trace f.csv: FIFO with no writer")
    assert_refused(run_roofline("e2e", "import", "/dev/zero", "--out", "o.csv"), "/dev/zero: binary file")
    assert not (here / "o.csv").exists()


def test_deeply_nested_vendor_json(here):
    (here / "v.json").write_text("[" * 100_000 + "]" * 100_000)
    run = run_roofline("e2e", "import", "v.json", "--hardware", "h100-sxm", "--out", "o.csv")
    assert_refused(run, "v.json: JSON nested deeper than 32 levels")
    (here / "v.json").write_text(json.dumps({"completed": True, "mean_ttft_ms": 5}))
    run = run_roofline("e2e", "import", "v.json", "--hardware", "h100-sxm", "--out", "o.csv")
    assert_refused(run, "key 'completed' is True; allowed: a whole number >= 1")


# --------------------------------------------------------------------------- contradictory flags


@pytest.mark.parametrize(
    ("weights", "needle"),
    [
        ("mlp=int8,mlp=fp8", "component 'mlp' given twice"),
        ("bf16,fp8", "two defaults in 'bf16,fp8'"),
        ("bf16,", "empty item in 'bf16,'"),
    ],
)
def test_weights_contradictions(here, weights, needle):
    assert_refused(
        run_roofline("step", "-m", "llama-3-8b", "-H", "h100-sxm", "--weights", weights), "--weights", needle
    )


def test_simulate_tp_must_divide_heads(here):
    run = run_roofline(*SIM, "--qps", "1", "-i", "64", "-o", "8", "--tp", "3")
    assert_refused(run, "--tp 3: llama-3-8b has 32 attention heads", "allowed: 1, 2, 4, 8, 16, 32")


# --------------------------------------------------------------------------- impossible model configs

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"num_key_value_heads": 7}, "num_heads (32) must be a multiple of num_kv_heads (7)"),
        ({"rotary_dim": 256}, "'rotary_dim' must be at most the head dimension (128)"),
        ({"partial_rotary_factor": 1.5}, "'partial_rotary_factor' must be a fraction of the head in (0, 1]"),
    ],
)
def test_impossible_configs(here, change, needle):
    (here / "config.json").write_text(json.dumps({**LLAMA, **change}))
    assert_refused(run_roofline("model", "import", "config.json"), "config.json", needle)


@pytest.mark.parametrize(
    ("fixture", "change", "needle"),
    [
        ("nemotron-h-8b-base", {"n_groups": 7}, "must be a multiple of mamba_n_groups (7)"),
        ("qwen3-next-80b-a3b", {"linear_num_value_heads": 33}, "must be a multiple of linear_num_key_heads"),
    ],
)
def test_impossible_hybrid_configs(here, fixture, change, needle):
    base = json.loads((Path(__file__).parent / "fixtures" / "hf" / fixture / "config.json").read_text())
    (here / "config.json").write_text(json.dumps({**base, **change}))
    assert_refused(run_roofline("model", "import", "config.json"), needle)


# --------------------------------------------------------------------------- catalog


@pytest.mark.parametrize("name", ["", "mine\n", "a\nb", "../x"])
def test_save_names(here, name):
    (here / "config.json").write_text(json.dumps(LLAMA))
    run = run_roofline("model", "import", "config.json", "--save", "--name", name)
    assert_refused(run, "--name", "cannot be a catalog name")
    assert not (here / "home").exists()


@pytest.mark.parametrize(("home", "needle"), [("afile", "is not a folder"), ("/dev/null/x", "lies under /dev/null")])
def test_catalog_home_that_cannot_hold_files(here, monkeypatch, home, needle):
    (here / "afile").write_text("x")
    (here / "config.json").write_text(json.dumps(LLAMA))
    monkeypatch.setenv("ROOFLINE_HOME", home)
    run = run_roofline("model", "import", "config.json", "--save", "--name", "mine", "--out", "o.yaml")
    assert_refused(run, f"ROOFLINE_HOME={home}", needle)
    assert _files(here) == ["afile", "config.json"]  # not even --out was written


# --------------------------------------------------------------------------- outputs


def test_output_to_a_character_device_is_written_through(here):
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    os.mknod(here / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private /dev/null
    run = run_roofline("sweep", "-m", "llama-3-8b", "-H", "h100-sxm", "--batch", "1,8", "--csv", "null")
    assert run.code == 0, run.stderr
    assert stat.S_ISCHR(os.stat(here / "null").st_mode) and _files(here) == ["null"]


def test_output_to_a_fifo_without_reader_is_refused(here):
    os.mkfifo(here / "out.csv")
    run = run_roofline("sweep", "-m", "llama-3-8b", "-H", "h100-sxm", "--batch", "1,8", "--csv", "out.csv")
    assert_refused(run, "out.csv: FIFO has no reader")
    assert stat.S_ISFIFO(os.stat(here / "out.csv").st_mode)


def test_csv_cells_cannot_run_as_formulas(here):
    model = (Path(__file__).parent.parent / "models" / "llama-3-8b.yaml").read_text()
    (here / "m.yaml").write_text(model.replace("name: llama-3-8b", 'name: "=HYPERLINK(1)"', 1))
    run = run_roofline("sweep", "-m", "m.yaml", "-H", "h100-sxm", "--batch", "1", "--csv", "o.csv")
    assert run.code == 0, run.stderr
    text = (here / "o.csv").read_text()
    assert "'=HYPERLINK(1)" in text and ",=HYPERLINK" not in text and not text.startswith("=")


# --------------------------------------------------------------------------- work bounds


def test_simulated_work_is_refused_up_front_with_its_figure(here):
    run = run_roofline(
        *SIM[:-2], "--replicas", "4096", "--arrival-rate", "1e9", "--requests", "1000000", "-i", "64", "-o", "8"
    )
    assert_refused(
        run,
        "--requests x replicas: 1,000,000 requests x 4,096 replicas = 4,096,000,000",
        "ceiling of 50,000,000; give fewer --requests or --replicas (replicas",
    )
    run = run_roofline(*SIM[:-2], "--qps", "100", "--requests", "1000000", "-i", "64", "-o", "8000")
    assert_refused(run, "--requests: 1,000,000 requests", "8,001,000,000 simulated tokens", "ceiling of 100,000,000")
    assert_refused(run, "give fewer --requests (at most 12,498 here)")


def test_validate_refuses_too_many_rows_before_predicting(here):
    header = (
        "id,source,model,hardware,weight_dtype,kv_dtype,compute_dtype,engine,load,batch,input_len,output_len,ttft_s"
    )
    rows = "".join(f"r/{i},mine,llama-3-8b,h100-sxm,bf16,bf16,bf16,vllm,static,8,512,64,0.05\n" for i in range(1001))
    (here / "r.csv").write_text(f"{header}\n{rows}")
    assert_refused(run_roofline("validate", "--rows", "r.csv"), "--rows: r.csv: more than 1,000 rows (got 1,001)")


@pytest.mark.parametrize("command", [("request",), ("simulate", "--qps", "1", "--json"), ("plan", "--qps", "1")])
def test_lengths_whose_weights_are_all_zero_name_the_flag(command):
    # The line used to read 'lengths given as I⭕weight items: ...': no flag, and rich made ':O:' an emoji.
    run = run_roofline(command[0], "-m", "llama-3-8b", "-H", "h100-sxm", *command[1:], "--lengths", "100:10:0,200:5:0")
    assert_refused(
        run, "--lengths: every weight in '100:10:0,200:5:0' is 0; allowed: weights >= 0 with at least one > 0"
    )


def test_error_lines_print_emoji_codes_as_written(tmp_path):
    trace = tmp_path / "a:o:b.csv"  # a file name rich would turn into an emoji
    run = run_roofline("simulate", "-m", "llama-3-8b", "-H", "h100-sxm", "--trace", str(trace))
    assert_refused(run, "a:o:b.csv")


@pytest.mark.parametrize(
    ("command", "flag"),
    [(("step",), "--kv-dtype"), (("request", "-i", "10", "-o", "5"), "--kv-dtype")],
)  # sweep's --compute-dtype takes component=dtype items (tests/test_compute_dtype_search.py)
def test_a_one_dtype_flag_given_a_component_list_says_it_takes_one(command, flag):
    # It was "unknown dtype 'bf16,experts=fp8'; did you mean bf16?".
    run = run_roofline(command[0], "-m", "deepseek-r1", "-H", "h200", *command[1:], flag, "bf16,experts=fp8")
    assert_refused(run, f"{flag}: takes one dtype here, not a list or component=dtype items (got 'bf16,experts=fp8')")
