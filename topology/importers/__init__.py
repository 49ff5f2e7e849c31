"""Importers: cluster descriptions from other systems -> :class:`~placer.topology.inventory.Inventory`.

Why a package of small modules: each source format (OJS worker advertisements, Kubernetes node lists,
Slurm ``scontrol show node``, Flux JGF) has its own vocabulary, but all of them end in the same validated
inventory document, so the graph builder never sees a foreign format. Every importer is
``parse_<fmt>(obj_or_text, *, source) -> Inventory`` and raises only
:class:`~placer.topology.errors.TopologyError`, each problem naming the file, the item and what is wrong.
See ``docs/importers.md`` for the mapping rules of each format.

>>> sorted(IMPORTERS)
['jgf', 'kubernetes', 'ojs-workers', 'slurm']
"""

from __future__ import annotations

from collections.abc import Callable

from placer.topology.importers.jgf import parse_jgf
from placer.topology.importers.kubernetes import parse_kubernetes
from placer.topology.importers.ojs_workers import parse_ojs_workers
from placer.topology.importers.slurm import parse_slurm
from placer.topology.inventory import Inventory

#: Format name (as ``detect_cluster_format`` and ``placer cluster --format`` spell it) -> importer.
IMPORTERS: dict[str, Callable[..., Inventory]] = {
    "ojs-workers": parse_ojs_workers,
    "kubernetes": parse_kubernetes,
    "slurm": parse_slurm,
    "jgf": parse_jgf,
}

__all__ = ["IMPORTERS", "parse_jgf", "parse_kubernetes", "parse_ojs_workers", "parse_slurm"]
