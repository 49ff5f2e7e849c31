"""placer's cluster model: nodes, GPUs, NVLink domains, TPU pods and what runs where, as typed indexes.

The engines read the typed indexes (:class:`Cluster`, and the solver's flat snapshot of it); the networkx
graph (:mod:`placer.topology.graph`, ``cluster.graph``) is a view built on first use, for notebooks and
for tools that want the containment tree — the solver never walks it.

Read a cluster description, build it, ask what is free::

    from placer.topology import read_inventory, build_cluster, summary_text
    inventory = read_inventory("examples/clusters/h100-training.yaml")
    cluster = build_cluster(inventory, source="h100-training.yaml")
    cluster.free_nvlink_domains("nvidia-h100", min_free=8)   # domains with 8 free H100s
    free_slices(cluster, "2x4")                               # free v5e 2x4 slices
    print(summary_text(cluster))

The pieces, lowest first:

* :mod:`placer.topology.inventory` — the inventory document every source produces (``Inventory``);
* :mod:`placer.topology.catalog` — accelerator facts and name aliases (``canonical_gpu_type``, ``gpu_info``,
  ``tpu_info``);
* :mod:`placer.topology.build` — ``build_cluster(inventory, source)`` -> :class:`Cluster` (validated);
* :mod:`placer.topology.cluster` — the immutable snapshot API: nodes, GPUs, NVLink domains, TPU pods, free
  capacity, ``allocate`` / ``release`` returning new snapshots, ``to_inventory``;
* :mod:`placer.topology.graph` — the networkx ``DiGraph`` (``cluster.graph``);
* :mod:`placer.topology.tpu` — free contiguous TPU slices;
* :mod:`placer.topology.presets` — one-line clusters (``cluster_of(dgx_h100(4), tpu_pod("v5e"))``);
* :mod:`placer.topology.views` — dataframes and summaries;
* :mod:`placer.topology.inventory_file` — ``read_inventory`` for YAML/JSON files, with clear errors.

This package never imports ``placer.solver`` (``tests/test_layout.py``).

>>> from placer.topology import cluster_of, dgx_h100, gb200_nvl72, summary, tpu_pod
>>> c = cluster_of(dgx_h100(2), gb200_nvl72(1), tpu_pod("v5e"))
>>> summary(c)["gpus"]
{'nvidia-gb200': 72, 'nvidia-h100': 16}
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> module that defines it. Names resolve on first use (PEP 562), so that importing one
#: small module of the package (``placer.topology.safe_load`` from the job reader) does not import pandas and
#: numpy through the views and builders.
_EXPORTS: dict[str, str] = {
    "Cluster": "placer.topology.cluster",
    "DERIVED_KEYS": "placer.topology.labels",
    "FreeDomain": "placer.topology.cluster",
    "Gpu": "placer.topology.model",
    "GpuInfo": "placer.topology.catalog",
    "GpuProduct": "placer.topology.catalog",
    "InnerVertex": "placer.topology.inventory",
    "Inventory": "placer.topology.inventory",
    "LoadedModel": "placer.topology.inventory",
    "Node": "placer.topology.model",
    "NodeFree": "placer.topology.model",
    "DomainAntiAffinity": "placer.topology.inventory",
    "NodeGpus": "placer.topology.inventory",
    "NodeSpec": "placer.topology.inventory",
    "NvlinkDomain": "placer.topology.model",
    "Problem": "placer.topology.errors",
    "ReplicaAllocation": "placer.topology.inventory",
    "RunningJob": "placer.topology.inventory",
    "Taint": "placer.topology.inventory",
    "TopologyError": "placer.topology.errors",
    "TpuHost": "placer.topology.model",
    "TpuInfo": "placer.topology.catalog",
    "TpuPod": "placer.topology.model",
    "TpuPodSpec": "placer.topology.inventory",
    "TpuSlice": "placer.topology.tpu",
    "build_cluster": "placer.topology.build",
    "canonical_gpu_type": "placer.topology.catalog",
    "canonical_tpu_type": "placer.topology.catalog",
    "capacity_pool": "placer.topology.presets",
    "cluster_of": "placer.topology.presets",
    "count_free_slices": "placer.topology.tpu",
    "cpu_nodes": "placer.topology.presets",
    "dgx_h100": "placer.topology.presets",
    "format_shape": "placer.topology.catalog",
    "free_by": "placer.topology.views",
    "free_dataframe": "placer.topology.views",
    "free_slices": "placer.topology.tpu",
    "gb200_nvl72": "placer.topology.presets",
    "gpu_info": "placer.topology.catalog",
    "gpu_types": "placer.topology.catalog",
    "hgx_a100": "placer.topology.presets",
    "inventory_from_document": "placer.topology.inventory_file",
    "is_offered_shape": "placer.topology.catalog",
    "merge": "placer.topology.presets",
    "parse_gpu_product": "placer.topology.catalog",
    "parse_shape": "placer.topology.catalog",
    "pcie_inference": "placer.topology.presets",
    "read_inventory": "placer.topology.inventory_file",
    "slice_wraps": "placer.topology.catalog",
    "slices_in_pod": "placer.topology.tpu",
    "summary": "placer.topology.views",
    "summary_text": "placer.topology.views",
    "to_dataframe": "placer.topology.views",
    "tpu_accelerator_type": "placer.topology.catalog",
    "tpu_generation_from_gke": "placer.topology.catalog",
    "tpu_generations": "placer.topology.catalog",
    "tpu_info": "placer.topology.catalog",
    "tpu_pod": "placer.topology.presets",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'topology' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
