"""Safe parsing of cluster-description text (JSON or YAML) into Python objects, under limits.

Why here and not ``solver.jobs.parse``: topology is the lower layer and must not import ``solver``. The
rules are the same: a size cap, a nesting cap, JSON without NaN/Infinity, YAML through a safe loader that
refuses Python object tags and alias bombs. Anything wrong is a :class:`~topology.errors.TopologyError`
naming the file and the line, never a traceback.

>>> parse_text('{"workers": []}', source="w.json")
{'workers': []}
>>> try:
...     parse_text("a: !!python/object/apply:os.system ['true']", source="evil.yaml")
... except TopologyError as e:
...     print(str(e)[:40])
evil.yaml: document: invalid YAML: could
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from topology.errors import Problem, TopologyError

#: Largest document accepted, in characters (``kubectl get pods -A -o json`` of a big cluster is large).
MAX_TEXT_CHARS = 256 * 1024 * 1024
#: Deepest nesting of arrays/objects accepted.
MAX_DEPTH = 64
#: Most YAML aliases accepted in one document (each may expand a large anchor).
MAX_YAML_ALIASES = 100


def _fail(source: str, message: str) -> TopologyError:
    return TopologyError([Problem(source or "<input>", "document", message)])


def _check_depth(obj: Any, source: str) -> None:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _fail(source, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def parse_json_text(text: str, *, source: str = "") -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys, bounded size and depth.

    >>> parse_json_text("[1, 2]")
    [1, 2]
    """
    if len(text) > MAX_TEXT_CHARS:
        raise _fail(source, f"document is {len(text)} characters; the limit is {MAX_TEXT_CHARS}")

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
        raise _fail(source, f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise _fail(source, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:
        raise _fail(source, f"invalid JSON: {e}") from None
    _check_depth(obj, source)
    return obj


class _BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader that also bounds aliases and nesting (no "billion laughs")."""

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


def parse_yaml_text(text: str, *, source: str = "") -> Any:
    """One YAML document through a bounded safe loader.

    >>> parse_yaml_text("kind: List\\nitems: []")
    {'kind': 'List', 'items': []}
    """
    if len(text) > MAX_TEXT_CHARS:
        raise _fail(source, f"document is {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
    try:
        loader = _BoundedSafeLoader(text)
        try:
            obj = loader.get_single_data()
        finally:
            loader.dispose()
    except RecursionError:
        raise _fail(source, f"nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as e:
        raise _fail(source, f"invalid YAML: {str(e).replace(chr(10), ' ')}"[:400]) from None
    except (ValueError, TypeError) as e:  # e.g. an out-of-range timestamp the safe loader rejects
        raise _fail(source, f"invalid YAML: {e}"[:400]) from None
    _check_depth(obj, source)
    return obj


def parse_text(text: str, *, source: str = "") -> Any:
    """JSON when the text starts with ``{`` or ``[``, YAML otherwise (YAML is a superset, but strict JSON
    parsing gives better messages and refuses NaN).

    >>> parse_text("nodes: []")
    {'nodes': []}
    """
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped[:1] in ("{", "["):
        return parse_json_text(stripped, source=source)
    return parse_yaml_text(text, source=source)
