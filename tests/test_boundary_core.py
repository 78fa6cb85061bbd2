"""The shared boundary helpers of roofline.core: bounded reads, encodings, JSON limits, CSV schemas,
formula-safe CSV cells, writes that never replace a device or FIFO, and array argument checks."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import select
import stat
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.core.checks import MAX_COUNT, check_array, check_broadcast, check_scalar
from roofline.core.errors import OptionError, RooflineError
from roofline.core.files import (
    check_output_path,
    decode_text,
    output_kind,
    read_bytes_limited,
    read_input_text,
    write_text_atomic,
)
from roofline.core.jsontext import MAX_DEPTH, load_json
from roofline.core.tables import Column, csv_cell, csv_writer, read_table, unescape_cell

# --------------------------------------------------------------------------- reading


def test_dev_zero_is_refused_after_one_chunk():
    """An endless stream of NULs ends at its first chunk (1 MiB), not at the size limit."""
    with pytest.raises(RooflineError, match="binary file"):
        read_bytes_limited("/dev/zero", 2**30, RooflineError, "trace")


def test_fifo_without_writer_is_refused_not_a_hang(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    with pytest.raises(RooflineError, match="FIFO with no writer"):
        read_input_text(fifo, 1000, RooflineError, "x")


def test_fifo_with_writer_is_read(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as handle:
            handle.write(b"a,b\n1,2\n")

    writer = threading.Thread(target=feed)
    writer.start()
    text = read_input_text(fifo, 1000, RooflineError, "x")
    writer.join()
    assert text == "a,b\n1,2\n"


def test_endless_text_stream_stops_at_the_limit(tmp_path):
    fifo = tmp_path / "yes.fifo"
    os.mkfifo(fifo)
    stop = threading.Event()

    def feed() -> None:
        try:
            with open(fifo, "wb") as handle:
                while not stop.is_set():
                    handle.write(b"y\n" * 4096)
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed)
    writer.start()
    with pytest.raises(RooflineError, match="larger than 100,000 bytes"):
        read_input_text(fifo, 100_000, RooflineError, "trace")
    stop.set()
    writer.join()


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ("a,b\n1,2\n".encode("utf-16"), "UTF-16 text (byte-order mark"),
        ("a,b\n1,2\n".encode("utf-16-le"), "UTF-16 text (NUL bytes"),
        ("a,b\n1,2\n".encode("utf-32"), "UTF-32 text"),
        ("name\ncafé\n".encode("latin-1"), "not UTF-8 text (byte 0xe9 on line 2"),
        (gzip.compress(b"a,b\n", mtime=0), "gzip-compressed"),
        (bytes(range(256)) * 10, "binary file"),
    ],
)
def test_encodings_are_named(data, needle):
    with pytest.raises(RooflineError, match=needle.replace("(", r"\(")):
        decode_text(data, "f.csv", RooflineError)


def test_gzip_is_read_where_allowed_and_a_bomb_is_bounded(tmp_path):
    small = tmp_path / "t.csv"  # gzip data under any name is recognised by its magic bytes
    small.write_bytes(gzip.compress(b"a,b\n1,2\n"))
    assert read_input_text(small, 1000, RooflineError, "x") == "a,b\n1,2\n"
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"1,2\n" * 10_000_000))  # 40 MB of text in ~40 kB
    with pytest.raises(RooflineError, match="decompresses to more than 1,000,000 bytes"):
        read_input_text(bomb, 1_000_000, RooflineError, "trace")
    with pytest.raises(RooflineError, match="corrupt or truncated gzip"):
        (tmp_path / "cut.gz").write_bytes(gzip.compress(b"x" * 1000)[:-10])
        read_input_text(tmp_path / "cut.gz", 10_000, RooflineError, "x")


# --------------------------------------------------------------------------- JSON


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"a": ' * 40 + "1" + "}" * 40, "nested deeper than 32 levels"),
        ('{"ttft": NaN}', "field 'ttft': must be a finite number (got nan)"),
        ('{"x": [1, Infinity]}', "field 'x[1]': must be a finite number (got inf)"),
        ('{"x": 1e400}', "field 'x': must be a finite number (got inf)"),
        ('{"n": ' + "9" * 500 + "}", "field 'n': number out of range (got <a 500-digit integer>)"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ("", "empty file"),
        ('{"a": }', "malformed JSON at line 1"),
    ],
)
def test_json_limits_are_one_line(text, needle):
    with pytest.raises(RooflineError) as err:
        load_json(text, "r.json")
    message = str(err.value)
    assert "\n" not in message and message.startswith("r.json: ") and needle in message, message


def test_json_lines_and_depth_at_the_limit():
    assert load_json('{"a": 1}\n{"a": 2}\n', "r.jsonl", lines=True) == [{"a": 1}, {"a": 2}]
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH  # exactly the limit: accepted
    assert load_json(deep, "d.json") == json.loads(deep)


# --------------------------------------------------------------------------- CSV tables

TRACE = (
    Column("arrival_time_s", "seconds", minimum=0.0),
    Column("input_len", "count"),
    Column("output_len", "count"),
    Column("note", "text", required=False, default=""),
)


def _table(tmp_path, text: str, **kwargs):
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    return read_table(path, TRACE, max_rows=kwargs.pop("max_rows", 10), what="--trace", kind="trace", **kwargs)


def test_table_reads_checked_columns(tmp_path):
    table = _table(tmp_path, "input_len,arrival_time_s,output_len\n5,0.5,7\n\n6,1,8\n")
    assert table.columns == {"arrival_time_s": [0.5, 1.0], "input_len": [5, 6], "output_len": [7, 8], "note": ["", ""]}
    assert table.lines == (2, 4)


BAD_CELLS = ["1" + "0" * 300, "1e300", "nan", "inf", "-inf", "-3", "0", "abc", "true", "1.5", "", " "]


@pytest.mark.parametrize("cell", BAD_CELLS)
def test_table_cell_refusal_names_file_line_column_value_and_range(tmp_path, cell):
    with pytest.raises(RooflineError) as err:
        _table(tmp_path, f"arrival_time_s,input_len,output_len\n0,4,5\n0,{cell},5\n")
    message = str(err.value)
    assert message.startswith("--trace ") and "t.csv: line 3: column 'input_len'" in message, message
    assert "allowed: a whole number in [1, 2147483647]" in message and "\n" not in message


def test_table_limits(tmp_path):
    with pytest.raises(RooflineError, match="more than 10 rows; trace files are limited to 10 rows"):
        _table(tmp_path, "arrival_time_s,input_len,output_len\n" + "0,1,1\n" * 11)
    with pytest.raises(
        RooflineError, match=r"header must have arrival_time_s,input_len,output_len \(missing output_len"
    ):
        _table(tmp_path, "arrival_time_s,input_len\n0,1\n")
    with pytest.raises(RooflineError, match="unknown column 'extra'"):
        _table(tmp_path, "arrival_time_s,input_len,output_len,extra\n0,1,1,2\n")
    with pytest.raises(RooflineError, match="line 2: more cells than the header"):
        _table(tmp_path, "arrival_time_s,input_len,output_len\n0,1,1,9\n")
    with pytest.raises(RooflineError, match="no data rows"):
        _table(tmp_path, "arrival_time_s,input_len,output_len\n")
    with pytest.raises(RooflineError, match="appears twice"):
        _table(tmp_path, "arrival_time_s,input_len,input_len,output_len\n0,1,1,1\n")


@given(st.lists(st.integers(min_value=1, max_value=MAX_COUNT), min_size=1, max_size=20))
def test_table_round_trips_any_valid_counts(values):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        body = "".join(f"{i * 0.5},{v},{v}\n" for i, v in enumerate(values))
        table = _table(Path(folder), "arrival_time_s,input_len,output_len\n" + body, max_rows=20)
    assert table.columns["input_len"] == values


# --------------------------------------------------------------------------- CSV cells


@pytest.mark.parametrize("name", ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "=HYPERLINK()"])
def test_formula_cells_are_escaped_and_read_back(name):
    escaped = csv_cell(name)
    assert isinstance(escaped, str) and escaped.startswith("'") and unescape_cell(escaped) == name


@pytest.mark.parametrize("value", ["-1.5", "-3", "+2", "h100-sxm", "llama-3-8b", 3.5, -2, None])
def test_numbers_and_plain_names_are_left_alone(value):
    assert csv_cell(value) == value


@given(st.text(max_size=20))
def test_csv_writer_never_emits_a_formula_cell(text):
    buffer = io.StringIO()
    csv_writer(buffer).writerow([text, 1.5])
    (cell, number), *_ = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert number == "1.5"
    stripped = cell
    if stripped.startswith(("=", "+", "-", "@", "\t", "\r")):
        float(stripped)  # only a plain number may start that way
    assert unescape_cell(cell) == text.replace("\r\n", "\n") or "\r" in text


# --------------------------------------------------------------------------- writing


def test_write_to_a_character_device_streams_and_keeps_the_node(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private /dev/null
    assert output_kind(null) == "stream"
    write_text_atomic(null, "x" * 10_000)
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temp file left beside it


def test_write_to_a_fifo_streams_to_its_reader(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    ready = threading.Event()

    def read() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        ready.set()
        poller = select.poll()  # a FIFO without a writer reads as end of file: wait for the writer first
        poller.register(fd, select.POLLIN)
        poller.poll(30_000)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            got.append(handle.read())

    reader = threading.Thread(target=read)
    reader.start()
    ready.wait()
    write_text_atomic(fifo, "a,b\n1,2\n")
    reader.join()
    assert got == [b"a,b\n1,2\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_write_to_a_fifo_without_reader_is_refused_not_a_hang(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    with pytest.raises(RooflineError, match="FIFO has no reader"):
        write_text_atomic(fifo, "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_failed_render_writes_nothing(tmp_path):
    from roofline.core.files import write_atomic

    target = tmp_path / "out.csv"
    target.write_text("old")

    def boom(handle) -> None:
        handle.write("partial")
        raise RooflineError("render failed")

    with pytest.raises(RooflineError):
        write_atomic(target, boom)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_output_paths_refused_up_front(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OptionError, match="is a file, not a folder"):
        check_output_path(tmp_path / "afile" / "out.csv", "--csv")
    with pytest.raises(OptionError, match="is a folder"):
        check_output_path(tmp_path, "--out")
    with pytest.raises(OptionError, match="is a file, not a folder"):
        check_output_path("/dev/null/x.csv", "--out")
    check_output_path(os.devnull, "--out")  # a device: written through, accepted


# --------------------------------------------------------------------------- arrays


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (np.array([1 + 2j]), "not complex numbers"),
        (np.array(["8"]), "not text"),
        ("8", "got '8'"),
        (None, "got None"),
        (True, "got True"),
        (2**31, "got 2147483648"),
        (10**400, "not objects"),
        (0.5, "got 0.5"),
        ([1, float("nan")], "got nan in"),
        ([[1, 2], [3]], "rectangular array"),
    ],
)
def test_array_arguments_are_named(value, needle):
    with pytest.raises(OptionError) as err:
        check_array(value, "input_len", minimum=1.0, open_low=False)
    assert str(err.value).startswith("input_len: must be numbers in [1, 2147483647]") and needle in str(err.value)
    assert err.value.parameters == ("input_len",)


@given(st.lists(st.floats(min_value=1, max_value=MAX_COUNT), min_size=1, max_size=8))
def test_valid_arrays_pass_unchanged(values):
    assert np.array_equal(check_array(values, "batch", minimum=1.0, open_low=False), np.array(values))


def test_scalar_and_broadcast_checks():
    with pytest.raises(OptionError, match="mfu: must be one number, not an array of shape"):
        check_scalar(np.ones((2, 2)), "mfu", minimum=0.0, maximum=1.0)
    assert check_scalar(0.5, "mfu", minimum=0.0, maximum=1.0) == 0.5
    assert check_broadcast(batch=[1, 2, 3], context=2048) == (3,)
    with pytest.raises(OptionError, match=r"input_len, output_len: array shapes do not broadcast"):
        check_broadcast(input_len=[1, 2, 3], output_len=[1, 2])
