"""Turn an :class:`~placer.topology.inventory.Inventory` into a :class:`~placer.topology.cluster.Cluster`.

Why a single entry point: every cluster source (inventory file, Kubernetes, Slurm, Flux JGF importers,
builders) produces an ``Inventory``; here, and only here, it is checked against the catalog and resolved
into typed nodes, NVLink domains and TPU pods. All problems of a description are reported together, each
naming the source, the item (``nodes[3] (gpu-7)``) and what is wrong.

Rules applied:

* GPU types are canonicalized through the catalog (``NVIDIA-H100-80GB-HBM3`` -> ``nvidia-h100``); a type
  the catalog does not know is accepted only with an explicit ``memory_gb`` (else it is a problem — most
  often a typo). Missing memory / compute capability / interconnect come from the catalog.
* NVLink domains: an ``nvlink`` node without ``nvlink_domain`` is its own domain of ``count`` GPUs; nodes
  sharing an ``nvlink_domain`` id form one domain (GB200 NVL72: 18 trays x 4 GPUs = 72), which must hold
  one GPU type; PCIe nodes have no domain, and naming one for them is a problem.
* TPU pods: the generation must be known, the mesh has the generation's number of dimensions and is no
  larger than its pod; multi-host meshes are cut into the catalog's host blocks (2x2 / 2x2x1), so each
  dimension must be a multiple of the block; meshes of at most 8 chips are one single host.
* Running jobs are then applied as allocations (:mod:`placer.topology.allocations`).

>>> from placer.topology.inventory import Inventory
>>> c = build_cluster(Inventory(nodes=[{"name": "a", "gpus": {"type": "NVIDIA-H100-80GB-HBM3", "count": 8}}]))
>>> c.node("a").gpu_type, c.node("a").nvlink_domain
('nvidia-h100', 'a/nvlink')
"""

from __future__ import annotations

from collections import defaultdict
from types import MappingProxyType

from placer.topology.allocations import State, apply_jobs
from placer.topology.catalog import (
    canonical_tpu_type,
    format_shape,
    gpu_info,
    parse_gpu_product,
    slice_wraps,
    tpu_info,
)
from placer.topology.cluster import Cluster
from placer.topology.errors import Problem, TopologyError
from placer.topology.inventory import Inventory, NodeSpec, TpuPodSpec
from placer.topology.labels import HOST_LABEL, derived_labels, merge_labels, region_of_zone
from placer.topology.model import Node, NvlinkDomain, TpuPod
from placer.topology.structure import Structure

__all__ = ["UNKNOWN_GPU_TYPE", "build_cluster"]


def _count_inner_gpus(spec: NodeSpec) -> int:
    stack = list(spec.inner)
    n = 0
    while stack:
        v = stack.pop()
        n += v.type == "gpu"
        stack.extend(v.children)
    return n


#: The GPU type importers write when the source gives no model; accepted without ``memory_gb``.
UNKNOWN_GPU_TYPE = "unknown-gpu"


def _gpu_facts(spec: NodeSpec, item: str, source: str, problems: list[Problem]) -> tuple | None:
    """(type, count, memory, cc, interconnect) of a node spec's GPUs, or None when it has none / is bad."""
    g = spec.gpus
    if g is None or g.count == 0:
        return None
    product = parse_gpu_product(g.type)
    if product is None and g.type.strip().lower() == UNKNOWN_GPU_TYPE:
        # An importer saw GPUs but not their model (Slurm ``gpu:8``, a JGF gpu vertex without ``model``):
        # they count and can be placed on, but no type, VRAM or compute-capability request matches them.
        return (UNKNOWN_GPU_TYPE, g.count, g.memory_gb, g.compute_capability, g.interconnect or "pcie")
    if product is None:
        if g.memory_gb is None:
            problems.append(
                Problem(
                    source,
                    item,
                    (
                        f"unknown GPU type {g.type!r}: not in the accelerator catalog; "
                        "give gpus.memory_gb to use a "
                        "type outside the catalog"
                    ),
                )
            )
            return None
        return (g.type.strip().lower(), g.count, g.memory_gb, g.compute_capability, g.interconnect or "pcie")
    info = gpu_info(product.type)
    memory = g.memory_gb or product.memory_gb or info.memory_gb
    interconnect = g.interconnect or ("pcie" if product.form == "pcie" else info.interconnect)
    return (product.type, g.count, memory, g.compute_capability or info.compute_capability, interconnect)


def _resolve_nodes(inv: Inventory, source: str, problems: list[Problem], first: int = 0) -> list[Node]:
    """The nodes of ``inv``'s entries, which stand at ``first`` onwards in the cluster's inventory (the
    items problems name count from there)."""
    nodes: list[Node] = []
    seen: dict[str, str] = {}
    for i, spec in enumerate(inv.nodes, start=first):
        item = f"nodes[{i}] ({spec.name})"
        facts = _gpu_facts(spec, item, source, problems)
        inner_gpus = _count_inner_gpus(spec)
        gpu_count = facts[1] if facts else 0
        if inner_gpus and inner_gpus != gpu_count:
            problems.append(
                Problem(
                    source,
                    item,
                    (f"the inner tree has {inner_gpus} gpu vertices but the node has {gpu_count} GPUs"),
                )
            )
        nvlink_shared = spec.gpus.nvlink_domain if spec.gpus else None
        if facts and facts[4] == "pcie" and nvlink_shared:
            problems.append(
                Problem(
                    source,
                    item,
                    (
                        f"nvlink_domain {nvlink_shared!r} given for {facts[0]} GPUs "
                        "whose interconnect is pcie; "
                        "set gpus.interconnect: nvlink if they really share NVLink"
                    ),
                )
            )
        region = spec.region or region_of_zone(spec.zone)
        user = MappingProxyType(dict(spec.labels))
        if spec.count == 1:
            names = [spec.name]
        else:
            width = len(str(spec.count))
            names = [f"{spec.name}-{k:0{width}d}" for k in range(1, spec.count + 1)]
        gpu_type, _, memory, cc, interconnect = facts if facts else (None, 0, None, None, None)
        template = derived_labels(
            name=spec.name,
            zone=spec.zone,
            region=region,
            rack=spec.rack,
            block=spec.block,
            gpu_type=gpu_type,
            gpu_count=gpu_count,
            gpu_memory_gb=memory,
            compute_capability=cc,
            interconnect=interconnect,
            capacity_class=spec.capacity_class,
            rank=spec.rank,
        )
        base_labels = merge_labels(spec.labels, spec.properties, template)
        for name in names:
            if name in seen:
                problems.append(
                    Problem(source, f"nodes[{i}] ({name})", f"duplicate node name (also {seen[name]})")
                )
                continue
            seen[name] = item
            labels = dict(base_labels)
            labels["hostname"] = user.get(HOST_LABEL, name)
            domain = None
            if facts and interconnect == "nvlink":
                domain = nvlink_shared or f"{name}/nvlink"
            nodes.append(
                Node(
                    name=name,
                    zone=spec.zone,
                    region=region,
                    block=spec.block,
                    rack=spec.rack,
                    cpu_cores=spec.cpu_cores,
                    memory_gb=spec.memory_gb,
                    storage_gb=spec.storage_gb,
                    shm_gb=spec.shm_gb,
                    gpu_type=gpu_type,
                    gpu_count=gpu_count,
                    gpu_memory_gb=memory,
                    compute_capability=cc,
                    gpu_interconnect=interconnect,
                    nvlink_domain=domain,
                    accelerator=labels["accelerator"],
                    labels=MappingProxyType(labels),
                    user_labels=user,
                    properties=tuple(spec.properties),
                    taints=tuple(spec.taints),
                    schedulable=spec.schedulable,
                    ready=spec.ready,
                    capacity_class=spec.capacity_class,
                    price_per_hour=spec.price_per_hour,
                    models_loaded=tuple(spec.models_loaded),
                    runtimes=tuple(spec.runtimes),
                    rank=spec.rank,
                    spec=spec,
                )
            )
    return nodes


def _resolve_domains(
    nodes: list[Node], source: str, problems: list[Problem]
) -> tuple[dict[str, NvlinkDomain], dict[str, int]]:
    members: dict[str, list[Node]] = defaultdict(list)
    for n in nodes:
        if n.nvlink_domain:
            members[n.nvlink_domain].append(n)
    domains: dict[str, NvlinkDomain] = {}
    usable: dict[str, int] = {}
    for did, ns in members.items():
        types = sorted({n.gpu_type or "" for n in ns})
        if len(types) > 1:
            problems.append(
                Problem(
                    source,
                    f"nvlink_domain {did!r}",
                    (
                        f"one NVLink domain mixes GPU types {', '.join(types)} (nodes "
                        f"{', '.join(n.name for n in ns[:4])}{', ...' if len(ns) > 4 else ''})"
                    ),
                )
            )
            continue
        domains[did] = NvlinkDomain(
            id=did,
            gpu_type=types[0],
            nodes=tuple(n.name for n in ns),
            gpus_per_node=tuple(n.gpu_count for n in ns),
        )
        usable[did] = sum(n.gpu_count for n in ns if n.usable)
    return domains, usable


def _resolve_pod(spec: TpuPodSpec, item: str, source: str, problems: list[Problem]) -> TpuPod | None:
    gen = canonical_tpu_type(spec.type)
    if gen is None:
        problems.append(Problem(source, item, f"unknown TPU type {spec.type!r} (known: v4, v5e, v5p, v6e)"))
        return None
    info = tpu_info(gen)
    shape = tuple(spec.shape)
    if len(shape) != info.dims:
        problems.append(
            Problem(
                source,
                item,
                (f"a {gen} mesh has {info.dims} dimensions, not {len(shape)} ({format_shape(shape)})"),
            )
        )
        return None
    if any(a > b for a, b in zip(sorted(shape), sorted(info.pod_shape), strict=True)):
        problems.append(
            Problem(
                source,
                item,
                (f"mesh {format_shape(shape)} is larger than a {gen} pod ({format_shape(info.pod_shape)})"),
            )
        )
        return None
    chips = 1
    for d in shape:
        chips *= d
    if chips <= max(info.chips_per_host_options):
        host_shape = shape
    else:
        host_shape = info.host_shape
        if any(d % h for d, h in zip(shape, host_shape, strict=True)):
            problems.append(
                Problem(
                    source,
                    item,
                    (f"mesh {format_shape(shape)} is not a whole number of {format_shape(host_shape)} hosts"),
                )
            )
            return None
    wrap = tuple(spec.wrap) if spec.wrap is not None else slice_wraps(gen, shape, shape)
    region = spec.region or region_of_zone(spec.zone)
    derived = {
        "accelerator": "tpu",
        "tpu_type": gen,
        "tpu_topology": format_shape(shape),
        "capacity_class": spec.capacity_class,
        "hostname": spec.name,
    }
    for key, value in (("zone", spec.zone), ("region", region)):
        if value:
            derived[key] = value
    return TpuPod(
        name=spec.name,
        generation=gen,
        shape=shape,
        wrap=wrap,
        host_shape=host_shape,
        zone=spec.zone,
        region=region,
        fixed_slice=spec.fixed_slice,
        labels=MappingProxyType(merge_labels(spec.labels, (), derived)),
        capacity_class=spec.capacity_class,
        price_per_hour=spec.price_per_hour,
        cpu_cores_per_host=spec.cpu_cores_per_host,
        memory_gb_per_host=spec.memory_gb_per_host,
        schedulable=spec.schedulable,
        ready=spec.ready,
        spec=spec,
    )


def build_cluster(inventory: Inventory, source: str = "inventory") -> Cluster:
    """Validate and resolve an inventory into a cluster snapshot with its running jobs applied.

    ``source`` names the description in error messages (a file name, ``kubernetes:nodes.json``, ...).
    Raises :class:`~placer.topology.errors.TopologyError` listing every problem found.

    >>> build_cluster(Inventory(nodes=[{"name": "x", "gpus": {"type": "nvidia-h10", "count": 1}}]), "c.yaml")
    Traceback (most recent call last):
    ...
    placer.topology.errors.TopologyError: c.yaml: nodes[0] (x): unknown GPU type 'nvidia-h10': not in the \
accelerator catalog; give gpus.memory_gb to use a type outside the catalog
    """
    problems: list[Problem] = []
    nodes = _resolve_nodes(inventory, source, problems)
    domains, usable = _resolve_domains(nodes, source, problems)
    pods: dict[str, TpuPod] = {}
    pod_names: set[str] = set()
    for i, spec in enumerate(inventory.tpu_pods):
        item = f"tpu_pods[{i}] ({spec.name})"
        if spec.name in pod_names:
            problems.append(Problem(source, item, "duplicate TPU pod name"))
            continue
        pod_names.add(spec.name)
        pod = _resolve_pod(spec, item, source, problems)
        if pod is not None:
            pods[spec.name] = pod
    if problems:
        raise TopologyError(problems)
    structure = Structure(
        inventory=inventory,
        source=source,
        nodes=tuple(nodes),
        node_index={n.name: n for n in nodes},
        domains=domains,
        pods=pods,
        domain_usable=usable,
    )
    jobs = [(f"running[{i}] ({job.job})", job) for i, job in enumerate(inventory.running)]
    state = apply_jobs(structure, State.empty(), jobs, source)
    return Cluster(structure, state)
