"""One-line cluster builders for tests, examples, simulators and benchmarks.

Why builders return :class:`~placer.topology.inventory.Inventory` parts: a part is plain data that can be
written to YAML, inspected or concatenated; :func:`cluster_of` merges any number of parts and builds the
cluster, so ``cluster_of(dgx_h100(32, nodes_per_rack=4), pcie_inference(8, capacity_class="spot"))`` is a
whole cluster in one line.

Layout arguments (every node builder): ``nodes_per_rack`` cuts the nodes into racks (``{name}-rack-01``,
...), ``racks_per_block`` groups racks into blocks (``{name}-block-1``, ...), ``zones`` (a list of names)
spreads the racks over zones in contiguous chunks. Rack and block names start with the part's name, so
parts never share a rack by accident. Without ``nodes_per_rack`` the nodes are one ``count`` template
(a 10,000-node part is one entry). Node names are ``{name}-{i}`` or, with racks, ``{name}-r{rack}-{i}``
(numbers zero-padded). Prices stay ``None`` unless given.

>>> c = cluster_of(dgx_h100(4, nodes_per_rack=2), cpu_nodes(2))
>>> len(c.nodes), sum(n.gpu_count for n in c.nodes), sorted({n.rack for n in c.nodes if n.rack})
(6, 32, ['dgx-h100-rack-1', 'dgx-h100-rack-2'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from placer.topology.build import build_cluster
from placer.topology.catalog import canonical_tpu_type, tpu_info
from placer.topology.cluster import Cluster
from placer.topology.inventory import CapacityClass, Inventory, NodeGpus, NodeSpec, RunningJob, TpuPodSpec

__all__ = [
    "capacity_pool",
    "cluster_of",
    "cpu_nodes",
    "dgx_h100",
    "gb200_nvl72",
    "hgx_a100",
    "merge",
    "pcie_inference",
    "tpu_pod",
]


def merge(*parts: Inventory, name: str = "cluster") -> Inventory:
    """Concatenate inventory parts (nodes, pods, running jobs; licence seats added up; metadata merged left
    to right).

    >>> len(merge(cpu_nodes(2), cpu_nodes(3, name="big")).nodes)
    2
    """
    nodes: list[NodeSpec] = []
    pods: list[TpuPodSpec] = []
    running: list[RunningJob] = []
    metadata: dict[str, Any] = {}
    licenses: dict[str, int] = {}
    for p in parts:
        nodes.extend(p.nodes)
        pods.extend(p.tpu_pods)
        running.extend(p.running)
        metadata.update(p.metadata)
        for k, v in p.licenses.items():
            licenses[k] = licenses.get(k, 0) + v
    return Inventory(
        name=name, nodes=nodes, tpu_pods=pods, running=running, licenses=licenses, metadata=metadata
    )


def cluster_of(*parts: Inventory, name: str = "cluster", source: str = "builders") -> Cluster:
    """Merge parts and build the cluster.

    >>> cluster_of(cpu_nodes(3)).nodes[2].name
    'cpu-3'
    """
    return build_cluster(merge(*parts, name=name), source=source)


def _layout(
    n: int,
    name: str,
    base: dict[str, Any],
    *,
    nodes_per_rack: int | None,
    racks_per_block: int | None,
    zones: Sequence[str] | None,
    rack_domain: bool = False,
) -> Inventory:
    """Node templates for ``n`` nodes: one template, or one per rack (rack/block/zone set per rack).

    ``rack_domain``: every rack's nodes share one NVLink domain (``{name}-r{rack}``), as in NVL72.
    """
    if n < 0:
        raise ValueError("node count must be >= 0")
    if n == 0:
        return Inventory()
    if not nodes_per_rack:
        zone = zones[0] if zones else None
        if zones and len(zones) > 1:
            raise ValueError("spreading nodes over several zones needs nodes_per_rack")
        return Inventory(nodes=[NodeSpec(name=name, count=n, zone=zone, **base)])
    racks = -(-n // nodes_per_rack)
    rw = len(str(racks))
    per_zone = -(-racks // len(zones)) if zones else racks
    specs: list[NodeSpec] = []
    for r in range(racks):
        count = min(nodes_per_rack, n - r * nodes_per_rack)
        zone = zones[r // per_zone] if zones else None
        in_zone = r % per_zone
        # Rack and block names carry the part's name: two parts laid out by different builders (a DGX
        # part and an NVL72 part) must not share a ``rack-1`` vertex just because both count from one.
        block = f"{name}-block-{in_zone // racks_per_block + 1}" if racks_per_block else None
        spec = dict(base)
        if rack_domain:
            spec["gpus"] = spec["gpus"].model_copy(update={"nvlink_domain": f"{name}-r{r + 1:0{rw}d}"})
        specs.append(
            NodeSpec(
                name=f"{name}-r{r + 1:0{rw}d}",
                count=count,
                zone=zone,
                block=block,
                rack=f"{name}-rack-{r + 1:0{rw}d}",
                **spec,
            )
        )
    return Inventory(nodes=specs)


def _gpu_nodes(
    n: int,
    *,
    name: str,
    gpu: str,
    gpus_per_node: int,
    cpu_cores: float,
    memory_gb: float,
    storage_gb: float | None,
    capacity_class: CapacityClass,
    price_per_hour: float | None,
    nodes_per_rack: int | None,
    racks_per_block: int | None,
    zones: Sequence[str] | None,
    labels: dict[str, str] | None,
    gpu_memory_gb: float | None = None,
    rack_domain: bool = False,
) -> Inventory:
    base: dict[str, Any] = {
        "cpu_cores": cpu_cores,
        "memory_gb": memory_gb,
        "storage_gb": storage_gb,
        "capacity_class": capacity_class,
        "price_per_hour": price_per_hour,
        "labels": dict(labels or {}),
        "gpus": NodeGpus(type=gpu, count=gpus_per_node, memory_gb=gpu_memory_gb),
    }
    return _layout(
        n,
        name,
        base,
        nodes_per_rack=nodes_per_rack,
        racks_per_block=racks_per_block,
        zones=zones,
        rack_domain=rack_domain,
    )


def dgx_h100(
    n: int,
    *,
    name: str = "dgx-h100",
    capacity_class: CapacityClass = "on-demand",
    price_per_hour: float | None = None,
    nodes_per_rack: int | None = None,
    racks_per_block: int | None = None,
    zones: Sequence[str] | None = None,
    labels: dict[str, str] | None = None,
) -> Inventory:
    """``n`` NVIDIA DGX H100 systems.

    Defaults from the NVIDIA DGX H100 User Guide, "Hardware Overview": 8x H100 SXM5 80 GB on four NVSwitch
    chips (one NVLink domain per node), 2x Intel Xeon Platinum 8480C (56 cores each = 112 cores, 224 with
    Hyper-Threading; ``cpu_cores`` is 224 because Kubernetes and Slurm count hardware threads as CPUs),
    2 TB DDR5, 8x 3.84 TB U.2 NVMe = 30 TB data storage (``storage_gb`` 30720).

    >>> sum(node.gpu_count for node in cluster_of(dgx_h100(2)).nodes)
    16
    """
    return _gpu_nodes(
        n,
        name=name,
        gpu="nvidia-h100",
        gpus_per_node=8,
        cpu_cores=224,
        memory_gb=2048,
        storage_gb=30720,
        capacity_class=capacity_class,
        price_per_hour=price_per_hour,
        nodes_per_rack=nodes_per_rack,
        racks_per_block=racks_per_block,
        zones=zones,
        labels=labels,
    )


def hgx_a100(
    n: int,
    *,
    name: str = "hgx-a100",
    gpu_memory_gb: float = 80,
    capacity_class: CapacityClass = "on-demand",
    price_per_hour: float | None = None,
    nodes_per_rack: int | None = None,
    racks_per_block: int | None = None,
    zones: Sequence[str] | None = None,
    labels: dict[str, str] | None = None,
) -> Inventory:
    """``n`` HGX A100 8-GPU servers, modelled on the NVIDIA DGX A100 640 GB (DGX A100 User Guide):
    8x A100 SXM4 80 GB on six NVSwitch chips, 2x AMD EPYC 7742 (64 cores each = 128 cores, 256 hardware
    threads; ``cpu_cores`` 256 as Kubernetes/Slurm count them), 2 TB RAM, 30 TB NVMe (``storage_gb``
    30720). ``gpu_memory_gb=40`` gives the 320 GB variant's GPUs.

    >>> cluster_of(hgx_a100(1)).nodes[0].gpu_memory_gb
    80.0
    """
    return _gpu_nodes(
        n,
        name=name,
        gpu="nvidia-a100",
        gpus_per_node=8,
        cpu_cores=256,
        memory_gb=2048,
        storage_gb=30720,
        capacity_class=capacity_class,
        price_per_hour=price_per_hour,
        nodes_per_rack=nodes_per_rack,
        racks_per_block=racks_per_block,
        zones=zones,
        labels=labels,
        gpu_memory_gb=gpu_memory_gb,
    )


def gb200_nvl72(
    racks: int,
    *,
    name: str = "nvl72",
    capacity_class: CapacityClass = "on-demand",
    price_per_hour: float | None = None,
    racks_per_block: int | None = None,
    zones: Sequence[str] | None = None,
    labels: dict[str, str] | None = None,
) -> Inventory:
    """``racks`` GB200 NVL72 racks: 18 compute trays per rack, each a node of 4 Blackwell GPUs (186 GB)
    and 2 Grace CPUs; all 72 GPUs of a rack form ONE NVLink domain (``{name}-r{rack}``).

    Tray defaults from the NVIDIA GB200 NVL72 datasheet: 2x Grace (72 Arm Neoverse V2 cores each = 144
    cores, no SMT), up to 480 GB LPDDR5X per Grace = 960 GB per tray; local storage is not stated per tray,
    so ``storage_gb`` is unknown (None: not a limit). Node names ``{name}-r{rack}-{tray}``.

    >>> [d.size for d in cluster_of(gb200_nvl72(2)).nvlink_domains()]
    [72, 72]
    """
    return _gpu_nodes(
        racks * 18,
        name=name,
        gpu="nvidia-gb200",
        gpus_per_node=4,
        cpu_cores=144,
        memory_gb=960,
        storage_gb=None,
        capacity_class=capacity_class,
        price_per_hour=price_per_hour,
        nodes_per_rack=18,
        racks_per_block=racks_per_block,
        zones=zones,
        labels=labels,
        rack_domain=True,
    )


def pcie_inference(
    n: int,
    *,
    gpu: str = "nvidia-l4",
    gpus_per_node: int = 4,
    cpu_cores: float = 48,
    memory_gb: float = 192,
    storage_gb: float | None = None,
    name: str | None = None,
    capacity_class: CapacityClass = "on-demand",
    price_per_hour: float | None = None,
    nodes_per_rack: int | None = None,
    racks_per_block: int | None = None,
    zones: Sequence[str] | None = None,
    labels: dict[str, str] | None = None,
) -> Inventory:
    """``n`` PCIe inference servers (no NVLink domains).

    Defaults are Google Cloud's ``g2-standard-48`` (G2 machine series docs): 4x NVIDIA L4, 48 vCPUs,
    192 GB memory; pass ``gpu``/``gpus_per_node``/``cpu_cores``/``memory_gb`` for other machines (AWS
    g6e.48xlarge: 8x L40S, 192 vCPUs, 1536 GB).

    >>> cluster_of(pcie_inference(3)).nvlink_domains()
    ()
    """
    return _gpu_nodes(
        n,
        name=name or gpu.split("-", 1)[-1],
        gpu=gpu,
        gpus_per_node=gpus_per_node,
        cpu_cores=cpu_cores,
        memory_gb=memory_gb,
        storage_gb=storage_gb,
        capacity_class=capacity_class,
        price_per_hour=price_per_hour,
        nodes_per_rack=nodes_per_rack,
        racks_per_block=racks_per_block,
        zones=zones,
        labels=labels,
    )


def cpu_nodes(
    n: int,
    *,
    name: str = "cpu",
    cpu_cores: float = 64,
    memory_gb: float = 256,
    storage_gb: float | None = None,
    capacity_class: CapacityClass = "on-demand",
    price_per_hour: float | None = None,
    nodes_per_rack: int | None = None,
    racks_per_block: int | None = None,
    zones: Sequence[str] | None = None,
    labels: dict[str, str] | None = None,
) -> Inventory:
    """``n`` CPU-only nodes (default 64 cores, 256 GB: a GCP ``n2-standard-64``).

    >>> cluster_of(cpu_nodes(1)).nodes[0].labels["accelerator"]
    'cpu'
    """
    base = {
        "cpu_cores": cpu_cores,
        "memory_gb": memory_gb,
        "storage_gb": storage_gb,
        "capacity_class": capacity_class,
        "price_per_hour": price_per_hour,
        "labels": dict(labels or {}),
    }
    return _layout(n, name, base, nodes_per_rack=nodes_per_rack, racks_per_block=racks_per_block, zones=zones)


def tpu_pod(
    generation: str,
    shape: Sequence[int] | None = None,
    *,
    name: str | None = None,
    fixed_slice: bool = False,
    zone: str | None = None,
    capacity_class: CapacityClass = "on-demand",
    price_per_hour: float | None = None,
    cpu_cores_per_host: float = 0,
    memory_gb_per_host: float = 0,
    labels: dict[str, str] | None = None,
) -> Inventory:
    """One TPU pod of ``generation`` (v4, v5e, v5p, v6e); ``shape`` defaults to the catalog's full pod
    (v5e 16x16 = 256 chips, v5p 16x20x28 = 8960). Named ``{generation}-pod`` unless ``name`` is given.

    >>> cluster_of(tpu_pod("v5e")).tpu_pod("v5e-pod").chips
    256
    """
    gen = canonical_tpu_type(generation) or generation
    mesh = list(shape) if shape is not None else list(tpu_info(gen).pod_shape)
    return Inventory(
        tpu_pods=[
            TpuPodSpec(
                name=name or f"{gen}-pod",
                type=gen,
                shape=mesh,
                zone=zone,
                fixed_slice=fixed_slice,
                capacity_class=capacity_class,
                price_per_hour=price_per_hour,
                cpu_cores_per_host=cpu_cores_per_host,
                memory_gb_per_host=memory_gb_per_host,
                labels=dict(labels or {}),
            )
        ]
    )


def capacity_pool(
    *,
    gpu: str = "nvidia-h100",
    gpus_per_node: int = 8,
    spot: int = 0,
    on_demand: int = 0,
    reserved: int = 0,
    prices: dict[str, float] | None = None,
    cpu_cores: float = 224,
    memory_gb: float = 2048,
    name: str = "pool",
    zones: Sequence[str] | None = None,
) -> Inventory:
    """A mixed pool of identical GPU nodes bought three ways: ``spot``, ``on_demand`` and ``reserved``
    node counts, each a template named ``{name}-{class}`` with ``capacity_class`` set and, when ``prices``
    (keyed ``spot``/``on-demand``/``reserved``) says so, a price per hour.

    >>> c = cluster_of(capacity_pool(spot=2, on_demand=1, reserved=1, prices={"spot": 3.5}))
    >>> [(n.name, n.capacity_class, n.price_per_hour) for n in c.nodes][:2]
    [('pool-spot-1', 'spot', 3.5), ('pool-spot-2', 'spot', 3.5)]
    """
    prices = prices or {}
    parts = []
    for cls, count in (("spot", spot), ("on-demand", on_demand), ("reserved", reserved)):
        if count:
            parts.append(
                _gpu_nodes(
                    count,
                    name=f"{name}-{cls}",
                    gpu=gpu,
                    gpus_per_node=gpus_per_node,
                    cpu_cores=cpu_cores,
                    memory_gb=memory_gb,
                    storage_gb=None,
                    capacity_class=cls,  # type: ignore[arg-type]
                    price_per_hour=prices.get(cls),
                    nodes_per_rack=None,
                    racks_per_block=None,
                    zones=zones[:1] if zones else None,
                    labels=None,
                )
            )
    return merge(*parts)
