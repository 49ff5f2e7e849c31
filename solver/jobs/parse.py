"""Safe parsing of untrusted JSON, YAML and XML text into Python objects.

Why a module of its own: every job reader takes text from outside. JSON and YAML go through the project's
one safe loader (:mod:`placer.topology.safe_load`: size and nesting caps, strict JSON, a safe YAML loader that
refuses object-constructing tags, duplicate keys and alias bombs); XML through ``defusedxml`` with DTDs,
entities and external references forbidden. Anything wrong becomes a ``malformed``
:class:`~placer.solver.jobs.errors.Issue`.

>>> parse_json('{"a": [1, 2]}', source="x.json")
{'a': [1, 2]}
>>> try:
...     parse_yaml("!!python/object/apply:os.system ['true']", source="evil.yaml")
... except JobValidationError as e:
...     e.issues[0].code
'malformed'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as _xml_fromstring

from placer.solver.jobs.errors import JobValidationError, issue
from placer.topology.inputs import read_input, source_name
from placer.topology.safe_load import MAX_DEPTH, UnsafeDocument, load_json, load_yaml

__all__ = [
    "MAX_DOCUMENT_CHARS",
    "parse_json",
    "parse_json_or_yaml",
    "parse_xml",
    "parse_yaml",
    "read_utf8_file",
]

#: Largest job document accepted, in characters (JSON/YAML rules: :mod:`placer.topology.safe_load`).
MAX_DOCUMENT_CHARS = 16 * 1024 * 1024


def _malformed(source: str, message: str) -> JobValidationError:
    return JobValidationError([issue("malformed", source or "<input>", message)])


def read_utf8_file(path: str | Path) -> str:
    """A configuration file's text: UTF-8 (a BOM is accepted), else a ``malformed`` issue naming the file.
    ``OSError`` when it cannot be opened, so CLIs can tell a usage error (exit 2) from bad content (1)."""
    data = read_input(path, MAX_DOCUMENT_CHARS * 4)
    if len(data) > MAX_DOCUMENT_CHARS * 4:
        raise JobValidationError(
            [issue("malformed", source_name(path), f"file is larger than {MAX_DOCUMENT_CHARS * 4} bytes")]
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise JobValidationError(
            [issue("malformed", source_name(path), f"not UTF-8 text: {e.reason}")]
        ) from None


def parse_json(text: str, *, source: str = "") -> Any:
    """Parse JSON strictly: no NaN/Infinity, no duplicate keys, bounded size and depth."""
    try:
        return load_json(text, max_chars=MAX_DOCUMENT_CHARS)
    except UnsafeDocument as e:
        raise _malformed(source, str(e)) from None


def parse_yaml(text: str, *, source: str = "") -> Any:
    """Parse one YAML document with a safe loader: no Python object tags, bounded aliases and depth, and
    values the constructors refuse (an impossible date) reported, not raised."""
    try:
        return load_yaml(text, max_chars=MAX_DOCUMENT_CHARS)
    except UnsafeDocument as e:
        raise _malformed(source, str(e)) from None


def parse_json_or_yaml(text: str, *, source: str = "") -> Any:
    """JSON when the text opens like JSON (``{`` or ``[`` after a BOM and white space), else YAML; both
    parsed as strictly as :func:`parse_json` and :func:`parse_yaml`. For documents a user may write in
    either (queue configs, reservations, prices).

    >>> parse_json_or_yaml('{"a": 1}'), parse_json_or_yaml("a: 1")
    ({'a': 1}, {'a': 1})
    """
    if text.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        return parse_json(text, source=source)
    return parse_yaml(text, source=source)


def parse_xml(text: str, *, source: str = "") -> Element:
    """Parse XML with DTDs, entity declarations and external references refused (XXE, billion laughs)."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise _malformed(source, f"document is {len(text)} characters; the limit is {MAX_DOCUMENT_CHARS}")
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
