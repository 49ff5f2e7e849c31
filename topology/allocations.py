"""Who holds what: running jobs applied to a cluster as per-node and per-pod usage, validated.

Why immutable snapshots with copy-on-write: simulators and the solver try "what if job X ran here" many
times over a 10k-node cluster, and a session commits one placement at a time. A :class:`State` is never
changed; applying or releasing a job makes new entries only for the jobs, nodes and pods it touches, and
the tables of the new snapshot share the old ones' (:class:`~placer.topology.layered.Layered`), so a new
snapshot costs time in proportion to what changed and old snapshots stay valid.

A GPU is held by a list of ``(job, milli)`` shares: a whole-GPU allocation is one share of 1000, a
fractional one (``gpu_milli``) a share of less; a GPU is free when it has no share, and shares never sum
past 1000 nor join a whole allocation.

>>> State.empty().jobs
{}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from placer.topology.errors import Problem, TopologyError
from placer.topology.extended import advertised
from placer.topology.inventory import ReplicaAllocation, RunningJob
from placer.topology.layered import Layered
from placer.topology.model import Coord

if TYPE_CHECKING:
    from placer.topology.structure import Structure

__all__ = ["WHOLE", "NodeUsage", "State", "apply_jobs", "remove_jobs"]

#: Tolerance when comparing summed float capacities.
_EPS = 1e-9
WHOLE = 1000


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """What running jobs hold on one node."""

    cpu_cores: float = 0.0
    memory_gb: float = 0.0
    storage_gb: float = 0.0
    shm_gb: float = 0.0
    gpus: Mapping[int, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    jobs: tuple[str, ...] = ()
    #: Extended resources held (``ReplicaAllocation.extra``), by name.
    extra: Mapping[str, float] = field(default_factory=dict)

    def gpu_milli_used(self, index: int) -> int:
        """Milli-GPUs of GPU ``index`` held (1000 = the whole GPU)."""
        return sum(m for _, m in self.gpus.get(index, ()))


@dataclass(frozen=True, slots=True)
class State:
    """One allocation snapshot: running jobs, usage per node, chips held per pod, busy GPUs per domain."""

    jobs: Layered[str, RunningJob]
    nodes: Layered[str, NodeUsage]
    pods: Layered[str, Mapping[Coord, str]]
    domain_busy: Layered[str, int]

    @staticmethod
    def empty() -> State:
        """Nothing running."""
        return State(jobs=Layered(), nodes=Layered(), pods=Layered(), domain_busy=Layered())


class _Ledger:
    """Copy-on-write builder of a new :class:`State`: mutates private copies, never the old snapshot."""

    def __init__(self, structure: Structure, state: State, source: str):
        self.s = structure
        self.source = source
        self.jobs = state.jobs.edit()
        self.nodes = state.nodes.edit()
        self.pods = state.pods.edit()
        self.domain_busy = state.domain_busy.edit()
        self._copied_pods: set[str] = set()
        self.problems: list[Problem] = []

    def state(self) -> State:
        if self.problems:
            raise TopologyError(self.problems)
        return State(
            jobs=self.jobs.done(),
            nodes=self.nodes.done(),
            pods=self.pods.done(),
            domain_busy=self.domain_busy.done(),
        )

    def _problem(self, item: str, message: str) -> None:
        self.problems.append(Problem(self.source, item, message))

    # -- adding ---------------------------------------------------------------------------------------

    def add_job(self, job: RunningJob, item: str) -> None:
        if job.job in self.jobs:
            self._problem(item, f"job {job.job!r} is already running")
            return
        before = len(self.problems)
        pods_touched: dict[str, set[Coord]] = {}
        for r, rep in enumerate(job.replicas):
            self._add_replica(job.job, rep, f"{item}.replicas[{r}]", pods_touched)
        for pod_name, chips in pods_touched.items():
            pod = self.s.pods[pod_name]
            if pod.fixed_slice and len(chips) != pod.chips:
                self._problem(
                    item,
                    f"TPU pod {pod_name!r} is a fixed slice: a job holds all {pod.chips} chips or none, "
                    f"not {len(chips)}",
                )
        if len(self.problems) == before:
            self.jobs[job.job] = job

    def _add_replica(self, job: str, rep: ReplicaAllocation, item: str, pods: dict[str, set[Coord]]) -> None:
        if rep.node is not None and rep.tpu_pod is not None:
            self._problem(item, "a replica sits on a node or on a TPU pod, not both")
            return
        if rep.node is not None:
            self._add_node_replica(job, rep, item)
        else:
            self._add_tpu_replica(job, rep, item, pods)

    def _add_node_replica(self, job: str, rep: ReplicaAllocation, item: str) -> None:
        name = rep.node or ""
        node = self.s.node_index.get(name)
        if node is None:
            self._problem(item, f"unknown node {name!r}")
            return
        if rep.tpu_chips:
            self._problem(item, f"node {name!r}: TPU chips belong to a tpu_pod replica, not to a node")
            return
        usage = self.nodes.get(name, NodeUsage())
        gpus = dict(usage.gpus)
        share = rep.gpu_milli if rep.gpu_milli is not None else WHOLE
        ok = True
        if len(set(rep.gpus)) != len(rep.gpus):
            self._problem(item, f"node {name!r}: GPU index listed twice in {rep.gpus}")
            ok = False
        newly_busy = 0
        for idx in dict.fromkeys(rep.gpus):
            if not 0 <= idx < node.gpu_count:
                self._problem(
                    item, f"node {name!r}: GPU index {idx} out of range (the node has {node.gpu_count} GPUs)"
                )
                ok = False
                continue
            holders = gpus.get(idx, ())
            used = sum(m for _, m in holders)
            if used + share > WHOLE:
                who = ", ".join(f"{j} ({m} milli)" for j, m in holders)
                self._problem(item, f"node {name!r}: GPU {idx} double-booked: already held by {who}")
                ok = False
                continue
            if not holders:
                newly_busy += 1
            gpus[idx] = (*holders, (job, share))
        new = NodeUsage(
            cpu_cores=usage.cpu_cores + rep.cpu_cores,
            memory_gb=usage.memory_gb + rep.memory_gb,
            storage_gb=usage.storage_gb + rep.storage_gb,
            shm_gb=usage.shm_gb + rep.shm_gb,
            gpus=gpus,
            jobs=usage.jobs if job in usage.jobs else (*usage.jobs, job),
            extra=_summed(usage.extra, rep.extra) if rep.extra else usage.extra,
        )
        for what in sorted(rep.extra):
            held, has = new.extra[what], advertised(node, what)
            if held > has + _EPS:
                self._problem(
                    item, f"node {name!r}: {what} over-committed: {held:g} in use, the node has {has:g}"
                )
                ok = False
        for what, used_, cap, unit in (
            ("cpu", new.cpu_cores, node.cpu_cores, "cores"),
            ("memory", new.memory_gb, node.memory_gb, "GB"),
            ("storage", new.storage_gb, node.storage_gb, "GB"),
            ("shm", new.shm_gb, node.shm_gb, "GB"),
        ):
            if cap is not None and used_ > cap + _EPS:
                self._problem(
                    item, f"node {name!r}: {what} over-committed: {used_:g} {unit} in use, capacity {cap:g}"
                )
                ok = False
        if not ok:
            return
        self.nodes[name] = new
        if newly_busy and node.nvlink_domain and node.usable:
            self.domain_busy[node.nvlink_domain] = self.domain_busy.get(node.nvlink_domain, 0) + newly_busy

    def _add_tpu_replica(
        self, job: str, rep: ReplicaAllocation, item: str, pods: dict[str, set[Coord]]
    ) -> None:
        name = rep.tpu_pod or ""
        pod = self.s.pods.get(name)
        if pod is None:
            self._problem(item, f"unknown TPU pod {name!r}")
            return
        if rep.gpus:
            self._problem(item, f"TPU pod {name!r}: a TPU replica holds chips, not GPUs")
            return
        if name not in self._copied_pods:
            self.pods[name] = dict(self.pods.get(name, {}))
            self._copied_pods.add(name)
        held = self.pods[name]
        assert isinstance(held, dict)
        mine = pods.setdefault(name, set())
        for raw in rep.tpu_chips:
            chip = tuple(raw)
            if not pod.contains(chip):
                self._problem(
                    item, f"TPU pod {name!r}: chip {list(chip)} is outside the {_fmt(pod.shape)} mesh"
                )
                continue
            other = held.get(chip)
            if other is not None:
                self._problem(
                    item, f"TPU pod {name!r}: chip {list(chip)} double-booked: already held by {other}"
                )
                continue
            held[chip] = job
            mine.add(chip)

    # -- removing -------------------------------------------------------------------------------------

    def remove_job(self, job_id: str) -> None:
        job = self.jobs.pop(job_id, None)
        if job is None:
            self._problem(f"job {job_id!r}", "no such running job")
            return
        for rep in job.replicas:
            if rep.node is not None and rep.node in self.nodes:
                self._remove_from_node(job_id, rep.node)
            elif rep.tpu_pod is not None and rep.tpu_pod in self.pods:
                if rep.tpu_pod not in self._copied_pods:
                    self.pods[rep.tpu_pod] = dict(self.pods[rep.tpu_pod])
                    self._copied_pods.add(rep.tpu_pod)
                held = self.pods[rep.tpu_pod]
                assert isinstance(held, dict)
                for raw in rep.tpu_chips:
                    if held.get(tuple(raw)) == job_id:
                        del held[tuple(raw)]

    def _remove_from_node(self, job_id: str, name: str) -> None:
        """Rebuild the node's usage from the jobs that remain on it (no float drift from subtraction)."""
        usage = self.nodes[name]
        if job_id not in usage.jobs:
            return
        node = self.s.node_index[name]
        busy_before = sum(1 for h in usage.gpus.values() if h)
        rebuilt = NodeUsage()
        gpus: dict[int, tuple[tuple[str, int], ...]] = {}
        for other in usage.jobs:
            if other == job_id:
                continue
            for rep in self.jobs[other].replicas:
                if rep.node != name:
                    continue
                share = rep.gpu_milli if rep.gpu_milli is not None else WHOLE
                for idx in rep.gpus:
                    gpus[idx] = (*gpus.get(idx, ()), (other, share))
                rebuilt = replace(
                    rebuilt,
                    cpu_cores=rebuilt.cpu_cores + rep.cpu_cores,
                    memory_gb=rebuilt.memory_gb + rep.memory_gb,
                    storage_gb=rebuilt.storage_gb + rep.storage_gb,
                    shm_gb=rebuilt.shm_gb + rep.shm_gb,
                    extra=_summed(rebuilt.extra, rep.extra) if rep.extra else rebuilt.extra,
                )
        jobs = tuple(j for j in usage.jobs if j != job_id)
        if jobs:
            self.nodes[name] = replace(rebuilt, gpus=gpus, jobs=jobs)
        else:
            del self.nodes[name]
        freed = busy_before - len(gpus)
        if freed and node.nvlink_domain and node.usable:
            self.domain_busy[node.nvlink_domain] = self.domain_busy.get(node.nvlink_domain, 0) - freed


def _fmt(shape: Coord) -> str:
    return "x".join(str(d) for d in shape)


def apply_jobs(
    structure: Structure, state: State, jobs: Iterable[tuple[str, RunningJob]], source: str
) -> State:
    """A new state with ``jobs`` (pairs of error-message item and job) added; all problems at once.

    Raises :class:`~placer.topology.errors.TopologyError` naming each bad job and replica.

    >>> from placer.topology.build import build_cluster
    >>> from placer.topology.inventory import Inventory
    >>> inv = Inventory.model_validate({"nodes": [{"name": "n", "gpus": {"type": "t4", "count": 1}}]})
    >>> c = build_cluster(inv)
    >>> job = RunningJob(job="j", replicas=[{"node": "n", "gpus": [1]}])
    >>> try:
    ...     apply_jobs(c.structure, c.state, [("running[0] (j)", job)], "x.yaml")
    ... except TopologyError as e:
    ...     print(e)
    x.yaml: running[0] (j).replicas[0]: node 'n': GPU index 1 out of range (the node has 1 GPUs)
    """
    ledger = _Ledger(structure, state, source)
    for item, job in jobs:
        ledger.add_job(job, item)
    return ledger.state()


def remove_jobs(structure: Structure, state: State, job_ids: Iterable[str], source: str) -> State:
    """A new state without the named jobs; unknown job ids are a :class:`TopologyError`."""
    ledger = _Ledger(structure, state, source)
    for job_id in job_ids:
        ledger.remove_job(job_id)
    return ledger.state()


def _summed(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    """Extended-resource amounts ``a`` plus ``b``, name by name."""
    out = dict(a)
    for name, amount in b.items():
        out[name] = out.get(name, 0.0) + amount
    return out
