"""Fragmentation at an instant: free capacity that none of the waiting jobs can use.

Why "waiting jobs" and not an abstract measure: a free GPU is only wasted when someone waits for a GPU
and cannot take that one — because the rest of its node is busy (a 4-GPU job and 3 free GPUs), or its
NVLink domain is split, or the free TPU chips form no slice of the shape asked. With nobody waiting, free
capacity is idle, not fragmented, and counts as neither.

Definitions (each counted only while at least one job of that kind waits after the decision):

* ``stranded_gpus``: free GPUs on usable nodes where no waiting GPU job fits one piece — its GPUs per
  replica, or, for a job the solver may split over nodes (a distributed strategy), the largest divisor of
  them that fits the node — of a GPU type it accepts (an NVLink job needs an NVLink node);
* ``stranded_nvlink_domains`` / ``stranded_nvlink_gpus``: NVLink domains with free GPUs in which no
  waiting NVLink job (more than one GPU, ``interconnect: nvlink``) of their GPU type fits whole, and those
  free GPUs; ``partial_nvlink_domains``: domains partly free, whoever waits;
* ``stranded_tpu_chips``: free chips of pods where no waiting TPU job of the pod's generation finds a
  free slice of its shape.

>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> from placer.topology import cluster_of, dgx_h100
>>> busy = {"job": "r", "replicas": [{"node": "dgx-h100-1", "gpus": [0, 1, 2, 3, 4]}]}
>>> c = cluster_of(dgx_h100(2)).allocate(busy)
>>> four = Job(id="w", tasks=[TaskGroup(gpu=GpuDemand(count=4))])
>>> f = fragmentation(c, [four])
>>> f.free_gpus, f.stranded_gpus, f.partial_nvlink_domains
(11, 3, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from placer.solver.demand import largest_divisor_at_most
from placer.solver.jobs.model import Interconnect, Job
from placer.topology import Cluster, canonical_gpu_type, canonical_tpu_type
from placer.topology.tpu import slices_in_pod

__all__ = ["Fragmentation", "fragmentation"]


@dataclass(frozen=True, slots=True)
class Fragmentation:
    free_gpus: int = 0
    stranded_gpus: int = 0
    partial_nvlink_domains: int = 0
    stranded_nvlink_domains: int = 0
    stranded_nvlink_gpus: int = 0
    free_tpu_chips: int = 0
    stranded_tpu_chips: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class _Need:
    types: frozenset[str] | None  # accepted GPU types (None: any)
    per_replica: int
    spans: bool
    nvlink: bool
    total: int

    def accepts(self, gpu_type: str | None) -> bool:
        return self.types is None or gpu_type in self.types

    def piece(self, node_gpus: int) -> int | None:
        """GPUs one part of the job takes on a node of ``node_gpus`` GPUs (None: it cannot use it)."""
        if self.per_replica <= node_gpus:
            return self.per_replica
        if not self.spans:
            return None
        return largest_divisor_at_most(self.per_replica, node_gpus)


def _needs(jobs: Sequence[Job]) -> tuple[set[_Need], set[tuple[str, tuple[int, ...]]]]:
    gpu: set[_Need] = set()
    tpu: set[tuple[str, tuple[int, ...]]] = set()
    for job in jobs:
        for g in job.tasks:
            if g.tpu is not None and g.tpu.topology is not None:
                gen = canonical_tpu_type(g.tpu.type or "") or (g.tpu.type or "")
                tpu.add((gen, tuple(g.tpu.topology)))
            elif g.gpu is not None and g.gpu.count > 0:
                types = frozenset(canonical_gpu_type(t) or t for t in g.gpu.types) or None
                nvlink = g.gpu.interconnect is Interconnect.NVLINK and job.total_gpus > 1
                # as the solver splits (solver/demand.py): only a group of one replica, of a job whose
                # distributed strategy lets it span nodes
                spans = g.count == 1 and job.may_span_nodes()
                gpu.add(_Need(types, g.gpu.count, spans, nvlink, job.total_gpus))
    return gpu, tpu


def fragmentation(cluster: Cluster, waiting: Sequence[Job]) -> Fragmentation:
    """The measures of the module docstring for ``cluster`` and the jobs still ``waiting``."""
    gpu_needs, tpu_needs = _needs(waiting)
    used = cluster.state.nodes
    free_gpus = stranded = 0
    usable_cache: dict[tuple[str | None, int, bool, int], bool] = {}
    for node in cluster.nodes:
        if not node.gpu_count or not node.usable:
            continue
        f = len(cluster.free_gpus(node.name)) if node.name in used else node.gpu_count
        if not f:
            continue
        free_gpus += f
        if not gpu_needs:
            continue
        nv = node.gpu_interconnect == "nvlink"
        key = (node.gpu_type, node.gpu_count, nv, f)
        if key not in usable_cache:
            usable_cache[key] = any(
                n.accepts(node.gpu_type)
                and (p := n.piece(node.gpu_count)) is not None
                and p <= f
                and (nv or not n.nvlink)
                for n in gpu_needs
            )
        if not usable_cache[key]:
            stranded += f
    partial = nv_domains = nv_gpus = 0
    nvlink_needs = [n for n in gpu_needs if n.nvlink]
    for fd in cluster.free_nvlink_domains(min_free=1):
        if fd.free < fd.domain.size:
            partial += 1
        if nvlink_needs and not any(
            n.accepts(fd.domain.gpu_type) and n.total <= fd.free for n in nvlink_needs
        ):
            nv_domains += 1
            nv_gpus += fd.free
    free_chips = stranded_chips = 0
    for pod in cluster.tpu_pods():
        free = cluster.free_tpu_chips(pod.name)
        if not free:
            continue
        free_chips += free
        shapes = [s for gen, s in tpu_needs if gen == pod.generation]
        if tpu_needs and not any(_fits(cluster, pod, s) for s in shapes):
            stranded_chips += free
    return Fragmentation(free_gpus, stranded, partial, nv_domains, nv_gpus, free_chips, stranded_chips)


def _fits(cluster: Cluster, pod: object, shape: tuple[int, ...]) -> bool:
    try:
        return bool(slices_in_pod(pod, shape, cluster.used_tpu_chips(pod.name)))  # type: ignore[arg-type, attr-defined]
    except ValueError:
        return False
