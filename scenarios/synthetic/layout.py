"""Cluster layouts of the synthetic scenarios: node shapes, pools, racks, blocks and zones.

Why a pool table and not one builder call per shape: a real fleet is bought in pools (a shape, a zone, a
capacity class: spot, on-demand or reserved) and racked in homogeneous racks. The topology builders number
racks per call (``rack-1`` in every call), which would make racks of different pools share a label; here
every pool is cut into racks of ``nodes_per_rack`` nodes, racks are numbered cluster-wide (``rack-001``),
``racks_per_block`` consecutive racks of a zone form a block (``block-01``, cluster-wide too), and each
rack is one builder call (a ``count`` template, so a 10,000-node cluster is a few hundred node entries).

Node shapes (all GPU shapes have 8 GPUs per node, so N GPU nodes hold 8N GPUs):

* ``dgx-h100`` — :func:`placer.topology.dgx_h100`: 8x H100 80 GB NVLink, 224 CPUs, 2 TB;
* ``hgx-a100`` — :func:`placer.topology.hgx_a100`: 8x A100 80 GB NVLink, 256 CPUs, 2 TB;
* ``l40s`` — AWS ``g6e.48xlarge`` through :func:`placer.topology.pcie_inference`: 8x L40S 48 GB PCIe, 192
  vCPUs,
  1,536 GB, 7.6 TB NVMe;
* ``dgx-b200`` — NVIDIA DGX B200 (datasheet: 8x B200 192 GB on NVLink 5 switches, 2x Xeon Platinum 8570 =
  112 cores / 224 threads, 2 TB, 8x 3.84 TB NVMe) through the generic 8-GPU builder; the catalog gives
  B200 the NVLink interconnect, so each node is its own 8-GPU NVLink domain;
* ``cpu`` — :func:`placer.topology.cpu_nodes`: 64 cores, 256 GB (not counted as GPU nodes).

TPU pods (v5e, 4 chips per host) get ``cpu_cores_per_host`` 112 and ``memory_gb_per_host`` 192, the
Cloud TPU ``ct5lp-hightpu-4t`` machine.

>>> lay = Layout(pools=(Pool("dgx-h100", "us-central1-a", "reserved", 5),), nodes_per_rack=2)
>>> c = build_layout(lay)
>>> [(n.name, n.rack, n.block) for n in c.nodes][::2]  # doctest: +NORMALIZE_WHITESPACE
[('dgx-h100-r1-1', 'rack-1', 'block-1'), ('dgx-h100-r2-1', 'rack-2', 'block-1'),
 ('dgx-h100-r3-1', 'rack-3', 'block-1')]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from placer.topology import (
    Cluster,
    Inventory,
    cluster_of,
    cpu_nodes,
    dgx_h100,
    hgx_a100,
    merge,
    pcie_inference,
    tpu_pod,
)
from placer.topology.inventory import CapacityClass

__all__ = ["SHAPES", "Layout", "Pool", "Shape", "TpuPool", "build_layout", "layout_inventory"]


@dataclass(frozen=True, slots=True)
class Shape:
    """A node shape: what one node has, and the topology builder that makes ``n`` of them."""

    key: str
    gpu_type: str | None
    gpus: int
    cpu_cores: float
    memory_gb: float
    build: Callable[..., Inventory]

    @property
    def cpu_per_gpu(self) -> float:
        """Cores per GPU: the most a job may ask per GPU and still fill the node's GPUs."""
        return self.cpu_cores / self.gpus if self.gpus else self.cpu_cores

    @property
    def memory_per_gpu(self) -> float:
        """Memory (GB) per GPU, as :attr:`cpu_per_gpu`."""
        return self.memory_gb / self.gpus if self.gpus else self.memory_gb


def _l40s(n: int, **kw: Any) -> Inventory:
    return pcie_inference(
        n, gpu="nvidia-l40s", gpus_per_node=8, cpu_cores=192, memory_gb=1536, storage_gb=7600, **kw
    )


def _b200(n: int, **kw: Any) -> Inventory:
    return pcie_inference(
        n, gpu="nvidia-b200", gpus_per_node=8, cpu_cores=224, memory_gb=2048, storage_gb=30720, **kw
    )


#: Every node shape the scenarios use, by key.
SHAPES: dict[str, Shape] = {
    s.key: s
    for s in (
        Shape("dgx-h100", "nvidia-h100", 8, 224, 2048, dgx_h100),
        Shape("hgx-a100", "nvidia-a100", 8, 256, 2048, hgx_a100),
        Shape("l40s", "nvidia-l40s", 8, 192, 1536, _l40s),
        Shape("dgx-b200", "nvidia-b200", 8, 224, 2048, _b200),
        Shape("cpu", None, 0, 64, 256, cpu_nodes),
    )
}


@dataclass(frozen=True, slots=True)
class Pool:
    """``nodes`` nodes of one shape, in one zone, bought as one capacity class."""

    shape: str
    zone: str
    capacity_class: CapacityClass
    nodes: int

    def scaled(self, factor: int) -> Pool:
        """The same pool with ``factor`` times the nodes (scenario L is scenario M's table x 10)."""
        return Pool(self.shape, self.zone, self.capacity_class, self.nodes * factor)


@dataclass(frozen=True, slots=True)
class TpuPool:
    """One TPU pod: generation, mesh shape, zone, capacity class."""

    name: str
    generation: str
    mesh: tuple[int, ...]
    zone: str
    capacity_class: CapacityClass = "on-demand"


@dataclass(frozen=True)
class Layout:
    """A whole cluster: pools in order (racks are numbered in this order), TPU pods, rack and block sizes."""

    pools: tuple[Pool, ...]
    tpu_pods: tuple[TpuPool, ...] = ()
    nodes_per_rack: int = 32
    racks_per_block: int = 8
    name: str = "synthetic"

    @property
    def gpu_nodes(self) -> int:
        """Nodes of GPU shapes (CPU-only nodes not counted)."""
        return sum(p.nodes for p in self.pools if SHAPES[p.shape].gpus)

    @property
    def gpus(self) -> int:
        """GPUs over all pools."""
        return sum(p.nodes * SHAPES[p.shape].gpus for p in self.pools)

    def gpu_types(self) -> tuple[str, ...]:
        """GPU types present, in first-pool order."""
        out = [SHAPES[p.shape].gpu_type for p in self.pools if SHAPES[p.shape].gpu_type]
        return tuple(dict.fromkeys(t for t in out if t))

    def shape_of(self, gpu_type: str) -> Shape:
        """The (single) shape carrying ``gpu_type``."""
        for s in SHAPES.values():
            if s.gpu_type == gpu_type:
                return s
        raise KeyError(gpu_type)

    def pools_of(self, gpu_type: str | None) -> tuple[Pool, ...]:
        """Pools of one GPU type (``None``: the CPU-only pools)."""
        return tuple(p for p in self.pools if SHAPES[p.shape].gpu_type == gpu_type)

    def scaled(
        self, factor: int, *, tpu_pods: tuple[TpuPool, ...] | None = None, name: str | None = None
    ) -> Layout:
        """Every pool ``factor`` times bigger; rack and block sizes unchanged."""
        return Layout(
            pools=tuple(p.scaled(factor) for p in self.pools),
            tpu_pods=self.tpu_pods if tpu_pods is None else tpu_pods,
            nodes_per_rack=self.nodes_per_rack,
            racks_per_block=self.racks_per_block,
            name=name or self.name,
        )


def layout_inventory(layout: Layout) -> Inventory:
    """The inventory of a layout: one node template per rack, racks and blocks numbered cluster-wide.

    A block never spans two zones: a zone change starts a new block.

    >>> inv = layout_inventory(Layout(pools=(Pool("cpu", "z-a", "spot", 3),), nodes_per_rack=2))
    >>> [(s.name, s.count, s.rack, s.capacity_class) for s in inv.nodes]
    [('cpu-r1', 2, 'rack-1', 'spot'), ('cpu-r2-1', 1, 'rack-2', 'spot')]
    """
    per_rack = layout.nodes_per_rack
    racks_total = sum(-(-p.nodes // per_rack) for p in layout.pools)
    width = len(str(max(racks_total, 1)))
    parts: list[Inventory] = []
    rack = 0
    block = 0
    racks_in_block = layout.racks_per_block
    zone: str | None = None
    for pool in layout.pools:
        shape = SHAPES[pool.shape]
        left = pool.nodes
        while left > 0:
            count = min(per_rack, left)
            left -= count
            rack += 1
            if pool.zone != zone or racks_in_block >= layout.racks_per_block:
                block += 1
                racks_in_block = 0
                zone = pool.zone
            racks_in_block += 1
            name = f"{shape.key}-r{rack:0{width}d}"
            inv = shape.build(count, name=name, capacity_class=pool.capacity_class, zones=[pool.zone])
            update = {"rack": f"rack-{rack:0{width}d}", "block": f"block-{block:0{width}d}"}
            if count == 1:  # a count-1 entry keeps its name as is; number it like the others
                update["name"] = f"{name}-1"
            spec = inv.nodes[0].model_copy(update=update)
            parts.append(Inventory(nodes=[spec]))
    for pod in layout.tpu_pods:
        parts.append(
            tpu_pod(
                pod.generation,
                pod.mesh,
                name=pod.name,
                zone=pod.zone,
                capacity_class=pod.capacity_class,
                cpu_cores_per_host=112,
                memory_gb_per_host=192,
            )
        )
    return merge(*parts, name=layout.name)


def build_layout(layout: Layout) -> Cluster:
    """The cluster of a layout, with nothing running.

    >>> c = build_layout(Layout(pools=(Pool("l40s", "us-east-1a", "on-demand", 2),)))
    >>> [(n.gpu_type, n.gpu_count, n.gpu_interconnect, n.zone) for n in c.nodes][0]
    ('nvidia-l40s', 8, 'pcie', 'us-east-1a')
    """
    return cluster_of(
        layout_inventory(layout), name=layout.name, source=f"placer.scenarios.synthetic:{layout.name}"
    )
