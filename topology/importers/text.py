"""Importer inputs as Python objects: :mod:`placer.topology.safe_load` with a larger size cap.

Why a larger cap: ``kubectl get pods -A -o json`` of a big cluster runs to hundreds of megabytes, while a
hand-written inventory or job file never should. Everything else (strict JSON, safe bounded YAML, errors
naming the file) is :mod:`placer.topology.safe_load`'s.

>>> parse_text('{"workers": []}', source="w.json")
{'workers': []}
>>> try:
...     parse_text("a: !!python/object/apply:os.system ['true']", source="evil.yaml")
... except TopologyError as e:
...     print(str(e)[:40])
evil.yaml: document: invalid YAML: could
"""

from __future__ import annotations

from typing import Any

from placer.topology import safe_load
from placer.topology.errors import TopologyError

#: Largest importer document accepted, in characters.
MAX_TEXT_CHARS = 256 * 1024 * 1024

__all__ = ["MAX_TEXT_CHARS", "TopologyError", "parse_json_text", "parse_text", "parse_yaml_text"]


def parse_json_text(text: str, *, source: str = "") -> Any:
    """Strict JSON under the importer cap."""
    return safe_load.parse_json(text, source=source, max_chars=MAX_TEXT_CHARS)


def parse_yaml_text(text: str, *, source: str = "") -> Any:
    """One YAML document under the importer cap.

    >>> parse_yaml_text("kind: List\\nitems: []")
    {'kind': 'List', 'items': []}
    """
    return safe_load.parse_yaml(text, source=source, max_chars=MAX_TEXT_CHARS)


def parse_text(text: str, *, source: str = "") -> Any:
    """JSON when the text starts with ``{`` or ``[``, YAML otherwise.

    >>> parse_text("nodes: []")
    {'nodes': []}
    """
    return safe_load.parse_text(text, source=source, max_chars=MAX_TEXT_CHARS)
