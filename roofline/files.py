"""Writing output files whole or not at all: a temp file beside the target, then a rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .errors import RooflineError


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
