"""Safe parsing of untrusted JSON, YAML and XML text into Python objects.

Why a module of its own: every reader and every cluster importer takes text from outside. Here, and only
here, that text becomes objects, under limits: a size cap, a nesting cap, YAML through a safe loader that
refuses object-constructing tags and alias bombs, XML through ``defusedxml`` with DTDs, entities and
external references forbidden. Anything wrong becomes a ``malformed`` :class:`~solver.jobs.errors.Issue`.

>>> parse_json('{"a": [1, 2]}', source="x.json")
{'a': [1, 2]}
>>> try:
...     parse_yaml("!!python/object/apply:os.system ['true']", source="evil.yaml")
... except JobValidationError as e:
...     e.issues[0].code
'malformed'
"""

from __future__ import annotations

import json
from typing import Any
from xml.etree.ElementTree import Element

import yaml
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as _xml_fromstring

from solver.jobs.errors import JobValidationError, issue

#: Largest document accepted, in characters.
MAX_DOCUMENT_CHARS = 16 * 1024 * 1024
#: Deepest nesting of arrays/objects/elements accepted.
MAX_DEPTH = 64
#: Most YAML aliases accepted in one document (each may expand a large anchor: "billion laughs").
MAX_YAML_ALIASES = 100


def _malformed(source: str, message: str) -> JobValidationError:
    return JobValidationError([issue("malformed", source or "<input>", message)])


def _check_size(text: str, source: str) -> None:
    if len(text) > MAX_DOCUMENT_CHARS:
        raise _malformed(source, f"document is {len(text)} characters; the limit is {MAX_DOCUMENT_CHARS}")


def _check_depth(obj: Any, source: str) -> None:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _malformed(source, f"document is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def parse_json(text: str, *, source: str = "") -> Any:
    """Parse JSON strictly: no NaN/Infinity, no duplicate keys, bounded size and depth."""
    _check_size(text, source)

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
        raise _malformed(source, f"document is nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise _malformed(source, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:
        raise _malformed(source, f"invalid JSON: {e}") from None
    _check_depth(obj, source)
    return obj


class _BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader that also bounds alias use and refuses duplicate mapping keys."""

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
    """Parse one YAML document with a safe loader: no Python object tags, bounded aliases and depth."""
    _check_size(text, source)
    try:
        loader = _BoundedSafeLoader(text)
        try:
            obj = loader.get_single_data()
        finally:
            loader.dispose()
    except RecursionError:
        raise _malformed(source, f"document is nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as e:
        msg = str(e).replace("\n", " ")
        raise _malformed(source, f"invalid YAML: {msg}"[:500]) from None
    _check_depth(obj, source)
    return obj


def parse_xml(text: str, *, source: str = "") -> Element:
    """Parse XML with DTDs, entity declarations and external references refused (XXE, billion laughs)."""
    _check_size(text, source)
    try:
        root = _xml_fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as e:
        raise _malformed(source, f"XML refused for safety: {type(e).__name__}") from None
    except RecursionError:
        raise _malformed(source, f"document is nested deeper than {MAX_DEPTH} levels") from None
    except Exception as e:
        raise _malformed(source, f"invalid XML: {e}"[:500]) from None
    depth_stack = [(root, 1)]
    while depth_stack:
        el, d = depth_stack.pop()
        if d > MAX_DEPTH:
            raise _malformed(source, f"document is nested deeper than {MAX_DEPTH} levels")
        depth_stack.extend((c, d + 1) for c in el)
    return root
