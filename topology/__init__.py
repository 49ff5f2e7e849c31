"""placer's topology layer: the cluster as a networkx graph with fast typed queries.

Read a cluster description, build it, ask what is free::

    from topology import read_inventory, build_cluster, summary_text
    inventory = read_inventory("examples/clusters/h100-training.yaml")
    cluster = build_cluster(inventory, source="h100-training.yaml")
    cluster.free_nvlink_domains("nvidia-h100", min_free=8)   # domains with 8 free H100s
    free_slices(cluster, "2x4")                               # free v5e 2x4 slices
    print(summary_text(cluster))

The pieces, lowest first:

* :mod:`topology.inventory` — the inventory document every source produces (``Inventory``);
* :mod:`topology.catalog` — accelerator facts and name aliases (``canonical_gpu_type``, ``gpu_info``,
  ``tpu_info``);
* :mod:`topology.build` — ``build_cluster(inventory, source)`` -> :class:`Cluster` (validated);
* :mod:`topology.cluster` — the immutable snapshot API: nodes, GPUs, NVLink domains, TPU pods, free
  capacity, ``allocate`` / ``release`` returning new snapshots, ``to_inventory``;
* :mod:`topology.graph` — the networkx ``DiGraph`` (``cluster.graph``);
* :mod:`topology.tpu` — free contiguous TPU slices;
* :mod:`topology.builders` — one-line clusters (``cluster_of(dgx_h100(4), tpu_pod("v5e"))``);
* :mod:`topology.views` — dataframes and summaries;
* :mod:`topology.inventory_file` — ``read_inventory`` for YAML/JSON files, with clear errors.

This package never imports ``solver``.

>>> c = cluster_of(dgx_h100(2), gb200_nvl72(1), tpu_pod("v5e"))
>>> summary(c)["gpus"]
{'nvidia-gb200': 72, 'nvidia-h100': 16}
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> module that defines it. Names resolve on first use (PEP 562), so that importing one
#: small module of the package (``topology.safe_load`` from the job reader) does not import pandas and
#: numpy through the views and builders.
_EXPORTS: dict[str, str] = {
    "Cluster": "topology.cluster",
    "DERIVED_KEYS": "topology.labels",
    "FreeDomain": "topology.cluster",
    "Gpu": "topology.model",
    "GpuInfo": "topology.catalog",
    "GpuProduct": "topology.catalog",
    "InnerVertex": "topology.inventory",
    "Inventory": "topology.inventory",
    "LoadedModel": "topology.inventory",
    "Node": "topology.model",
    "NodeFree": "topology.model",
    "NodeGpus": "topology.inventory",
    "NodeSpec": "topology.inventory",
    "NvlinkDomain": "topology.model",
    "Problem": "topology.errors",
    "ReplicaAllocation": "topology.inventory",
    "RunningJob": "topology.inventory",
    "Taint": "topology.inventory",
    "TopologyError": "topology.errors",
    "TpuHost": "topology.model",
    "TpuInfo": "topology.catalog",
    "TpuPod": "topology.model",
    "TpuPodSpec": "topology.inventory",
    "TpuSlice": "topology.tpu",
    "build_cluster": "topology.build",
    "canonical_gpu_type": "topology.catalog",
    "canonical_tpu_type": "topology.catalog",
    "capacity_pool": "topology.builders",
    "cluster_of": "topology.builders",
    "count_free_slices": "topology.tpu",
    "cpu_nodes": "topology.builders",
    "dgx_h100": "topology.builders",
    "format_shape": "topology.catalog",
    "free_by": "topology.views",
    "free_dataframe": "topology.views",
    "free_slices": "topology.tpu",
    "gb200_nvl72": "topology.builders",
    "gpu_info": "topology.catalog",
    "gpu_types": "topology.catalog",
    "hgx_a100": "topology.builders",
    "inventory_from_document": "topology.inventory_file",
    "is_offered_shape": "topology.catalog",
    "merge": "topology.builders",
    "parse_gpu_product": "topology.catalog",
    "parse_shape": "topology.catalog",
    "pcie_inference": "topology.builders",
    "read_inventory": "topology.inventory_file",
    "slice_wraps": "topology.catalog",
    "slices_in_pod": "topology.tpu",
    "summary": "topology.views",
    "summary_text": "topology.views",
    "to_dataframe": "topology.views",
    "tpu_accelerator_type": "topology.catalog",
    "tpu_generation_from_gke": "topology.catalog",
    "tpu_generations": "topology.catalog",
    "tpu_info": "topology.catalog",
    "tpu_pod": "topology.builders",
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
