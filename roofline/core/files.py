"""Files: writing whole or not at all (a temp file, then a rename); reading within size limits."""

from __future__ import annotations

import gzip
import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from roofline.core.errors import RooflineError


def write_atomic(path: str | Path, write: Callable[[IO[Any]], object], binary: bool = False) -> Path:
    """Create parent folders, let ``write`` fill a temp file, rename it onto ``path``.

    No partial file is left on failure; an OS error becomes one RooflineError line naming the path.
    """
    target = Path(path)
    if target.is_dir():
        raise RooflineError(f"{path}: is a folder, give a file name")
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        mode = "wb" if binary else "w"
        with os.fdopen(fd, mode, **({} if binary else {"encoding": "utf-8", "newline": ""})) as handle:
            write(handle)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it owner-only; outputs are meant to be shared
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise RooflineError(f"{path}: cannot write file ({exc.strerror or exc})") from None
    return target


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_atomic(path, lambda handle: handle.write(text))


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return write_atomic(path, lambda handle: handle.write(data), binary=True)


# --------------------------------------------------------------------------- reading

#: Largest spec YAML or config.json read (real ones are a few kB): bounds parse time (about
#: 1 s for a full 1 MiB YAML file) and memory.
MAX_SPEC_FILE_BYTES = 2**20
#: Largest measurement CSV read, counted after gzip decompression (public tables: up to ~9 MB).
MAX_MEASUREMENT_FILE_BYTES = 64 * 2**20


def _size_message(path: str | Path, size: int, limit: int, kind: str) -> str:
    return (
        f"{path}: file is larger than {limit:,} bytes (got {size:,}{'+' if size > limit else ''}); "
        f"{kind} files are limited to {limit // 2**20} MiB"
    )


def read_bytes_limited(path: str | Path, limit: int, error: type[RooflineError], kind: str) -> bytes:
    """The bytes of ``path``, refused with ``error`` (one line) when over ``limit`` or unreadable."""
    target = Path(path)
    try:
        if target.is_dir():
            raise error(f"{path}: is a folder, give a file")
        size = target.stat().st_size
        if size > limit:
            raise error(_size_message(path, size, limit, kind))
        with open(target, "rb") as handle:
            data = handle.read(limit + 1)  # a device or a growing file may lie about its size
    except OSError as exc:
        raise error(f"{path}: cannot read file ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise error(_size_message(path, len(data), limit, kind))
    return data


def decode_text(data: bytes, path: str | Path, error: type[RooflineError]) -> str:
    """UTF-8 text (a leading byte-order mark dropped); binary or Latin-1 bytes name the file."""
    if b"\x00" in data:
        raise error(f"{path}: binary file (contains NUL bytes); expected UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); save it as UTF-8") from None


def read_text_limited(path: str | Path, limit: int, error: type[RooflineError], kind: str) -> str:
    """:func:`read_bytes_limited` then :func:`decode_text`."""
    return decode_text(read_bytes_limited(path, limit, error, kind), path, error)


def gzip_size_within(path: str | Path, limit: int) -> bool:
    """True when ``path`` decompresses to at most ``limit`` bytes (one fast pass, nothing kept).

    Lets a small ``.gz`` that expands past the limit be refused before any parsing.
    Raises what :mod:`gzip` raises for a corrupt or truncated file.
    """
    total = 0
    with gzip.open(path, "rb") as handle:
        while chunk := handle.read(2**20):
            total += len(chunk)
            if total > limit:
                return False
    return True


class LimitedReader(io.RawIOBase):
    """A binary stream that raises ``error`` once more than ``limit`` bytes were read from it.

    Wraps a decompressing stream so a small ``.gz`` cannot expand without bound; with
    ``nul_error``, a NUL byte (a binary file) raises that error.
    """

    def __init__(
        self, raw: IO[bytes], limit: int, error: RooflineError, nul_error: RooflineError | None = None
    ) -> None:
        self._raw, self._left, self._error, self._nul = raw, limit, error, nul_error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(min(len(buffer), self._left + 1))
        self._left -= len(data)
        if self._left < 0:
            raise self._error
        if self._nul is not None and b"\x00" in data:
            raise self._nul
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()
