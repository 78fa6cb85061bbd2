"""Type names shared by every layer: a number that may be an array, and JSON-shaped data.

``Number`` is what the estimators take and return (a float, or a numpy array that broadcasts);
``JSONValue``/``JSONObject`` are what a parsed JSON or YAML document holds (config.json, spec files,
measurement JSON) and what the commands print with ``--json``.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np

#: A scalar or an array of them (the estimators broadcast over numpy arrays).
Number: TypeAlias = float | np.ndarray
#: One value of a parsed JSON/YAML document.
JSONValue: TypeAlias = "str | int | float | bool | None | list[JSONValue] | dict[str, JSONValue]"
#: A parsed JSON/YAML mapping (config.json, a spec file, one measured row).
JSONObject: TypeAlias = "dict[str, JSONValue]"
