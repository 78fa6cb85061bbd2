"""Reading a measurement CSV safely: bounded (size after decompression, rows), gzip by its magic bytes,
UTF-8 with or without a byte-order mark, a FIFO without a writer refused; every failure one line naming
the file (:class:`~roofline.kernels.schema.CalibrationError`)."""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from roofline.core.errors import MeasurementError, shown
from roofline.core.files import LimitedReader, gzip_size_within, open_input, sniff_text
from roofline.kernels import schema
from roofline.kernels.schema import CalibrationError


def open_text(path: Path) -> io.TextIOBase:
    """Open a CSV (``.gz`` transparently) for reading within the size limit, with a one-line error."""
    limit = schema.MAX_MEASUREMENT_FILE_BYTES  # read at each call (a test may lower it)
    too_big = CalibrationError(
        f"{path}: more than {limit:,} bytes of text (after decompression); "
        f"measurement files are limited to {limit // 2**20} MiB"
    )
    try:
        if Path(path).is_dir():
            raise CalibrationError(f"{path}: is a folder, give a measurement file")
        regular = Path(path).is_file()
        if regular and Path(path).stat().st_size > limit:
            raise too_big
        raw: IO[bytes] = open_input(path, CalibrationError)  # a FIFO without a writer is refused, not awaited
        is_gzip = sniff_text(raw.peek(4096)[:4096], path, CalibrationError)  # type: ignore[attr-defined]
        if Path(path).suffix == ".gz" and not is_gzip:
            raw.close()
            raise CalibrationError(f"{path}: truncated or corrupt gzip file (named .gz but not gzip data)")
        if is_gzip:
            if regular and not gzip_size_within(path, limit):
                raw.close()
                raise too_big
            raw = gzip.GzipFile(fileobj=raw)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise CalibrationError(f"{path}: truncated or corrupt gzip file ({str(exc)[:60]})") from None
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read file ({exc.strerror or exc})") from None
    binary = CalibrationError(f"{path}: binary file (contains NUL bytes); expected CSV text")
    stream = io.BufferedReader(LimitedReader(raw, limit, too_big, binary))
    return io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")


def iter_csv(path: Path) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """Header and a stream of (line, row) of a CSV; one-line errors for anything not CSV.

    Refuses: an empty file, a header only, repeated column names, rows with more
    fields than the header, NUL bytes, non-UTF-8 text, a truncated or corrupt ``.gz``,
    more than :data:`MAX_ROWS` rows or the size limit.
    """
    handle = open_text(path)
    reader = csv.DictReader(handle)
    header = _guarded(path, handle, lambda: list(reader.fieldnames or []))
    if not header:
        handle.close()
        raise CalibrationError(f"{path}: empty file (expected a CSV header)")
    repeated = sorted({h for h in header if h.strip() and header.count(h) > 1})
    if repeated:  # (an unnamed first column, a pandas index, is fine)
        handle.close()
        raise CalibrationError(f"{path}: repeated column names in the header ({shown(repeated)})")

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        count = 0
        with handle:
            while True:
                row = _guarded(path, handle, lambda: next(reader, None))
                if row is None:
                    break
                count += 1
                if None in row:
                    raise CalibrationError(
                        f"{path}: row {count + 1}: more fields than the header's {len(header)} columns"
                    )
                if count > schema.MAX_ROWS:
                    raise CalibrationError(f"{path}: more than {schema.MAX_ROWS:,} rows; split the file")
                yield count + 1, row
        if count == 0:
            raise CalibrationError(f"{path}: a header only, no data rows")

    return header, rows()


def _guarded(path: Path, handle: io.TextIOBase, step: object) -> object:
    """Run one read step, turning decoding, gzip and CSV errors into one CalibrationError line."""
    try:
        return step()  # type: ignore[operator]
    except MeasurementError:
        handle.close()
        raise
    except UnicodeDecodeError as exc:
        handle.close()
        raise CalibrationError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); save it as UTF-8"
        ) from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        handle.close()
        raise CalibrationError(f"{path}: truncated or corrupt gzip file ({str(exc)[:60]})") from None
    except csv.Error as exc:
        handle.close()
        raise CalibrationError(f"{path}: malformed CSV ({str(exc)[:80]})") from None
    except OSError as exc:
        handle.close()
        raise CalibrationError(f"{path}: cannot read file ({exc.strerror or str(exc)[:60]})") from None


def read_csv_dicts(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV file (all in memory); a one-line error when it is not CSV."""
    header, rows = iter_csv(path)
    return header, [row for _, row in rows]
