"""Safe parsing of untrusted JSON and YAML cluster descriptions, with limits.

Why a copy of the job parser's rules instead of an import: ``topology`` is the lower layer and must not
import ``solver``. The rules are the same as :mod:`solver.jobs.parse`: a size cap, a nesting cap, strict
JSON (no NaN, no duplicate keys), YAML through a safe loader that refuses object-constructing tags,
duplicate keys and alias bombs. Every failure is a :class:`~topology.errors.TopologyError` naming the
source.

>>> parse_text('{"nodes": []}', source="c.json")
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

#: Largest document accepted, in characters.
MAX_DOCUMENT_CHARS = 16 * 1024 * 1024
#: Deepest nesting of arrays/objects accepted.
MAX_DEPTH = 64
#: Most YAML aliases accepted in one document ("billion laughs" guard).
MAX_YAML_ALIASES = 100


def _fail(source: str, message: str) -> TopologyError:
    return TopologyError([Problem(source or "<input>", "document", message)])


def _check_depth(obj: Any, source: str) -> None:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _fail(source, f"document is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def parse_json(text: str, *, source: str = "") -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys, bounded size and depth."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise _fail(source, f"document is {len(text)} characters; the limit is {MAX_DOCUMENT_CHARS}")

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
        raise _fail(source, f"document is nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise _fail(source, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:
        raise _fail(source, f"invalid JSON: {e}") from None
    _check_depth(obj, source)
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


def parse_yaml(text: str, *, source: str = "") -> Any:
    """One YAML document through a safe, bounded loader."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise _fail(source, f"document is {len(text)} characters; the limit is {MAX_DOCUMENT_CHARS}")
    try:
        loader = _BoundedSafeLoader(text)
        try:
            obj = loader.get_single_data()
        finally:
            loader.dispose()
    except RecursionError:
        raise _fail(source, f"document is nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as e:
        msg = str(e).replace("\n", " ")
        raise _fail(source, f"invalid YAML: {msg}"[:500]) from None
    _check_depth(obj, source)
    return obj


def parse_text(text: str, *, source: str = "") -> Any:
    """JSON when the text starts with ``{`` or ``[`` (or the source ends in ``.json``), else YAML."""
    if source.lower().endswith(".json") or text.lstrip()[:1] in ("{", "["):
        return parse_json(text, source=source)
    return parse_yaml(text, source=source)
