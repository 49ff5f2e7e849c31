"""Read a cluster description file of any supported format: detect the format, import, build.

Why one entry point: ``placer cluster FILE`` and the solver should not care whether the cluster came from
placer's own inventory YAML, ``kubectl get nodes -o json``, ``scontrol show node``, a Flux JGF or OJS
worker advertisements. This module reads the file safely (size cap, UTF-8, strict JSON, bounded safe YAML),
picks the importer, and hands the resulting :class:`~placer.topology.inventory.Inventory` to
:func:`placer.topology.build.build_cluster`.

Errors: a file that cannot be opened raises ``OSError`` (so a CLI can tell "no such file" from "bad
content"); everything wrong with the content raises :class:`~placer.topology.errors.TopologyError` naming the
file, the item and the problem. Nothing else escapes.

>>> detect_cluster_format("NodeName=g01 CPUTot=64 State=IDLE")
'slurm'
>>> detect_cluster_format({"kind": "List", "items": [{"kind": "Node"}]})
'kubernetes'
>>> detect_cluster_format({"worker_id": "w1", "labels": ["gpu:nvidia-t4"]})
'ojs-workers'
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from placer.topology.errors import Problem, TopologyError
from placer.topology.importers import IMPORTERS
from placer.topology.importers._common import short
from placer.topology.importers.slurm_json import is_slurm_json
from placer.topology.importers.text import parse_text
from placer.topology.inputs import read_input, source_name
from placer.topology.inventory import Inventory
from placer.topology.inventory_file import inventory_from_document

if TYPE_CHECKING:
    from placer.topology.cluster import Cluster

__all__ = [
    "FORMATS",
    "MAX_FILE_BYTES",
    "detect_cluster_format",
    "inventory_from_input",
    "load_cluster",
    "load_inventory",
    "read_text",
]

#: Formats ``detect_cluster_format`` returns and ``load_*`` accept (plus ``auto``).
FORMATS = ("inventory", "ojs-workers", "kubernetes", "slurm", "jgf")
#: Largest file read, in bytes.
MAX_FILE_BYTES = 256 * 1024 * 1024


def _fail(source: str, item: str, message: str) -> TopologyError:
    return TopologyError([Problem(source or "<input>", item, message)])


def detect_cluster_format(text_or_obj: Any, *, source: str = "", format_hint: str = "--format") -> str:
    """Which importer a document is for: ``inventory``, ``ojs-workers``, ``kubernetes``, ``slurm`` or
    ``jgf``. Text is parsed (JSON/YAML) unless it is Slurm text. ``TopologyError`` when no format fits;
    its message tells the caller how to give the format (``format_hint``: the CLI's ``--format``, the
    service's body field ``cluster_format``).

    >>> detect_cluster_format({"graph": {"nodes": [], "edges": []}}), detect_cluster_format("nodes: []")
    ('jgf', 'inventory')
    """
    obj = text_or_obj
    if isinstance(text_or_obj, str):
        if _is_slurm_text(text_or_obj):
            return "slurm"
        obj = parse_text(text_or_obj, source=source)
    if obj is None:
        raise _fail(source, "document", "the document is empty")
    found = _detect_object(obj, source)
    if found is None:
        raise _fail(
            source,
            "document",
            f"cannot tell the cluster format of {short(obj, 80)}; expected an inventory (nodes:), a "
            "Kubernetes node List, scontrol show node text, a Flux JGF/R, or OJS worker advertisements "
            f"(give the format explicitly with {format_hint})",
        )
    return found


def _is_slurm_text(text: str) -> bool:
    """``scontrol show node`` output: its first non-blank line starts a ``NodeName=`` record."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first.startswith("NodeName=")


def _detect_object(obj: Any, source: str) -> str | None:
    if isinstance(obj, list):
        if obj and all(isinstance(x, dict) and "worker_id" in x for x in obj):
            return "ojs-workers"
        if obj and all(isinstance(x, dict) and x.get("kind") == "Node" for x in obj):
            return "kubernetes"
        return None
    if not isinstance(obj, dict):
        return None
    kind = obj.get("kind")
    if kind in ("List", "NodeList", "Node", "PodList", "Pod") or ("apiVersion" in obj and "items" in obj):
        items = obj.get("items")
        if kind in ("PodList", "Pod") or (
            isinstance(items, list)
            and items
            and all(isinstance(i, dict) and i.get("kind") == "Pod" for i in items)
        ):
            raise _fail(
                source, "document", "this is a Kubernetes pod list; give it with --pods next to the node list"
            )
        return "kubernetes"
    if is_slurm_json(obj):
        return "slurm"
    if "graph" in obj or "scheduling" in obj or ("execution" in obj and "version" in obj):
        return "jgf"
    if "workers" in obj or "worker_id" in obj:
        return "ojs-workers"
    if any(k in obj for k in ("nodes", "tpu_pods", "running")):
        return "inventory"
    return None


def read_text(path: str | os.PathLike[str]) -> str:
    """The file's text: ``OSError`` when it cannot be opened, ``TopologyError`` when it is too large or not
    UTF-8.

    >>> read_text("/no/such/file")
    Traceback (most recent call last):
    ...
    FileNotFoundError: [Errno 2] No such file or directory: '/no/such/file'
    """
    data = read_input(path, MAX_FILE_BYTES)
    if len(data) > MAX_FILE_BYTES:
        raise _fail(source_name(path), "document", f"file is larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _fail(
            source_name(path), "document", f"not UTF-8 text (byte {e.start} is {data[e.start]:#04x})"
        ) from None


def load_inventory(
    path: str | os.PathLike[str],
    format: str = "auto",
    *,
    pods: str | os.PathLike[str] | None = None,
    levels: dict[str, str] | None = None,
) -> Inventory:
    """Read a cluster description file into an Inventory (no graph). ``pods``: a ``kubectl get pods -A
    -o json`` file, only with the Kubernetes format.

    >>> load_inventory("x.json", format="bogus")
    Traceback (most recent call last):
    ...
    placer.topology.errors.TopologyError: x.json: document: unknown format 'bogus'; use auto, inventory, ...
    """
    source = source_name(path)
    if format != "auto" and format not in FORMATS:
        raise _fail(source, "document", f"unknown format {format!r}; use auto, {', '.join(FORMATS)}")
    text = read_text(path)
    pods_text = None if pods is None else read_text(pods)
    return inventory_from_input(
        text,
        format,
        pods=pods_text,
        source=source,
        pods_source=None if pods is None else source_name(pods),
        pods_what="--pods",
        levels=levels,
    )


def inventory_from_input(
    text_or_obj: Any,
    format: str = "auto",
    *,
    pods: Any = None,
    source: str = "",
    pods_source: str | None = None,
    pods_what: str = "a pod list",
    levels: dict[str, str] | None = None,
    format_hint: str = "--format",
) -> Inventory:
    """A cluster description already in memory (text, or a parsed JSON document) -> Inventory: what
    :func:`load_inventory` does after reading the file, for callers that never had a file (the HTTP
    service gets clusters in request bodies). ``pods``: a Kubernetes pod list (text or parsed); ``pods_what``
    names it in errors; ``format_hint`` how the caller gives a format (errors name it). Text is parsed
    once, format detection included.

    >>> inv = inventory_from_input({"nodes": [{"name": "a", "gpus": {"type": "nvidia-l4", "count": 2}}]})
    >>> inv.nodes[0].gpus.count
    2
    >>> inventory_from_input("NodeName=g01 CPUTot=64 State=IDLE", source="body").nodes[0].name
    'g01'
    """
    if format != "auto" and format not in FORMATS:
        raise _fail(source, "document", f"unknown format {format!r}; use auto, {', '.join(FORMATS)}")
    is_text = isinstance(text_or_obj, str)
    if format == "auto" and is_text and _is_slurm_text(text_or_obj):
        format = "slurm"
    obj = text_or_obj
    if format != "slurm" or (is_text and not _is_slurm_text(text_or_obj)):
        obj = parse_text(text_or_obj, source=source) if is_text else text_or_obj  # parsed once
        if format == "auto":
            format = detect_cluster_format(obj, source=source, format_hint=format_hint)
    if pods is not None and format != "kubernetes":
        raise _fail(
            pods_source or "pods",
            "document",
            f"{pods_what} goes with a Kubernetes node list, not with {format}",
        )
    if levels and format != "kubernetes":
        raise _fail(source, "document", f"topology labels apply to Kubernetes node lists, not to {format}")
    if format == "slurm":
        if is_slurm_json(obj):  # sinfo --json (both forms), scontrol show node --json
            return IMPORTERS["slurm"](obj, source=source)
        if not is_text:
            raise _fail(
                source,
                "document",
                "Slurm input is `scontrol show node` text or `sinfo --json` (meta + nodes, or meta + sinfo)",
            )
        return IMPORTERS["slurm"](text_or_obj, source=source)
    if format == "inventory":
        return inventory_from_document(obj, source)
    if format == "kubernetes":
        pods_obj = parse_text(pods, source=pods_source or "pods") if isinstance(pods, str) else pods
        return IMPORTERS["kubernetes"](obj, pods_obj, source=source, pods_source=pods_source, levels=levels)
    return IMPORTERS[format](obj, source=source)


def load_cluster(
    path: str | os.PathLike[str],
    format: str = "auto",
    *,
    pods: str | os.PathLike[str] | None = None,
    levels: dict[str, str] | None = None,
) -> Cluster:
    """Read a cluster description file and build the cluster graph
    (:func:`placer.topology.build.build_cluster`).

    >>> load_cluster("/no/such/file")
    Traceback (most recent call last):
    ...
    FileNotFoundError: [Errno 2] No such file or directory: '/no/such/file'
    """
    from placer.topology.build import build_cluster

    inventory = load_inventory(path, format, pods=pods, levels=levels)
    return build_cluster(inventory, source=source_name(path))
