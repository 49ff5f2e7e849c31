"""Read an inventory file (YAML or JSON) into an :class:`~placer.topology.inventory.Inventory`, safely.

Why errors are translated: pydantic says ``nodes.3.gpus.count: Input should be greater than or equal to
0``; an operator wants ``cluster.yaml: nodes[3] (gpu-7): gpus.count: must be >= 0 (got -1)``. Every
problem names the file, the item (list entries by index *and* name) and what is wrong, and all problems of
a file come back together in one :class:`~placer.topology.errors.TopologyError`. Nothing else escapes.

>>> inv = read_inventory("nodes:\\n  - name: a\\n    gpus: {type: nvidia-l4, count: 2}\\n", source="x.yaml")
>>> inv.nodes[0].gpus.count
2
>>> try:
...     read_inventory("nodes:\\n  - name: gpu-7\\n    gpus: {type: t4, count: -1}\\n", source="c.yaml")
... except TopologyError as e:
...     print(e)
c.yaml: nodes[0] (gpu-7): gpus.count: Input should be greater than or equal to 0 (got -1)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from placer.topology.errors import Problem, TopologyError
from placer.topology.inventory import Inventory
from placer.topology.safe_load import MAX_DOCUMENT_CHARS, parse_text

__all__ = ["MAX_PROBLEMS", "inventory_from_document", "read_inventory", "validation_problems"]

#: Problems reported per file before the rest are summed up in one line.
MAX_PROBLEMS = 50
_LISTS = {"nodes": "name", "tpu_pods": "name", "running": "job"}
_SUFFIXES = (".yaml", ".yml", ".json")


def _item_name(doc: Any, key: str, index: int) -> str | None:
    try:
        entry = doc[key][index]
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(entry, dict):
        name = entry.get(_LISTS[key])
        if isinstance(name, str | int) and not isinstance(name, bool):
            return str(name)[:80]
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validation_problems(error: ValidationError, doc: Any, source: str) -> list[Problem]:
    """Translate pydantic errors on an inventory document into :class:`Problem` objects.

    >>> try:
    ...     Inventory.model_validate({"tpu_pods": [{"name": "p", "type": "v5e", "shape": [16]}]})
    ... except ValidationError as e:
    ...     print(validation_problems(e, {"tpu_pods": [{"name": "p"}]}, "f.yaml")[0])
    f.yaml: tpu_pods[0] (p): shape: List should have at least 2 items after validation, not 1
    """
    problems: list[Problem] = []
    for err in error.errors():
        loc = list(err["loc"])
        if len(loc) >= 2 and loc[0] in _LISTS and isinstance(loc[1], int):
            name = _item_name(doc, str(loc[0]), loc[1])
            item = f"{loc[0]}[{loc[1]}]" + (f" ({name})" if name else "")
            rest = loc[2:]
        elif loc:
            item, rest = str(loc[0]), loc[1:]
        else:
            item, rest = "document", []
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field (not part of the inventory format)"
        elif err["type"] not in ("missing",) and not isinstance(err.get("input"), dict | list):
            msg = f"{msg} (got {_short(err.get('input'))})"
        path = ".".join(str(p) for p in rest)
        problems.append(Problem(source, item, f"{path}: {msg}" if path else msg))
    if len(problems) > MAX_PROBLEMS:
        extra = len(problems) - MAX_PROBLEMS
        problems = [*problems[:MAX_PROBLEMS], Problem(source, "document", f"... and {extra} more problems")]
    return problems


def inventory_from_document(doc: Any, source: str) -> Inventory:
    """Validate an already parsed document as an inventory (the path importers' YAML takes too)."""
    if not isinstance(doc, dict):
        kind = "empty" if doc is None else type(doc).__name__
        raise TopologyError(
            [
                Problem(
                    source,
                    "document",
                    (
                        "an inventory is a mapping with nodes, tpu_pods and running lists; "
                        f"this document is {kind}"
                    ),
                )
            ]
        )
    try:
        return Inventory.model_validate(doc)
    except ValidationError as e:
        raise TopologyError(validation_problems(e, doc, source)) from None
    except (TypeError, ValueError, RecursionError) as e:  # defensive: pydantic reports nearly all as above
        raise TopologyError([Problem(source, "document", f"not a valid inventory: {e}"[:300])]) from None


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and text.strip().lower().endswith(_SUFFIXES)


def read_inventory(path_or_text: str | os.PathLike[str], source: str | None = None) -> Inventory:
    """Read an inventory from a file path (``Path``, or a one-line string ending in ``.yaml``/``.yml``/
    ``.json``) or from YAML/JSON text. ``source`` names it in errors (default: the path, or ``<text>``).

    Raises :class:`~placer.topology.errors.TopologyError` for unreadable files, malformed text and invalid
    content; never anything else.
    """
    if isinstance(path_or_text, os.PathLike) or (
        isinstance(path_or_text, str) and _looks_like_path(path_or_text)
    ):
        path = Path(path_or_text)
        src = source or str(path)
        try:
            if path.stat().st_size > MAX_DOCUMENT_CHARS * 4:
                raise TopologyError([Problem(src, "file", "file is too large to be an inventory")])
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TopologyError([Problem(src, "file", "no such file")]) from None
        except UnicodeDecodeError as e:
            raise TopologyError(
                [Problem(src, "file", f"not UTF-8 text ({e.reason} at byte {e.start})")]
            ) from None
        except OSError as e:
            raise TopologyError([Problem(src, "file", f"cannot be read: {e.strerror or e}")]) from None
    elif isinstance(path_or_text, str):
        src = source or "<text>"
        text = path_or_text
    else:
        raise TopologyError(
            [
                Problem(
                    source or "<input>",
                    "document",
                    f"expected a path or YAML/JSON text, got {type(path_or_text).__name__}",
                )
            ]
        )
    doc = parse_text(text, source=src)
    return inventory_from_document(doc, src)
