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

from topology.build import build_cluster
from topology.builders import (
    capacity_pool,
    cluster_of,
    cpu_nodes,
    dgx_h100,
    gb200_nvl72,
    hgx_a100,
    merge,
    pcie_inference,
    tpu_pod,
)
from topology.catalog import (
    GpuInfo,
    GpuProduct,
    TpuInfo,
    canonical_gpu_type,
    canonical_tpu_type,
    format_shape,
    gpu_info,
    gpu_types,
    is_offered_shape,
    parse_gpu_product,
    parse_shape,
    slice_wraps,
    tpu_accelerator_type,
    tpu_generation_from_gke,
    tpu_generations,
    tpu_info,
)
from topology.cluster import Cluster, FreeDomain
from topology.errors import Problem, TopologyError
from topology.inventory import (
    InnerVertex,
    Inventory,
    LoadedModel,
    NodeGpus,
    NodeSpec,
    ReplicaAllocation,
    RunningJob,
    Taint,
    TpuPodSpec,
)
from topology.inventory_file import inventory_from_document, read_inventory
from topology.labels import DERIVED_KEYS
from topology.model import Gpu, Node, NodeFree, NvlinkDomain, TpuHost, TpuPod
from topology.tpu import TpuSlice, count_free_slices, free_slices, slices_in_pod
from topology.views import free_dataframe, summary, summary_text, to_dataframe

__all__ = [
    "DERIVED_KEYS",
    "Cluster",
    "FreeDomain",
    "Gpu",
    "GpuInfo",
    "GpuProduct",
    "InnerVertex",
    "Inventory",
    "LoadedModel",
    "Node",
    "NodeFree",
    "NodeGpus",
    "NodeSpec",
    "NvlinkDomain",
    "Problem",
    "ReplicaAllocation",
    "RunningJob",
    "Taint",
    "TopologyError",
    "TpuHost",
    "TpuInfo",
    "TpuPod",
    "TpuPodSpec",
    "TpuSlice",
    "build_cluster",
    "canonical_gpu_type",
    "canonical_tpu_type",
    "capacity_pool",
    "cluster_of",
    "count_free_slices",
    "cpu_nodes",
    "dgx_h100",
    "format_shape",
    "free_dataframe",
    "free_slices",
    "gb200_nvl72",
    "gpu_info",
    "gpu_types",
    "hgx_a100",
    "inventory_from_document",
    "is_offered_shape",
    "merge",
    "parse_gpu_product",
    "parse_shape",
    "pcie_inference",
    "read_inventory",
    "slice_wraps",
    "slices_in_pod",
    "summary",
    "summary_text",
    "to_dataframe",
    "tpu_accelerator_type",
    "tpu_generation_from_gke",
    "tpu_generations",
    "tpu_info",
    "tpu_pod",
]
