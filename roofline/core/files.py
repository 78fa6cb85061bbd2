"""Files: reading within size limits, as UTF-8 text; writing whole or not at all, never over a device.

Reading (:func:`read_input_bytes`, :func:`read_input_text`) is bounded for every kind of file: a
regular file is refused by its size before it is opened; a stream (a FIFO, ``/dev/zero``, a
character device) is read in chunks and refused at its first NUL byte or past the limit, so an
endless input ends in well under a second.  Text must be UTF-8: UTF-16/32 (by byte-order mark or
NUL pattern), gzip where text is expected, binary data and Latin-1 each get a one-line message.

Writing (:func:`write_atomic`): a new or regular file is written to a temp file and renamed onto
the path (no partial file); a character device or a FIFO (``/dev/null``, ``/dev/stdout``, a
named pipe) is never renamed over: the whole output is rendered first, then streamed into it.
Anything else (a socket, a block device, a folder) is refused with one line naming the path.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import select
import stat
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from roofline.core.errors import OptionError, RooflineError, shown

# --------------------------------------------------------------------------- writing


def output_kind(path: str | Path) -> str:
    """'new', 'regular' or 'stream' (character device or FIFO, written through, never replaced).

    Raises OptionError (one line naming the path) for a folder, a socket or a block device.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # created (or refused) when written
        return "new"
    except OSError as exc:
        raise OptionError(f"{path}: cannot write file ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    what = "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "a block device"
    hint = "give a file name" if stat.S_ISDIR(mode) else "give a regular file, a FIFO or a character device"
    raise OptionError(f"{path}: is {what}; {hint}")


def _open_stream(path: Path) -> int:
    """A write descriptor on a FIFO or device; a FIFO nobody reads is refused instead of blocking."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise RooflineError(f"{path}: FIFO has no reader; start the reader first or give a file") from None
        raise
    os.set_blocking(fd, True)
    return fd


def _write_stream(target: Path, write: Callable[[IO[Any]], object], binary: bool) -> None:
    """Render everything into memory first (a failure writes nothing), then stream it out."""
    buffer: IO[Any] = io.BytesIO() if binary else io.StringIO(newline="")
    write(buffer)
    value = buffer.getvalue()
    data = value if binary else value.encode("utf-8")
    fd = _open_stream(target)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def write_atomic(path: str | Path, write: Callable[[IO[Any]], object], binary: bool = False) -> Path:
    """Let ``write`` fill ``path``: a new or regular file through a temp file and a rename (all or
    nothing); a character device or FIFO written through, rendered in full before the first byte.

    Creates parent folders; an OS error becomes one RooflineError line naming the path.
    """
    target = Path(path)
    tmp: str | None = None
    try:
        if output_kind(target) == "stream":
            _write_stream(target, write, binary)
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:100]}.", suffix=".tmp")
        mode = "wb" if binary else "w"
        with os.fdopen(fd, mode, **({} if binary else {"encoding": "utf-8", "newline": ""})) as handle:
            write(handle)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it owner-only; outputs are meant to be shared
        os.replace(tmp, target)
    except OSError as exc:
        raise RooflineError(f"{path}: cannot write file ({exc.strerror or exc})") from None
    finally:
        if tmp is not None and os.path.lexists(tmp):
            Path(tmp).unlink(missing_ok=True)
    return target


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (streamed into a device or FIFO)."""
    return write_atomic(path, lambda handle: handle.write(text))


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (streamed into a device or FIFO)."""
    return write_atomic(path, lambda handle: handle.write(data), binary=True)


def check_output_path(path: str | Path, name: str = "") -> None:
    """Refuse, before any work, an output that cannot be written: a folder (or a name ending in /),
    a socket or block device, a path under a file, or a folder that is not writable."""
    text = str(path)
    where = f"{name}: " if name else ""
    target = Path(text)
    if text.endswith(("/", os.sep)) or target.is_dir():
        raise OptionError(f"{where}{shown(text)} is a folder; give a file name such as {target / 'out.csv'}")
    try:
        kind = output_kind(target)
    except OptionError as exc:
        raise OptionError(f"{where}{exc}") from None
    if kind == "stream":
        return
    parent = target.absolute().parent  # the nearest existing folder above it is where it gets created
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OptionError(f"{where}{shown(str(parent))} is a file, not a folder")
    if not os.access(parent, os.W_OK):
        raise OptionError(f"{where}folder {shown(str(parent))} is not writable")


# --------------------------------------------------------------------------- reading

#: Largest spec YAML or config.json read (real ones are a few kB): bounds parse time (about
#: 1 s for a full 1 MiB YAML file) and memory.
MAX_SPEC_FILE_BYTES = 2**20
#: Largest measurement CSV read, counted after gzip decompression (public tables: up to ~9 MB).
MAX_MEASUREMENT_FILE_BYTES = 64 * 2**20
#: Chunk size of a streamed read: the first NUL of ``/dev/zero`` is seen after one chunk.
_CHUNK = 2**20
_GZIP_MAGIC = b"\x1f\x8b"
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def _size_message(path: str | Path, size: int, limit: int, kind: str) -> str:
    unit = f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit:,} bytes"
    return (
        f"{path}: file is larger than {limit:,} bytes (got {size:,}{'+' if size > limit else ''}); "
        f"{kind} files are limited to {unit}"
    )


def _nul_message(path: str | Path, data: bytes) -> str:
    """Why bytes with NULs are not UTF-8 text: UTF-16/32 (NUL every other byte) or binary."""
    sample = data[:4096]
    half = len(sample) / 2
    alternating = max(sample[1::2].count(0), sample[0::2].count(0)) > 0.4 * half
    if len(sample) >= 8 and alternating and sample.count(0) < 0.9 * len(sample):
        return f"{path}: UTF-16 text (NUL bytes between characters); save it as UTF-8"
    return f"{path}: binary file (contains NUL bytes); expected UTF-8 text"


def _read_stream(handle: IO[bytes], path: str | Path, limit: int, error: type[RooflineError], kind: str) -> bytes:
    """Chunks up to ``limit`` + 1 bytes; a NUL in a chunk other than a gzip header ends it early."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = handle.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        if b"\x00" in chunk and not (total == 0 and chunk.startswith(_GZIP_MAGIC)) and not chunks_are_gzip(chunks):
            if total == 0:
                sniff_text(chunk, path, error)  # a byte-order mark names UTF-16/32
            raise error(_nul_message(path, chunk))
        chunks.append(chunk)
        total += len(chunk)
    data = b"".join(chunks)
    if len(data) > limit:
        raise error(_size_message(path, len(data), limit, kind))
    return data


def chunks_are_gzip(chunks: list[bytes]) -> bool:
    """True when the first chunk read starts with the gzip magic (its NULs are not a binary file)."""
    return bool(chunks) and chunks[0].startswith(_GZIP_MAGIC)


#: Longest wait for a FIFO's writer to send its first bytes (a FIFO nobody writes is refused, not awaited).
FIFO_WAIT_S = 1.0


def open_input(target: str | Path, error: type[RooflineError] = RooflineError) -> IO[bytes]:
    """Open for reading without blocking on a FIFO that has no writer: it gets FIFO_WAIT_S to send
    its first bytes, then is refused."""
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if stat.S_ISFIFO(os.fstat(fd).st_mode):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        if not poller.poll(FIFO_WAIT_S * 1000):
            os.close(fd)
            raise error(f"{target}: FIFO with no writer (nothing arrived in {FIFO_WAIT_S:g} s); start the writer first")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def sniff_text(head: bytes, path: str | Path, error: type[RooflineError]) -> bool:
    """The first bytes of a text input: True when gzip data; UTF-16/32 (a byte-order mark, or NUL
    bytes between characters) refused with one line.  For streamed readers; see :func:`decode_text`."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            raise error(f"{path}: {name} text (byte-order mark {bom.hex(' ').upper()}); save it as UTF-8")
    if head.startswith(_GZIP_MAGIC):
        return True
    if b"\x00" in head:
        raise error(_nul_message(path, head))
    return False


def read_bytes_limited(path: str | Path, limit: int, error: type[RooflineError], kind: str) -> bytes:
    """The bytes of ``path``, refused with ``error`` (one line) when over ``limit`` or unreadable.

    A stream (``/dev/zero``, a FIFO) is read at most to ``limit`` + 1 bytes and refused at its
    first NUL byte, so no input runs without end.
    """
    target = Path(path)
    try:
        mode = target.stat().st_mode
        if stat.S_ISDIR(mode):
            raise error(f"{path}: is a folder, give a file")
        if stat.S_ISREG(mode) and target.stat().st_size > limit:
            raise error(_size_message(path, target.stat().st_size, limit, kind))
        with open_input(target, error) as handle:
            return _read_stream(handle, path, limit, error, kind)
    except OSError as exc:
        raise error(f"{path}: cannot read file ({exc.strerror or exc})") from None


def decode_text(data: bytes, path: str | Path, error: type[RooflineError]) -> str:
    """UTF-8 text (a leading byte-order mark dropped); UTF-16/32, gzip, binary or Latin-1 bytes
    are refused with one line naming the file and what to do."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise error(f"{path}: {name} text (byte-order mark {bom.hex(' ').upper()}); save it as UTF-8")
    if data.startswith(_GZIP_MAGIC):
        raise error(f"{path}: gzip-compressed data where UTF-8 text is expected; decompress it (gunzip) first")
    if b"\x00" in data:
        raise error(_nul_message(path, data))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}; Latin-1 or another "
            "encoding?); save it as UTF-8"
        ) from None


def read_text_limited(path: str | Path, limit: int, error: type[RooflineError], kind: str) -> str:
    """:func:`read_bytes_limited` then :func:`decode_text`."""
    return decode_text(read_bytes_limited(path, limit, error, kind), path, error)


def gunzip_limited(data: bytes, path: str | Path, limit: int, error: type[RooflineError], kind: str) -> bytes:
    """Decompress gzip ``data`` to at most ``limit`` bytes (a bomb is refused after ``limit``)."""
    out = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            while chunk := handle.read(min(_CHUNK, limit + 1 - out.tell())):
                out.write(chunk)
                if out.tell() > limit:
                    raise error(
                        f"{path}: decompresses to more than {limit:,} bytes; {kind} files are limited to "
                        f"{limit // 2**20} MiB"
                    )
    except (OSError, EOFError, zlib.error) as exc:
        raise error(f"{path}: corrupt or truncated gzip data ({exc})") from None
    return out.getvalue()


def read_input_text(path: str | Path, limit: int, error: type[RooflineError], kind: str, gzip_ok: bool = True) -> str:
    """UTF-8 text of an input file, bounded (:func:`read_bytes_limited`): gzip data (any name) is
    decompressed to at most ``limit`` bytes when ``gzip_ok``, else refused as not text."""
    data = read_bytes_limited(path, limit, error, kind)
    if gzip_ok and data.startswith(_GZIP_MAGIC):
        data = gunzip_limited(data, path, limit, error, kind)
    return decode_text(data, path, error)


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
