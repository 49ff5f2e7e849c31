"""The one place untrusted JSON and YAML text becomes Python objects, under limits.

Why one implementation for the whole project: job files, inventories and importer inputs all come from
outside; the rules must be the same everywhere and fixed once. The rules: a size cap, a nesting cap, strict
JSON (no NaN/Infinity, no duplicate keys), YAML through a safe loader that refuses object-constructing
tags, duplicate keys and alias bombs, and that turns a constructor failure (an impossible date such as
``2001-12-99``) into a refusal rather than a traceback.

:func:`load_json`, :func:`load_yaml` and :func:`load_text` raise :class:`UnsafeDocument` (a ``ValueError``);
the layers wrap it in their own structured errors: :func:`parse_text` and friends here raise
:class:`~topology.errors.TopologyError`, :mod:`solver.jobs.parse` raises ``JobValidationError``. This module
lives in ``topology`` because ``topology`` is the lower layer (``solver`` may import it, never the reverse).

>>> load_text('{"nodes": []}')
{'nodes': []}
>>> try:
...     parse_text("!!python/object/apply:os.system ['true']", source="evil.yaml")
... except TopologyError as e:
...     e.problems[0].item
'document'
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from topology.errors import Problem, TopologyError

#: Largest document accepted by default, in characters.
MAX_DOCUMENT_CHARS = 16 * 1024 * 1024
#: Deepest nesting of arrays/objects accepted.
MAX_DEPTH = 64
#: Most YAML aliases accepted in one document ("billion laughs" guard).
MAX_YAML_ALIASES = 100


class UnsafeDocument(ValueError):
    """Text that is not a well-formed, bounded JSON/YAML document; the message says why."""


def _check_size(text: str, max_chars: int) -> None:
    if len(text) > max_chars:
        raise UnsafeDocument(f"document is {len(text)} characters; the limit is {max_chars}")


def _check_depth(obj: Any) -> None:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UnsafeDocument(f"document is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def load_json(text: str, *, max_chars: int = MAX_DOCUMENT_CHARS) -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys, bounded size and depth."""
    _check_size(text, max_chars)

    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ValueError(f"duplicate key {k!r}")
            out[k] = v
        return out

    try:
        obj = json.loads(text, parse_constant=no_constants, object_pairs_hook=no_duplicates)
    except RecursionError:
        raise UnsafeDocument(f"document is nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise UnsafeDocument(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:
        raise UnsafeDocument(f"invalid JSON: {e}") from None
    _check_depth(obj)
    return obj


class _BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader that also bounds alias use and nesting and refuses duplicate mapping keys."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} aliases")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.YAMLError(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # type: ignore[override]
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "mapping key is not hashable", key_node.start_mark
                ) from None
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, *, max_chars: int = MAX_DOCUMENT_CHARS) -> Any:
    """One YAML document through a safe, bounded loader."""
    _check_size(text, max_chars)
    try:
        loader = _BoundedSafeLoader(text)
        try:
            obj = loader.get_single_data()
        finally:
            loader.dispose()
    except RecursionError:
        raise UnsafeDocument(f"document is nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as e:
        raise UnsafeDocument(f"invalid YAML: {str(e).replace(chr(10), ' ')}"[:500]) from None
    except (ValueError, TypeError, OverflowError) as e:  # a constructor refused a value (2001-12-99)
        raise UnsafeDocument(f"invalid YAML value: {e}"[:500]) from None
    _check_depth(obj)
    return obj


def load_text(text: str, *, max_chars: int = MAX_DOCUMENT_CHARS) -> Any:
    """JSON when the text starts with ``{`` or ``[``, else YAML — by content, not by file name (YAML is a
    superset, but strict JSON parsing gives better messages and refuses NaN)."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped[:1] in ("{", "["):
        return load_json(stripped, max_chars=max_chars)
    return load_yaml(text, max_chars=max_chars)


def _topology_error(source: str, e: UnsafeDocument) -> TopologyError:
    return TopologyError([Problem(source or "<input>", "document", str(e))])


def parse_json(text: str, *, source: str = "", max_chars: int = MAX_DOCUMENT_CHARS) -> Any:
    """:func:`load_json`, refusing with a :class:`~topology.errors.TopologyError` naming ``source``."""
    try:
        return load_json(text, max_chars=max_chars)
    except UnsafeDocument as e:
        raise _topology_error(source, e) from None


def parse_yaml(text: str, *, source: str = "", max_chars: int = MAX_DOCUMENT_CHARS) -> Any:
    """:func:`load_yaml`, refusing with a :class:`~topology.errors.TopologyError` naming ``source``."""
    try:
        return load_yaml(text, max_chars=max_chars)
    except UnsafeDocument as e:
        raise _topology_error(source, e) from None


def parse_text(text: str, *, source: str = "", max_chars: int = MAX_DOCUMENT_CHARS) -> Any:
    """:func:`load_text`, refusing with a :class:`~topology.errors.TopologyError` naming ``source``."""
    try:
        return load_text(text, max_chars=max_chars)
    except UnsafeDocument as e:
        raise _topology_error(source, e) from None
