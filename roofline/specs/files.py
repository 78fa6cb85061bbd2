"""Reading spec YAML and config.json safely: bounded size, depth and work, one-line errors.

A spec file is at most :data:`~roofline.core.files.MAX_SPEC_FILE_BYTES`, UTF-8, nested at most
:data:`MAX_DEPTH` levels, without YAML aliases (``*name``: an alias bomb of a few hundred
bytes expands to gigabytes) and without duplicate keys (YAML would silently keep the last).
Every failure is a :class:`~roofline.core.errors.SpecError` naming the file.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from roofline.core.errors import SpecError, shown
from roofline.core.files import MAX_SPEC_FILE_BYTES, read_text_limited
from roofline.core.jsontext import load_json
from roofline.core.types import JSONObject

#: Deepest nesting of mappings and lists in a spec or config.json (real ones: 5 levels).
MAX_DEPTH = 32
#: Most values (keys, scalars, lists) in one spec file or config.json (a chip or model: a few hundred; a
#: shipped calibrated profile: about 1,400).  Checked before any value is built.
MAX_NODES = 20_000
_MERGE_TAG = "tag:yaml.org,2002:merge"
_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader (libyaml when present) refusing aliases, duplicate keys, deep nests."""

    def construct_document(self, node: yaml.Node) -> object:
        _check_nodes(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise yaml.constructor.ConstructorError(
                    None, None, "a key must be a plain name, not a list or mapping", key_node.start_mark
                )
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {shown(key_node.value)}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def _check_nodes(root: yaml.Node) -> None:
    """Refuse aliases (a node reached twice), nesting past MAX_DEPTH and more than MAX_NODES."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise yaml.constructor.ConstructorError(
                None, None, "YAML aliases (*name) are not allowed in spec files; write the value out", node.start_mark
            )
        seen.add(id(node))
        if depth > MAX_DEPTH or len(seen) > MAX_NODES:
            limit = f"nested deeper than {MAX_DEPTH} levels" if depth > MAX_DEPTH else f"more than {MAX_NODES:,} values"
            raise yaml.constructor.ConstructorError(None, None, limit, node.start_mark)
        if isinstance(node, yaml.MappingNode):
            stack.extend((part, depth + 1) for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)


def load_yaml_text(text: str, origin: str) -> JSONObject:
    """A YAML mapping from ``text``; malformed YAML, aliases or duplicates -> one SpecError line."""
    try:
        data = yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{origin}: malformed YAML{where}: {problem}") from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an int of 5000 digits
        raise SpecError(f"{origin}: malformed YAML: {str(exc).splitlines()[0][:80]}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{origin}: expected a mapping of keys to values at the top level (got {type(data).__name__})")
    return data


def read_yaml(path: Path) -> JSONObject:
    """A spec YAML file as a mapping (size, encoding, aliases, duplicates and depth checked)."""
    text = read_text_limited(path, MAX_SPEC_FILE_BYTES, SpecError, "spec")
    data = load_yaml_text(text, str(path))
    check_tree(data, str(path))
    return data


def read_json(path: Path) -> JSONObject:
    """A JSON object (e.g. a Hugging Face config.json), with a one-line error naming the file."""
    text = read_text_limited(path, MAX_SPEC_FILE_BYTES, SpecError, "config")
    data = load_json(text, str(path), SpecError, finite=False, max_nodes=MAX_NODES)
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object at the top level (got {type(data).__name__})")
    return data


def check_tree(data: JSONObject, origin: str, finite: bool = True) -> None:
    """Refuse deep nesting, too many values, non-text keys and (``finite``) NaN or infinities.

    Iterative, so untrusted depth never recurses; names the dotted field of the first problem.
    """
    stack: list[tuple[object, str, int]] = [(data, "", 0)]
    count = 0
    while stack:
        value, where, depth = stack.pop()
        count += 1
        if depth > MAX_DEPTH or count > MAX_NODES:
            problem = (
                f"nested deeper than {MAX_DEPTH} levels" if depth > MAX_DEPTH else f"more than {MAX_NODES:,} values"
            )
            raise SpecError(f"{origin}: field {where or '(top level)'!r}: {problem}")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SpecError(f"{origin}: key {shown(key)} under {where or '(top level)'!r} must be text")
                stack.append((item, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        elif finite and isinstance(value, float) and not math.isfinite(value):
            raise SpecError(f"{origin}: field {where!r}: must be a finite number (got {value})")
        elif finite and isinstance(value, int) and value.bit_length() > 100:
            raise SpecError(f"{origin}: field {where!r}: number out of range (got {shown(value)})")
