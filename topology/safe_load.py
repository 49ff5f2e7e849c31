"""The one place untrusted JSON and YAML text becomes Python objects, under limits.

Why one implementation for the whole project: job files, inventories and importer inputs all come from
outside; the rules must be the same everywhere and fixed once. The rules: a size cap, a nesting cap, strict
JSON (no NaN/Infinity, no duplicate keys), YAML through a safe loader that refuses object-constructing
tags, duplicate keys and alias bombs, and that turns a constructor failure (an impossible date such as
``2001-12-99``) into a refusal rather than a traceback. And one rule for every number of every document
(:func:`check_values`): finite, and of magnitude at most :data:`MAX_NUMBER` (2^53, the integers an IEEE
double holds exactly: I-JSON, RFC 7493 §2.2). ``1e400`` (which Python reads as infinity), an integer of
hundreds of digits and YAML's ``.inf`` are refused naming the field; so is a string holding a lone UTF-16
surrogate (``"\ud800"``), which no UTF-8 output can carry. Fields have narrower ranges of their own,
checked by their models.

:func:`load_json`, :func:`load_yaml` and :func:`load_text` raise :class:`UnsafeDocument` (a ``ValueError``);
the layers wrap it in their own structured errors: :func:`parse_text` and friends here raise
:class:`~placer.topology.errors.TopologyError`, :mod:`placer.solver.jobs.parse` raises
``JobValidationError``. This module
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
import math
from typing import Any

import yaml

from placer.topology.errors import Problem, TopologyError

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_CHARS",
    "MAX_EXPANDED_NODES",
    "MAX_NUMBER",
    "MAX_YAML_ALIASES",
    "MAX_YAML_CHARS",
    "UnsafeDocument",
    "check_values",
    "load_json",
    "load_text",
    "load_yaml",
    "parse_json",
    "parse_text",
    "parse_yaml",
]

#: Largest document accepted by default, in characters.
MAX_DOCUMENT_CHARS = 16 * 1024 * 1024
#: Deepest nesting of arrays/objects accepted.
MAX_DEPTH = 64
#: Most YAML aliases accepted in one document ("billion laughs" guard).
MAX_YAML_ALIASES = 100
#: Most values a document may expand to once aliases are followed (a second alias-bomb guard: 81 aliases
#: nine levels deep already expand to hundreds of millions).
MAX_EXPANDED_NODES = 2_000_000
#: Largest YAML document accepted, in characters: the safe loader is pure Python (a few seconds per
#: megabyte), so YAML gets a tighter cap than JSON, whatever a caller allows for JSON.
MAX_YAML_CHARS = 8 * 1024 * 1024


#: Largest magnitude of any number in a document (2^53: I-JSON, RFC 7493 §2.2).
MAX_NUMBER = 2**53


def _where(path: list[str | int]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "document"


def check_values(obj: Any) -> None:
    """Refuse (:class:`UnsafeDocument`, naming the field) a number that is not finite or whose magnitude
    exceeds :data:`MAX_NUMBER`, and a string or key holding a lone surrogate.

    >>> check_values({"nodes": [{"cpu_cores": 8, "price": 2.5}]})
    >>> try:
    ...     check_values({"nodes": [{"cpu_cores": float("inf")}]})
    ... except UnsafeDocument as e:
    ...     print(e)
    nodes[0].cpu_cores: inf is not a finite number
    """
    stack: list[tuple[Any, list[str | int]]] = [(obj, [])]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for k, v in node.items():
                if isinstance(k, str):
                    _check_string(k, path)
                stack.append((v, [*path, str(k)]))
        elif isinstance(node, list):
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend((v, [*path, i]) for i, v in enumerate(node))
        elif isinstance(node, bool):
            continue
        elif isinstance(node, int):
            if abs(node) > MAX_NUMBER:
                digits = len(str(abs(node))) if abs(node) < 10**4000 else "thousands of"
                raise UnsafeDocument(
                    f"{_where(path)}: an integer of {digits} digits is beyond the largest accepted "
                    f"magnitude 2^53 ({MAX_NUMBER})",
                    _where(path),
                )
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise UnsafeDocument(f"{_where(path)}: {node} is not a finite number", _where(path))
            if abs(node) > MAX_NUMBER:
                raise UnsafeDocument(
                    f"{_where(path)}: {node:g} is beyond the largest accepted magnitude 2^53 ({MAX_NUMBER})",
                    _where(path),
                )
        elif isinstance(node, str):
            _check_string(node, path)


def _check_string(text: str, path: list[str | int]) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsafeDocument(
            f"{_where(path)}: a string holds a lone UTF-16 surrogate (not valid Unicode text)", _where(path)
        ) from None


class UnsafeDocument(ValueError):
    """Text that is not a well-formed, bounded JSON/YAML document; the message says why. ``path`` names
    the field when one value broke the rule (a number, a string), else it is None."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


def _check_size(text: str, max_chars: int) -> None:
    if len(text) > max_chars:
        raise UnsafeDocument(f"document is {len(text)} characters; the limit is {max_chars}")


def _check_depth(obj: Any, max_expanded: int | None = None) -> None:
    """Refuse documents nested deeper than :data:`MAX_DEPTH` or whose *expanded* size (YAML aliases repeat
    a shared subtree) exceeds :data:`MAX_EXPANDED_NODES`. Each container is visited once and its height
    and expanded size memoized by identity, so an alias bomb is measured in linear time, not expanded."""
    memo: dict[int, tuple[int, int]] = {}  # id -> (height, expanded size)
    stack: list[tuple[Any, bool]] = [(obj, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, dict | list) or (id(node) in memo and not done):
            continue
        children = [
            v for v in (node.values() if isinstance(node, dict) else node) if isinstance(v, dict | list)
        ]
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in memo)
            continue
        height = 1 + max((memo[id(c)][0] for c in children), default=0)
        size = 1 + len(node) + sum(memo[id(c)][1] for c in children)
        if height > MAX_DEPTH:
            raise UnsafeDocument(f"document is nested deeper than {MAX_DEPTH} levels")
        if max_expanded is not None and size > max_expanded:
            raise UnsafeDocument(
                f"document expands to more than {max_expanded} values (repeated aliases?); refused"
            )
        memo[id(node)] = (height, size)


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
    check_values(obj)
    return obj


class _BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader that also bounds alias use and nesting and refuses duplicate mapping keys."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
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

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
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
    r"""One YAML document through a safe, bounded loader (at most :data:`MAX_YAML_CHARS` characters).

    A stream of several documents (``---`` between them, as ``kubectl apply -f`` files and Kueue's setup
    files are written) is read as what ``kubectl get -o yaml`` would print for the same objects: a ``v1``
    ``List`` of them, when every document is a Kubernetes object (a mapping with ``apiVersion`` and
    ``kind``); empty documents are skipped, as kubectl skips them. Several documents of any other kind are
    refused: which one was meant is not for a reader to guess.

    >>> load_yaml("kind: Pod\napiVersion: v1\n---\n---\nkind: Job\napiVersion: batch/v1\n")["items"]
    [{'kind': 'Pod', 'apiVersion': 'v1'}, {'kind': 'Job', 'apiVersion': 'batch/v1'}]
    >>> try:
    ...     load_yaml("a: 1\n---\nb: 2\n")
    ... except UnsafeDocument as e:
    ...     print(str(e)[:60])
    2 YAML documents in one stream, and document 1 is not a Kube
    """
    _check_size(text, min(max_chars, MAX_YAML_CHARS))
    try:
        loader = _BoundedSafeLoader(text)
        try:
            docs = []
            while loader.check_data():
                docs.append(loader.get_data())
        finally:
            loader.dispose()
    except RecursionError:
        raise UnsafeDocument(f"document is nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as e:
        raise UnsafeDocument(f"invalid YAML: {str(e).replace(chr(10), ' ')}"[:500]) from None
    except (ValueError, TypeError, OverflowError) as e:  # a constructor refused a value (2001-12-99)
        raise UnsafeDocument(f"invalid YAML value: {e}"[:500]) from None
    obj = _stream(docs)
    _check_depth(obj, MAX_EXPANDED_NODES)  # only YAML can repeat a subtree (aliases)
    check_values(obj)
    return obj


def _stream(docs: list[Any]) -> Any:
    """A YAML stream's documents as one object (:func:`load_yaml`): the only one, or a ``v1`` ``List`` of
    Kubernetes objects."""
    kept = [d for d in docs if d is not None]
    if len(docs) <= 1 or len(kept) <= 1:
        return kept[0] if kept else None
    for i, d in enumerate(kept):
        if not (
            isinstance(d, dict) and isinstance(d.get("apiVersion"), str) and isinstance(d.get("kind"), str)
        ):
            raise UnsafeDocument(
                f"{len(kept)} YAML documents in one stream, and document {i + 1} is not a Kubernetes object "
                "(apiVersion and kind): only a stream of Kubernetes objects is read, as one List"
            )
    return {"apiVersion": "v1", "kind": "List", "items": kept}


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
    """:func:`load_json`, refusing with a :class:`~placer.topology.errors.TopologyError` naming ``source``."""
    try:
        return load_json(text, max_chars=max_chars)
    except UnsafeDocument as e:
        raise _topology_error(source, e) from None


def parse_yaml(text: str, *, source: str = "", max_chars: int = MAX_DOCUMENT_CHARS) -> Any:
    """:func:`load_yaml`, refusing with a :class:`~placer.topology.errors.TopologyError` naming ``source``."""
    try:
        return load_yaml(text, max_chars=max_chars)
    except UnsafeDocument as e:
        raise _topology_error(source, e) from None


def parse_text(text: str, *, source: str = "", max_chars: int = MAX_DOCUMENT_CHARS) -> Any:
    """:func:`load_text`, refusing with a :class:`~placer.topology.errors.TopologyError` naming ``source``."""
    try:
        return load_text(text, max_chars=max_chars)
    except UnsafeDocument as e:
        raise _topology_error(source, e) from None
