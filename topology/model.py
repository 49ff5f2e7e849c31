"""Typed, immutable objects the cluster API hands out: nodes, GPUs, NVLink domains, TPU pods and hosts.

Why plain frozen dataclasses and not graph vertices: the solver asks millions of small questions ("labels
of node X", "GPUs of domain Y"); attribute access on a slotted dataclass is the cheapest answer in Python,
and immutability lets every cluster snapshot share them. The networkx graph (:mod:`placer.topology.graph`) is
built from the same objects for whoever wants to walk the structure.

>>> g = Gpu(node="dgx-1", index=3, type="nvidia-h100", memory_gb=80.0, compute_capability="9.0",
...         interconnect="nvlink", nvlink_domain="dgx-1/nvlink")
>>> g.key
('dgx-1', 3)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import product

from placer.topology.inventory import LoadedModel, NodeSpec, Taint, TpuPodSpec

__all__ = ["Coord", "Gpu", "Node", "NodeFree", "NvlinkDomain", "TpuHost", "TpuPod"]

Coord = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Gpu:
    """One GPU: where it is (node, index) and what it is."""

    node: str
    index: int
    type: str
    memory_gb: float | None
    compute_capability: str | None
    interconnect: str
    nvlink_domain: str | None

    @property
    def key(self) -> tuple[str, int]:
        """``(node, index)``: how allocations and domains name a GPU."""
        return (self.node, self.index)


@dataclass(frozen=True, slots=True)
class Node:
    """One machine, with the facts of its spec resolved against the catalog and its derived labels.

    ``labels`` is the full label set rules are tested against: user labels, Flux properties as
    ``<prop>: "true"``, then the derived labels (``hostname``, ``gpu_type``, ...), which win on a clash
    (see :mod:`placer.topology.labels`). ``spec`` is the inventory entry it came from; where that entry
    stands in the inventory is the structure's to say (:meth:`~placer.topology.structure.Structure.
    spec_index`), so that nodes leaving never renumber the nodes after them.
    """

    name: str
    zone: str | None
    region: str | None
    block: str | None
    rack: str | None
    cpu_cores: float
    memory_gb: float
    #: None: the source does not say (a worker that advertises no storage): unknown, not zero.
    storage_gb: float | None
    shm_gb: float | None
    gpu_type: str | None
    gpu_count: int
    gpu_memory_gb: float | None
    compute_capability: str | None
    gpu_interconnect: str | None
    nvlink_domain: str | None
    accelerator: str
    labels: Mapping[str, str]
    user_labels: Mapping[str, str]
    properties: tuple[str, ...]
    taints: tuple[Taint, ...]
    schedulable: bool
    ready: bool
    capacity_class: str
    price_per_hour: float | None
    models_loaded: tuple[LoadedModel, ...]
    runtimes: tuple[str, ...]
    rank: int | None
    spec: NodeSpec = field(repr=False, compare=False)

    @property
    def usable(self) -> bool:
        """Schedulable and ready: the only nodes whose free capacity counts as free in cluster totals.
        Taints are left to the solver, which knows the job's tolerations."""
        return self.schedulable and self.ready

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """The node's GPUs, index 0..gpu_count-1 (made on demand: 80k GPU objects are not kept around)."""
        return tuple(
            Gpu(
                self.name,
                i,
                self.gpu_type or "",
                self.gpu_memory_gb,
                self.compute_capability,
                self.gpu_interconnect or "pcie",
                self.nvlink_domain,
            )
            for i in range(self.gpu_count)
        )


@dataclass(frozen=True, slots=True)
class NvlinkDomain:
    """GPUs that talk over NVLink/NVSwitch: one HGX board, or a whole GB200 NVL72 rack.

    A domain is always made of whole nodes (every GPU of a member node belongs to it).
    """

    id: str
    gpu_type: str
    nodes: tuple[str, ...]
    gpus_per_node: tuple[int, ...]

    @property
    def size(self) -> int:
        """Number of GPUs in the domain."""
        return sum(self.gpus_per_node)

    @property
    def gpus(self) -> tuple[tuple[str, int], ...]:
        """Member GPUs as ``(node, index)``."""
        return tuple((n, i) for n, c in zip(self.nodes, self.gpus_per_node, strict=True) for i in range(c))


@dataclass(frozen=True, slots=True)
class TpuHost:
    """One host of a TPU pod: the block of chips starting at ``origin`` with ``shape``."""

    pod: str
    index: int
    origin: Coord
    shape: Coord

    @property
    def name(self) -> str:
        """``<pod>/host-<index>``."""
        return f"{self.pod}/host-{self.index}"

    @property
    def chips(self) -> tuple[Coord, ...]:
        """Chip coordinates of the host, in row-major order."""
        return tuple(
            tuple(o + d for o, d in zip(self.origin, delta, strict=True))
            for delta in product(*(range(s) for s in self.shape))
        )


@dataclass(frozen=True, slots=True)
class TpuPod:
    """A TPU pod (or a fixed GKE slice): a mesh of chips of one generation, cut into hosts.

    ``wrap`` says per axis whether the mesh is a ring on that axis (catalog rule unless the inventory
    overrides it). ``host_shape`` is the chip block of one host: the whole mesh for single-host machines
    (up to 8 chips), else the catalog's multi-host block (2x2 or 2x2x1).
    """

    name: str
    generation: str
    shape: Coord
    wrap: tuple[bool, ...]
    host_shape: Coord
    zone: str | None
    region: str | None
    fixed_slice: bool
    labels: Mapping[str, str]
    capacity_class: str
    price_per_hour: float | None
    cpu_cores_per_host: float
    memory_gb_per_host: float
    schedulable: bool
    ready: bool
    spec: TpuPodSpec = field(repr=False, compare=False)

    @property
    def chips(self) -> int:
        """Number of chips in the mesh."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def usable(self) -> bool:
        """Schedulable and ready."""
        return self.schedulable and self.ready

    @property
    def host_grid(self) -> Coord:
        """Number of hosts along each axis."""
        return tuple(s // h for s, h in zip(self.shape, self.host_shape, strict=True))

    def host_index(self, chip: Coord) -> int:
        """Index of the host owning ``chip`` (row-major over the host grid)."""
        idx = 0
        for c, h, g in zip(chip, self.host_shape, self.host_grid, strict=True):
            idx = idx * g + c // h
        return idx

    def hosts(self) -> Iterator[TpuHost]:
        """Every host, in index order."""
        for i, cell in enumerate(product(*(range(g) for g in self.host_grid))):
            origin = tuple(c * h for c, h in zip(cell, self.host_shape, strict=True))
            yield TpuHost(self.name, i, origin, self.host_shape)

    def contains(self, chip: Coord) -> bool:
        """Whether ``chip`` is a coordinate of this mesh."""
        return len(chip) == len(self.shape) and all(0 <= c < s for c, s in zip(chip, self.shape, strict=True))


@dataclass(frozen=True, slots=True)
class NodeFree:
    """Free capacity of one node in a snapshot: what no running job holds."""

    node: str
    cpu_cores: float
    memory_gb: float
    storage_gb: float | None
    shm_gb: float | None
    gpus: tuple[int, ...]
    gpu_milli: Mapping[int, int]
