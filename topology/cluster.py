"""The :class:`Cluster`: one immutable snapshot of a cluster's structure and of what runs on it.

Why snapshots: the solver and the simulators ask "what is free" and "what if this job ran there" over and
over. A ``Cluster`` never changes; :meth:`Cluster.allocate`, :meth:`Cluster.release` and
:meth:`Cluster.with_allocations` return a *new* cluster that shares the structure (nodes, domains, pods,
graph, indexes) and copies only the allocation entries it touches. Keep the old object to undo.

"Free" means held by no running job. Per-node answers (:meth:`free_gpus`, :meth:`free`) report that for
any node; cluster-wide answers (:meth:`free_nvlink_domains`, :meth:`free_tpu_chips`, the summaries) count
only schedulable, ready nodes and pods, since capacity on a cordoned or broken machine is not usable.

>>> from placer.topology.presets import cluster_of, dgx_h100
>>> c = cluster_of(dgx_h100(2))
>>> c2 = c.allocate({"job": "j", "replicas": [{"node": "dgx-h100-1", "gpus": [0, 1]}]})
>>> len(c.free_gpus("dgx-h100-1")), len(c2.free_gpus("dgx-h100-1"))
(8, 6)
>>> [d.domain.id for d in c2.free_nvlink_domains("nvidia-h100", min_free=8)]
['dgx-h100-2/nvlink']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import ValidationError

from placer.topology.allocations import WHOLE, NodeUsage, State, apply_jobs, remove_jobs
from placer.topology.catalog import canonical_gpu_type
from placer.topology.errors import Problem, TopologyError
from placer.topology.extended import advertised
from placer.topology.inventory import Inventory, RunningJob
from placer.topology.model import Coord, Gpu, Node, NodeFree, NvlinkDomain, TpuPod
from placer.topology.structure import Structure

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Cluster", "FreeDomain"]

_NO_USAGE = NodeUsage()


class FreeDomain(NamedTuple):
    """An NVLink domain and how many of its GPUs are free (on usable nodes)."""

    domain: NvlinkDomain
    free: int


class Cluster:
    """A cluster snapshot. Build one with :func:`placer.topology.build.build_cluster` or the builders."""

    __slots__ = ("state", "structure")

    def __init__(self, structure: Structure, state: State):
        self.structure = structure
        self.state = state

    def __repr__(self) -> str:
        return (
            f"Cluster({self.name!r}: {len(self.structure.nodes)} nodes, {len(self.structure.domains)} "
            f"NVLink domains, {len(self.structure.pods)} TPU pods, {len(self.state.jobs)} running jobs)"
        )

    # -- structure ------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The inventory's name."""
        return self.structure.inventory.name

    @property
    def licenses(self) -> dict[str, int]:
        """Cluster-wide licence seats by name (:attr:`~placer.topology.inventory.Inventory.licenses`)."""
        return self.structure.inventory.licenses

    @property
    def source(self) -> str:
        """Where the description came from (for messages)."""
        return self.structure.source

    @property
    def nodes(self) -> tuple[Node, ...]:
        """Every node, in inventory order (templates expanded)."""
        return self.structure.nodes

    @property
    def graph(self) -> nx.DiGraph:
        """The frozen networkx graph of the structure (built on first access; see
        :mod:`placer.topology.graph`)."""
        return self.structure.graph()

    def node(self, name: str) -> Node:
        """The node called ``name``; ``KeyError`` if there is none."""
        try:
            return self.structure.node_index[name]
        except KeyError:
            raise KeyError(f"no node {name!r} in cluster {self.name!r}") from None

    def has_node(self, name: str) -> bool:
        """Whether a node of that name exists."""
        return name in self.structure.node_index

    def gpus(self, node: str) -> tuple[Gpu, ...]:
        """The GPUs of a node."""
        return self.node(node).gpus

    def nodes_with(self, key: str, value: str) -> tuple[Node, ...]:
        """Nodes whose (derived or user) label ``key`` equals ``value`` — indexed, for rule pre-filtering."""
        index = self.structure.node_index
        return tuple(index[n] for n in self.structure.label_index().get((key, value), ()))

    def nvlink_domains(self, gpu_type: str | None = None) -> tuple[NvlinkDomain, ...]:
        """Every NVLink domain, or those of one GPU type (any spelling the catalog knows)."""
        if gpu_type is None:
            return tuple(self.structure.domains.values())
        ids = self.structure.domains_by_type.get(canonical_gpu_type(gpu_type) or gpu_type, ())
        return tuple(self.structure.domains[i] for i in ids)

    def nvlink_domain(self, domain_id: str) -> NvlinkDomain:
        """One NVLink domain by id; ``KeyError`` if there is none."""
        try:
            return self.structure.domains[domain_id]
        except KeyError:
            raise KeyError(f"no NVLink domain {domain_id!r}") from None

    def tpu_pods(self, generation: str | None = None) -> tuple[TpuPod, ...]:
        """Every TPU pod, or those of one generation."""
        pods = self.structure.pods.values()
        return tuple(p for p in pods if generation is None or p.generation == generation)

    def tpu_pod(self, name: str) -> TpuPod:
        """One TPU pod by name; ``KeyError`` if there is none."""
        try:
            return self.structure.pods[name]
        except KeyError:
            raise KeyError(f"no TPU pod {name!r}") from None

    # -- free capacity --------------------------------------------------------------------------------

    def usage(self, node: str) -> NodeUsage:
        """What running jobs hold on ``node`` (an empty usage when nothing)."""
        self.node(node)
        return self.state.nodes.get(node, _NO_USAGE)

    def free_gpus(self, node: str) -> tuple[int, ...]:
        """Indices of the node's GPUs that no job holds, even partly."""
        n = self.node(node)
        held = self.state.nodes.get(node, _NO_USAGE).gpus
        return tuple(i for i in range(n.gpu_count) if not held.get(i))

    def free_gpu_milli(self, node: str) -> dict[int, int]:
        """Per GPU index, the milli-GPUs still free (1000 for an unused GPU, 0 for a wholly held one)."""
        n = self.node(node)
        usage = self.state.nodes.get(node, _NO_USAGE)
        return {i: WHOLE - usage.gpu_milli_used(i) for i in range(n.gpu_count)}

    def free(self, node: str) -> NodeFree:
        """Free cpu, memory, storage, shm and GPUs of one node."""
        n = self.node(node)
        u = self.state.nodes.get(node, _NO_USAGE)
        return NodeFree(
            node=node,
            cpu_cores=n.cpu_cores - u.cpu_cores,
            memory_gb=n.memory_gb - u.memory_gb,
            storage_gb=None if n.storage_gb is None else n.storage_gb - u.storage_gb,
            shm_gb=None if n.shm_gb is None else n.shm_gb - u.shm_gb,
            gpus=self.free_gpus(node),
            gpu_milli=self.free_gpu_milli(node),
        )

    def free_extra(self, node: str, name: str) -> float:
        """How much of extended resource ``name`` no job holds on ``node`` (``NodeSpec.extra``)."""
        held = self.state.nodes.get(node, _NO_USAGE).extra.get(name, 0.0)
        return advertised(self.node(node), name) - held

    def free_cpu(self, node: str) -> float:
        """Cores no job holds on ``node``."""
        return self.node(node).cpu_cores - self.state.nodes.get(node, _NO_USAGE).cpu_cores

    def free_memory_gb(self, node: str) -> float:
        """Memory (GB) no job holds on ``node``."""
        return self.node(node).memory_gb - self.state.nodes.get(node, _NO_USAGE).memory_gb

    def domain_free(self, domain_id: str) -> int:
        """Free GPUs of a domain on schedulable, ready nodes (O(1): kept up to date by snapshots)."""
        return self.structure.domain_usable[domain_id] - self.state.domain_busy.get(domain_id, 0)

    def free_domain_gpus(self, domain_id: str) -> tuple[tuple[str, int], ...]:
        """The free GPUs of a domain as ``(node, index)``, on schedulable, ready nodes only."""
        dom = self.nvlink_domain(domain_id)
        index = self.structure.node_index
        return tuple((n, i) for n in dom.nodes if index[n].usable for i in self.free_gpus(n))

    def free_nvlink_domains(self, gpu_type: str | None = None, min_free: int = 8) -> list[FreeDomain]:
        """NVLink domains with at least ``min_free`` free GPUs ("which domains have 8 free H100s"), most
        free first, then by id. ``gpu_type`` accepts any spelling the catalog knows.

        Each domain's free count is one dict lookup, so this is a few milliseconds at 10k domains.
        """
        if gpu_type is None:
            ids: Iterable[str] = self.structure.domains
        else:
            ids = self.structure.domains_by_type.get(canonical_gpu_type(gpu_type) or gpu_type, ())
        usable = self.structure.domain_usable
        busy = self.state.domain_busy
        domains = self.structure.domains
        if busy:
            hits = [(usable[d] - busy.get(d, 0), d) for d in ids]
            hits = [(f, d) for f, d in hits if f >= min_free]
        else:
            hits = [(usable[d], d) for d in ids if usable[d] >= min_free]
        hits.sort(key=lambda fd: (-fd[0], fd[1]))
        return [FreeDomain(domains[d], f) for f, d in hits]

    def used_tpu_chips(self, pod: str) -> Mapping[Coord, str]:
        """Chips of ``pod`` held by running jobs: coordinate -> job id."""
        self.tpu_pod(pod)
        return self.state.pods.get(pod, {})

    def free_tpu_chips(self, pod: str) -> int:
        """Number of free chips in a pod (0 when the pod is not schedulable or not ready)."""
        p = self.tpu_pod(pod)
        if not p.usable:
            return 0
        return p.chips - len(self.state.pods.get(pod, {}))

    # -- running jobs and snapshots -------------------------------------------------------------------

    def running_jobs(self) -> tuple[RunningJob, ...]:
        """Every running job, in the order they were applied."""
        return tuple(self.state.jobs.values())

    def running_job(self, job_id: str) -> RunningJob:
        """One running job by id; ``KeyError`` if there is none."""
        try:
            return self.state.jobs[job_id]
        except KeyError:
            raise KeyError(f"no running job {job_id!r}") from None

    def jobs_on(self, node: str) -> tuple[str, ...]:
        """Ids of the running jobs holding anything on ``node``."""
        return self.usage(node).jobs

    def _coerce(self, jobs: Iterable[RunningJob | Mapping[str, Any]]) -> list[tuple[str, RunningJob]]:
        out: list[tuple[str, RunningJob]] = []
        problems: list[Problem] = []
        for i, job in enumerate(jobs):
            if isinstance(job, RunningJob):
                out.append((f"allocation[{i}] ({job.job})", job))
                continue
            try:
                rj = RunningJob.model_validate(job)
            except ValidationError as e:
                name = job.get("job") if isinstance(job, Mapping) else None
                for err in e.errors():
                    loc = ".".join(str(p) for p in err["loc"]) or "job"
                    problems.append(Problem(self.source, f"allocation[{i}] ({name})", f"{loc}: {err['msg']}"))
                continue
            out.append((f"allocation[{i}] ({rj.job})", rj))
        if problems:
            raise TopologyError(problems)
        return out

    def with_allocations(self, jobs: Iterable[RunningJob | Mapping[str, Any]]) -> Cluster:
        """A new snapshot with ``jobs`` (``RunningJob`` objects or dicts of that shape) also running.

        All-or-nothing: any problem (unknown node, GPU out of range, double-booked GPU or chip,
        over-committed cpu/memory) raises :class:`TopologyError` and no snapshot is made.
        """
        return Cluster(
            self.structure, apply_jobs(self.structure, self.state, self._coerce(jobs), self.source)
        )

    def with_licenses(self, seats: Mapping[str, int]) -> Cluster:
        """The same cluster with these cluster-wide licence seats (:attr:`licenses`; Slurm's
        ``scontrol show licenses``), replacing any it had. A negative count or an empty name raises
        :class:`TopologyError`.

        >>> from placer.topology import cluster_of, cpu_nodes
        >>> cluster_of(cpu_nodes(1)).with_licenses({"matlab": 4}).licenses
        {'matlab': 4}
        """
        bad = [
            f"{n!r}: {c!r}" for n, c in seats.items() if not str(n).strip() or not isinstance(c, int) or c < 0
        ]
        if bad:
            raise TopologyError(
                [
                    Problem(self.source, "licenses", f"a licence needs a name and a whole count >= 0: {b}")
                    for b in bad
                ]
            )
        inventory = self.structure.inventory.model_copy(update={"licenses": dict(seats)})
        return Cluster(dataclasses.replace(self.structure, inventory=inventory), self.state)

    def allocate(self, job: RunningJob | Mapping[str, Any]) -> Cluster:
        """A new snapshot with one more running job (see :meth:`with_allocations`)."""
        return self.with_allocations([job])

    def release(self, *job_ids: str) -> Cluster:
        """A new snapshot without the named running jobs; an unknown id raises :class:`TopologyError`."""
        return Cluster(self.structure, remove_jobs(self.structure, self.state, job_ids, self.source))

    def without_allocations(self) -> Cluster:
        """The same cluster with nothing running."""
        return Cluster(self.structure, State.empty())

    def to_inventory(self) -> Inventory:
        """The inventory this snapshot stands for: the original nodes and pods (templates kept) and the
        jobs running now. ``build_cluster(c.to_inventory())`` gives an equal cluster."""
        inv = self.structure.inventory
        return inv.model_copy(update={"running": list(self.state.jobs.values())})
