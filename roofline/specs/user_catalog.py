"""The user's own catalog: models, hardware files and calibrated profiles saved once, found by name.

It is one folder, ``$ROOFLINE_HOME`` when set, else the platform's user data folder
(``$XDG_DATA_HOME/roofline``, by default ``~/.local/share/roofline`` on Linux;
``~/Library/Application Support/roofline`` on macOS; ``%APPDATA%\\roofline`` on Windows).  It
holds ``models/NAME.yaml`` and ``hardware/NAME.yaml`` (a calibrated profile is a hardware file).
:func:`roofline.specs.load_model` and :func:`~roofline.specs.load_hardware` find these names after
the built-in ones; a built-in name cannot be saved over.  Files are validated before they are
saved and written whole (a temp file, then a rename).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Literal

from roofline.core.errors import OptionError, shown

Kind = Literal["hardware", "models"]
#: The environment variable that moves the user catalog.
HOME_VARIABLE = "ROOFLINE_HOME"
#: A saved name: lower-case letters, digits, '.', '_' and '-', starting with a letter or digit.
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def user_home() -> Path:
    """The user catalog folder: $ROOFLINE_HOME, else the platform's user data folder + 'roofline'."""
    override = os.environ.get(HOME_VARIABLE, "").strip()
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "roofline"


def folder(kind: Kind) -> Path:
    """Where saved files of ``kind`` live (it may not exist yet)."""
    return user_home() / kind


def entries(kind: Kind) -> dict[str, Path]:
    """Saved name -> file, read afresh each call (a save shows at once)."""
    where = folder(kind)
    if not where.is_dir():
        return {}
    return {p.stem: p for p in sorted(where.glob("*.yaml")) if NAME_PATTERN.fullmatch(p.stem)}


def check_home() -> Path:
    """The user catalog folder, refused (one line naming it and $ROOFLINE_HOME) when it or the nearest
    existing folder above it is not a writable folder."""
    home = user_home()
    where = f"{HOME_VARIABLE}={home}" if os.environ.get(HOME_VARIABLE, "").strip() else f"user catalog folder {home}"
    existing = home.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "is not a folder" if existing == home.absolute() else f"lies under {existing}, which is not a folder"
        raise OptionError(f"{where}: {what}; set {HOME_VARIABLE} to a folder (it is created if missing)")
    if not os.access(existing, os.W_OK):
        raise OptionError(f"{where}: folder {existing} is not writable; set {HOME_VARIABLE} to a writable folder")
    return home


def check_name(name: object, builtin: list[str], option: str = "name") -> str:
    """A name to save under: the pattern above, and not a built-in name."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name.endswith((".yaml", ".yml", ".json")):
        raise OptionError(
            f"{option}: {shown(name)} cannot be a catalog name; use lower-case letters, digits, "
            "'.', '_' and '-' (at most 64, no path)",
            parameters=(option,),
        )
    if name in builtin:
        raise OptionError(f"{option}: {name!r} is a built-in name; choose another", parameters=(option,))
    return name


def target(kind: Kind, name: str, force: bool = False, option: str = "name") -> Path:
    """The file a save of ``name`` writes; an existing one is refused unless ``force``, and so is a
    catalog folder that cannot hold it (a file, a device, under /dev/null, not writable)."""
    check_home()
    path = folder(kind) / f"{name}.yaml"
    if path.exists() and not path.is_file():
        raise OptionError(f"{option}: {path} exists and is not a file; remove it or choose another name")
    if path.exists() and not force:
        raise OptionError(
            f"{option}: {name!r} is already saved ({path}); pass force= to replace it", parameters=(option, "force")
        )
    return path


def with_name(text: str, name: str) -> str:
    """A spec YAML's text with its top-level ``name:`` set to ``name`` (comments kept)."""
    line = f"name: {name}"
    if re.search(r"(?m)^name:.*$", text):
        return re.sub(r"(?m)^name:.*$", lambda _: line, text, count=1)
    return f"{line}\n{text}"
