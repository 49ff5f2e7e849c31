"""Queue GPU budgets (OJS ML resources §10.3) and dollar budgets: how much room each queue (and tenant)
has left in this decision.

``max_total_gpus`` bounds the GPUs held by a queue's active jobs, ``max_concurrent_gpu_jobs`` the number of
its active GPU jobs; active means running (and not evicted by this decision) or placed by it. A job over
budget is never rejected: it stays pending with ``QUEUE_BUDGET`` (§10.3: "MUST NOT reject budget-exceeded
jobs; MUST queue them").

CPU and memory budgets (placer's ``max_total_cpu_cores`` and ``max_total_memory_gb``, not OJS: a Kueue
ClusterQueue's ``cpu`` and ``memory`` quotas) bound the cores and GB the queue's active jobs hold on nodes,
every job counting, GPU or not; over either a job waits (``QUEUE_BUDGET``, naming the resource). A cohort
with such totals (``config.cohort.max_total_cpu_cores``, ``max_total_memory_gb``: a Kueue cohort's) bounds
what its queues hold together, on top of each queue's own. Evicting a running job gives its cores and
memory back to jobs that outrank it, as for GPUs.

Per-flavor quotas (a queue's ``flavor_groups`` whose flavors carry ``max_gpus``, ``max_cpu_cores``,
``max_memory_gb`` or ``max_pods``: a Kueue ClusterQueue's quotas per ResourceFlavor) bound what the queue's
jobs hold of that resource on each flavor's nodes, a node counted under the first flavor, of the group
covering the resource, whose labels it has; over one a job waits (``QUEUE_BUDGET``, naming the flavor and
the resource). Running jobs count by where their replicas are.

Dollar budgets (placer's, not OJS): a queue's ``ml_limits.max_cost_per_hour`` and a tenant's
``budgets.tenants`` of the prices file bound the dollars per hour of the active jobs of that queue or
tenant — GPU, TPU and CPU work alike — each replica priced by :func:`placer.solver.prices.replica_units`
(running
jobs from their allocation). Amounts are integer money units (hundredths of a cent), as the CP-SAT model
and the checker count them, so the three never disagree over a rounding. Over budget also means pending
(``COST_BUDGET``).

Cohorts (``config.cohort``, a Kueue cohort: its ClusterQueues borrow each other's unused quota): the
GPUs of the cohort's queues' active jobs, together, stay within the cohort's total, on top of each
queue's own ``max_total_gpus`` (its nominal quota plus what it may borrow). Over it a job waits
(``QUEUE_BUDGET``, naming the cohort).

Throttles and group limits (``Job.throttle``, a Slurm array's ``%N``; ``Job.limits``, a Slurm QOS's
``GrpJobs`` and ``GrpTRES=gres/gpu``, per user and per account too): at most ``max_running`` jobs of a
group at once, and at most ``max_gpus`` GPUs held by them, counting the group's running jobs
(``RunningJob.throttle_group``, ``RunningJob.limit_groups``) — evicted or not: a running array task
evicted for another would only trade places — and the jobs placed. A job past either waits
(``THROTTLE``). Both are one mechanism here: a *group* with an optional job limit and an optional GPU
limit (:func:`job_groups`).

Licences (``Job.licenses``, Slurm's ``--licenses``) are counts for the whole cluster
(``Inventory.licenses``, Slurm's ``Licenses=``): the seats running jobs hold (evicted or not: a victim
gives them back once it has stopped) and those of the jobs placed stay within each licence's pool; a job
past one waits (``LICENSES``).

>>> from placer.solver.jobs.queues import QueueConfig
>>> cfg = {"queue": "train", "config": {"ml_limits": {"max_total_gpus": 16}}}
>>> q = {"train": QueueConfig.model_validate(cfg)}
>>> b = Budgets.of(q, running=[])
>>> b.room("train"), b.room("other")
((16.0, None), (None, None))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from placer.solver.cohorts import CohortTree
from placer.solver.jobs.flavors import FLAVOR_RESOURCES, FlavorGroup, flavor_of, quota_groups
from placer.solver.jobs.model import Job
from placer.solver.jobs.queues import GUARANTEED_FIELDS, QueueConfig
from placer.solver.preempt import evict_rank, rank
from placer.solver.prices import PriceCatalog, running_units, to_units
from placer.topology import Cluster, RunningJob

if TYPE_CHECKING:
    from placer.solver.assignment import ReplicaAt
    from placer.solver.demand import JobPlan, Need
    from placer.solver.greedy.state import State
    from placer.solver.objective.cost import Pricing
    from placer.solver.snapshot import Snapshot

__all__ = [
    "RESOURCES",
    "RESOURCE_LIMITS",
    "Budgets",
    "budget_cost",
    "charge_budget",
    "cohort_room",
    "cost_left",
    "flavor_amounts",
    "flavor_nodes",
    "flavor_off",
    "group_limits",
    "job_groups",
    "over_flavors",
    "placed_flavors",
    "remaining_cohort_room",
    "remaining_cost_room",
    "remaining_resource_room",
    "remaining_room",
    "replica_gpus",
    "replica_resources",
    "running_gpus",
    "running_groups",
    "within_budget",
    "within_throttle",
]


def job_groups(job: Job) -> list[tuple[str, int | None, float | None]]:
    """The groups ``job`` counts against, each as (group, max_running, max_gpus): its throttle (a job
    limit only) and its group limits (``Job.limits``), one entry per group (a group named twice keeps the
    smaller of each limit)."""
    if job.throttle is None and not job.limits:
        return []
    out: dict[str, tuple[int | None, float | None]] = {}
    items: list[tuple[str, int | None, float | None]] = []
    if job.throttle is not None:
        items.append((job.throttle.group, job.throttle.max_running, None))
    items += [(lim.group, lim.max_running, lim.max_gpus) for lim in job.limits]
    for g, most, gpus in items:
        was = out.get(g)
        if was is not None:
            most = _least(was[0], most)
            gpus = _least(was[1], gpus)
        out[g] = (most, gpus)
    return [(g, m, x) for g, (m, x) in out.items()]


_Amount = TypeVar("_Amount", int, float)


def _least(a: _Amount | None, b: _Amount | None) -> _Amount | None:
    return b if a is None else a if b is None else min(a, b)


def running_groups(rj: RunningJob) -> list[str]:
    """The groups a running job counts against: its throttle group and its group limits' groups."""
    if rj.throttle_group is None:
        return rj.limit_groups
    return [rj.throttle_group, *(g for g in rj.limit_groups if g != rj.throttle_group)]


def group_limits(jobs: Iterable[Job]) -> tuple[dict[str, int], dict[str, float]]:
    """Per group of ``jobs`` (``Job.throttle``, ``Job.limits``), the smallest job limit and the smallest
    GPU limit its jobs state (a group without one of them is not in that dict)."""
    most_jobs: dict[str, int] = {}
    most_gpus: dict[str, float] = {}
    for job in jobs:
        for g, most, gpus in job_groups(job):
            if most is not None:
                most_jobs[g] = min(most_jobs.get(g, most), most)
            if gpus is not None:
                most_gpus[g] = min(most_gpus.get(g, gpus), gpus)
    return most_jobs, most_gpus


def running_gpus(rj: RunningJob) -> float:
    """GPUs a running job holds (shares as fractions); TPU chips and CPU are not GPU budget."""
    return replica_gpus(rj.replicas)


def _replica_gpus(r: Any) -> float:
    return r.gpu_milli / 1000 if r.gpu_milli is not None else len(r.gpus)


def _replica_amounts(r: Any) -> tuple[float, float, float, float]:
    """A running replica on a node, as per-flavor quotas count it: GPUs, cores, GB, one pod."""
    return _replica_gpus(r), r.cpu_cores, r.memory_gb, 1.0


def flavor_amounts(need: Need) -> tuple[float, float, float, float]:
    """One replica of ``need`` on a node, as per-flavor quotas count it: GPUs (shares as fractions), cores,
    GB, one pod — :data:`~placer.solver.jobs.flavors.FLAVOR_RESOURCES` in order."""
    return need.gpus + need.milli / 1000, need.cpu, need.mem, 1.0


def _no_credit(queues: Mapping[str, QueueConfig]) -> tuple[set[str], Callable[[RunningJob], bool]]:
    """The queues whose running jobs' evictions give nothing back to their own budgets
    (``preemption.within_queue: never``: the queue's own jobs may not use that room either), and a test
    of whether a running job's eviction gives nothing back to its cohort's totals: when its queue is one
    of those, or when another queue of its cohort may not take room from the others' evictions
    (``within_cohort: never``), or not from a job of its priority (``within_cohort_max_priority``) — one
    rule per victim for every queue of the cohort, so that both engines and the checker count a victim's
    room once. A cohort in a tree is its root's: the tree's queues share one pool."""

    def pool(qc: QueueConfig) -> str | None:
        c = qc.config.cohort
        return None if c is None else c.tree[-1].name if c.tree else c.name

    closed = {q for q, qc in queues.items() if qc.config.preemption.within_queue == "never"}
    rules: dict[str, list[tuple[str, float]]] = {}  # pool -> (queue, highest victim priority it takes)
    root: dict[str, str] = {}
    for q, qc in queues.items():
        c = pool(qc)
        if c is None:
            continue
        root[q] = c
        p = qc.config.preemption
        most = -float("inf") if p.within_cohort == "never" else p.within_cohort_max_priority
        rules.setdefault(c, []).append((q, float("inf") if most is None else most))

    def shut(rj: RunningJob) -> bool:
        if rj.queue in closed:
            return True
        return any(
            q != rj.queue and rj.priority > most for q, most in rules.get(root.get(rj.queue or "", ""), [])
        )

    return closed, shut


def replica_gpus(replicas: Iterable[Any]) -> float:
    """GPUs ``replicas`` hold (running allocations or placements; shares as fractions, TPU hosts none)."""
    return sum(_replica_gpus(r) for r in replicas if r.node is not None)


#: The resources a queue's (and a cohort's) resource budgets count, in the order of every amount tuple
#: here, and the limit fields naming them (``ml_limits`` and ``config.cohort``): cores and GB on nodes,
#: and pods (a Kueue ``pods`` quota: every replica is one pod).
RESOURCES = ("cpu", "memory", "pods")
RESOURCE_LIMITS = ("max_total_cpu_cores", "max_total_memory_gb", "max_total_pods")
#: An amount of each of :data:`RESOURCES`; a room where ``None`` means no such budget.
Amounts = tuple[float, float, float]
Room = tuple[float | None, float | None, float | None]
_NO_ROOM: Room = (None, None, None)


def replica_resources(replicas: Iterable[Any]) -> Amounts:
    """CPU cores and memory GB that ``replicas`` hold on nodes (running allocations or placements; TPU
    replicas, on no node, none), and the pods they are (every replica): what a queue's resource budgets
    count."""
    cpu = mem = pods = 0.0
    for r in replicas:
        pods += 1
        if r.node is not None:
            cpu += r.cpu_cores
            mem += r.memory_gb
    return cpu, mem, pods


def _need_resources(replicas: Iterable[ReplicaAt]) -> Amounts:
    """CPU cores and memory GB of greedy's or CP-SAT's replicas on nodes (each takes its unit's need), and
    the pods they are."""
    cpu = mem = pods = 0.0
    for r in replicas:
        pods += 1
        if r.node is not None:
            cpu += r.unit.need.cpu
            mem += r.unit.need.mem
    return cpu, mem, pods


def _limits(source: Any) -> Room | None:
    """The resource limits ``source`` (``ml_limits`` or ``config.cohort``) states, or None for none."""
    out = tuple(None if getattr(source, f) is None else float(getattr(source, f)) for f in RESOURCE_LIMITS)
    return None if all(x is None for x in out) else out  # type: ignore[return-value]


def _room(limits: Room | None, used: Amounts, back: Amounts) -> Room:
    """Per resource, what a limit leaves after ``used``, plus what evictions give ``back`` (None: no
    limit)."""
    if limits is None:
        return _NO_ROOM
    return tuple(None if lim is None else lim - u + b for lim, u, b in zip(limits, used, back, strict=True))  # type: ignore[return-value]


def _plus(a: Amounts, b: Amounts) -> Amounts:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@dataclass
class Budgets:
    """Per-queue limits and what running jobs already use of them."""

    max_gpus: dict[str, float] = field(default_factory=dict)
    max_jobs: dict[str, int] = field(default_factory=dict)
    used_gpus: dict[str, float] = field(default_factory=dict)
    used_jobs: dict[str, int] = field(default_factory=dict)
    #: Running jobs' (queue, GPUs) by id, so that evictions give budget back.
    running: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: Running jobs' ranks by id: an eviction gives budget back only to jobs that outrank the victim.
    ranks: dict[str, int] = field(default_factory=dict)
    #: Resource budgets per queue (:data:`RESOURCES`: ``max_total_cpu_cores``, ``max_total_memory_gb``,
    #: ``max_total_pods``; None where it has none of one), what running jobs hold of them, and each running
    #: job's (queue, amounts) by id, so that evictions give them back.
    res_max: dict[str, Room] = field(default_factory=dict)
    res_used: dict[str, Amounts] = field(default_factory=dict)
    running_res: dict[str, tuple[str, Amounts]] = field(default_factory=dict)
    #: Cohorts' totals of them (``config.cohort``'s: a Kueue cohort's ``cpu``, ``memory`` and ``pods``),
    #: and each member queue's cohort (what its running jobs hold is in ``res_used`` and ``running_res``).
    cohort_res_max: dict[str, Room] = field(default_factory=dict)
    res_cohort_of: dict[str, str] = field(default_factory=dict)
    #: What each queue of such a cohort keeps of them and does not lend (``config.cohort.guaranteed_*``, a
    #: Kueue ``lendingLimit``), for the cohorts where one does: the cohort then counts each queue as
    #: holding at least that (:meth:`cohort_resource_room`).
    cohort_res_kept: dict[str, dict[str, Amounts]] = field(default_factory=dict)
    #: Trees of cohorts for them (Kueue hierarchical cohorts), by index into :data:`RESOURCES`: a tree's
    #: queues are in ``res_cohort_of`` under their own cohort, whose room the tree's rules give instead of
    #: a total (:meth:`cohort_resource_room`).
    res_trees: dict[int, CohortTree] = field(default_factory=dict)
    #: Per-flavor quotas, of each resource of :data:`~placer.solver.jobs.flavors.FLAVOR_RESOURCES` (GPUs,
    #: cores, GB, pods): (queue, resource, flavor) -> the queue's quota there and what its running jobs
    #: hold there; each running job's amounts per (resource, flavor) of its queue (by id: evictions give
    #: them back); per (queue, resource) the resource group whose flavors a node is counted under
    #: (:func:`~placer.solver.jobs.flavors.flavor_of`).
    flavor_max: dict[tuple[str, str, str], float] = field(default_factory=dict)
    flavor_used: dict[tuple[str, str, str], float] = field(default_factory=dict)
    running_flavor: dict[str, dict[tuple[str, str], float]] = field(default_factory=dict)
    flavor_queue: dict[str, str] = field(default_factory=dict)
    flavor_group: dict[tuple[str, str], FlavorGroup] = field(default_factory=dict)
    #: Cohorts' totals per flavor (``Flavor.cohort_max_*``: a Kueue cohort's queues lend each other quota
    #: flavor by flavor): (cohort, resource, flavor) -> the total and what the cohort's queues' running
    #: jobs hold there; each queue's cohort, for the queues whose flavors carry such totals.
    cohort_flavor_max: dict[tuple[str, str, str], float] = field(default_factory=dict)
    cohort_flavor_used: dict[tuple[str, str, str], float] = field(default_factory=dict)
    flavor_cohort: dict[str, str] = field(default_factory=dict)
    #: Trees of cohorts per (resource, flavor) (``Flavor.tree_quota``, ``CohortNode.flavor_quotas``): what
    #: their queues hold on the flavor's nodes follows the tree's rules (:meth:`flavor_left`).
    flavor_trees: dict[tuple[str, str], CohortTree] = field(default_factory=dict)
    #: Dollar budgets in money units per hour, by queue and by tenant, and what running jobs spend.
    max_cost: dict[str, int] = field(default_factory=dict)
    tenant_max_cost: dict[str, int] = field(default_factory=dict)
    used_cost: dict[str, int] = field(default_factory=dict)
    tenant_used_cost: dict[str, int] = field(default_factory=dict)
    #: Running jobs' (queue, tenant, money units) by id, for those under a dollar budget.
    running_cost: dict[str, tuple[str | None, str | None, int]] = field(default_factory=dict)
    #: Throttle groups of the batch: the smallest ``max_running`` its jobs state, and the group's running
    #: jobs.
    throttle_max: dict[str, int] = field(default_factory=dict)
    throttle_used: dict[str, int] = field(default_factory=dict)
    #: Groups of the batch with a GPU limit: the smallest ``max_gpus`` its jobs state, and the GPUs its
    #: running jobs hold.
    group_gpu_max: dict[str, float] = field(default_factory=dict)
    group_gpu_used: dict[str, float] = field(default_factory=dict)
    #: Licences the batch asks for (``Job.licenses``): the cluster's seats of each (0 for one it does not
    #: define), and the seats running jobs hold (evicted or not: a victim gives its seats back once it has
    #: stopped, which the next decision sees, not this one).
    license_max: dict[str, int] = field(default_factory=dict)
    license_used: dict[str, int] = field(default_factory=dict)
    #: Those of them the cluster defines (the others have no seat).
    license_defined: frozenset[str] = frozenset()
    #: Cohorts: each member queue's cohort, each cohort's GPU total, and what running jobs hold of it.
    cohort_of: dict[str, str] = field(default_factory=dict)
    cohort_max: dict[str, float] = field(default_factory=dict)
    cohort_used: dict[str, float] = field(default_factory=dict)
    #: Cohorts in a tree (Kueue hierarchical cohorts, or a flat cohort one of whose queues keeps GPUs;
    #: :class:`~placer.solver.cohorts.CohortTree`): their queues are not in ``cohort_of``, the tree's rules
    #: hold instead of one total.
    cohort_tree: CohortTree | None = None
    #: Running jobs whose eviction gives nothing back to their queue's budgets, and those whose eviction
    #: gives nothing back to their cohort's totals (``config.preemption``,
    #: :class:`~placer.solver.jobs.queues.QuotaPreemption`: a Kueue ClusterQueue that does not preempt for
    #: quota). Every method that takes ``evicted`` leaves them out (:meth:`credited`).
    no_queue_credit: set[str] = field(default_factory=set)
    no_cohort_credit: set[str] = field(default_factory=set)

    @staticmethod
    def of(
        queues: Mapping[str, QueueConfig],
        running: Iterable[RunningJob],
        *,
        cluster: Cluster | None = None,
        prices: PriceCatalog | None = None,
        jobs: Iterable[Job] = (),
    ) -> Budgets:
        """The budgets of ``queues`` (and of the tenants ``prices.budgets`` names) and what ``running``
        jobs use of them; dollar budgets need the ``cluster`` to price running jobs' allocations. The
        throttles of ``jobs`` (the batch) too."""
        jobs = list(jobs)
        most_jobs, most_gpus = group_limits(jobs)
        b = Budgets(throttle_max=most_jobs, group_gpu_max=most_gpus)
        asked = {name for j in jobs for name in j.licenses}
        if asked:
            running = list(running)
            pools = cluster.licenses if cluster is not None else {}
            b.license_max = {name: pools.get(name, 0) for name in sorted(asked)}
            b.license_defined = frozenset(asked & set(pools))
            for rj in running:
                for name, seats in rj.licenses.items():
                    if name in b.license_max:
                        b.license_used[name] = b.license_used.get(name, 0) + seats
        for name, qc in queues.items():
            lim = qc.config.ml_limits
            if lim.max_total_gpus is not None:
                b.max_gpus[name] = float(lim.max_total_gpus)
            if lim.max_concurrent_gpu_jobs is not None:
                b.max_jobs[name] = lim.max_concurrent_gpu_jobs
            own = _limits(lim)
            if own is not None:
                b.res_max[name] = own
            for resource, group in quota_groups(qc.config.flavor_groups).items():
                b.flavor_group[(name, resource)] = group
                attr = FLAVOR_RESOURCES[resource][0]
                for f in group.flavors:
                    if (most := getattr(f, attr)) is not None:
                        b.flavor_max[(name, resource, f.name)] = float(most)
                    total = getattr(f, f"cohort_{attr}")
                    if total is not None and qc.config.cohort is not None:
                        b.cohort_flavor_max[(qc.config.cohort.name, resource, f.name)] = float(total)
                        b.flavor_cohort[name] = qc.config.cohort.name
            if lim.max_cost_per_hour is not None:
                b.max_cost[name] = to_units(lim.max_cost_per_hour)
            if qc.config.cohort is not None:
                c = qc.config.cohort
                b.cohort_of[name] = c.name
                b.cohort_max[c.name] = float(c.max_total_gpus)
                totals = _limits(c)
                if totals is not None:
                    b.res_cohort_of[name] = c.name
                    b.cohort_res_max[c.name] = totals
                    kept = tuple(float(getattr(c, f)) for f in GUARANTEED_FIELDS)
                    if any(kept):
                        b.cohort_res_kept.setdefault(c.name, {})[name] = kept  # type: ignore[assignment]
        b.cohort_tree = CohortTree.of(queues)
        for q in b.cohort_tree.queues if b.cohort_tree is not None else ():
            b.cohort_max.pop(b.cohort_of.pop(q), None)
        for resource, flavor in CohortTree.flavored(queues):
            on_flavor = CohortTree.of(queues, resource, flavor)
            if on_flavor is not None:
                b.flavor_trees[(resource, flavor)] = on_flavor
        for at, resource in enumerate(RESOURCES):
            tree = CohortTree.of(queues, resource)
            if tree is not None:
                b.res_trees[at] = tree
                for q, (cohort_name, _, _) in tree.queues.items():
                    b.res_cohort_of.setdefault(q, cohort_name)
        if prices is not None:
            b.tenant_max_cost = {t: to_units(v) for t, v in prices.budgets.tenants.items()}
        if not b.active:
            return b  # no budgets: nothing to count (10,000 running jobs would cost a tenth of a second)
        queued = bool(
            b.max_gpus
            or b.max_jobs
            or b.max_cost
            or b.tenant_max_cost
            or b.cohort_max
            or b.cohort_tree
            or b.resources
            or b.flavor_max
            or b.cohort_flavor_max
            or b.flavor_trees
        )
        grouped = bool(b.throttle_max or b.group_gpu_max)
        closed_queues, shut_to_cohort = _no_credit(queues)
        for rj in running:
            if grouped and (rj.throttle_group is not None or rj.limit_groups):
                for g in running_groups(rj):
                    if g in b.throttle_max:
                        b.throttle_used[g] = b.throttle_used.get(g, 0) + 1
                    if g in b.group_gpu_max:
                        b.group_gpu_used[g] = b.group_gpu_used.get(g, 0.0) + running_gpus(rj)
            if not queued:
                continue  # throttles alone: nothing else to count
            b.ranks[rj.job] = rank(rj.priority_class, rj.priority)
            if rj.queue in closed_queues:
                b.no_queue_credit.add(rj.job)
            if shut_to_cohort(rj):
                b.no_cohort_credit.add(rj.job)
            if rj.queue is not None and b.counts_resources(rj.queue):
                held = replica_resources(rj.replicas)
                b.running_res[rj.job] = (rj.queue, held)
                b.res_used[rj.queue] = _plus(b.res_used.get(rj.queue, (0.0, 0.0, 0.0)), held)
            gpus = running_gpus(rj)
            if b.flavored(rj.queue) and rj.queue is not None and cluster is not None:
                per = b.flavors_of(
                    rj.queue,
                    [(cluster.node(r.node).labels, _replica_amounts(r)) for r in rj.replicas if r.node],
                )
                if per:
                    b.running_flavor[rj.job], b.flavor_queue[rj.job] = per, rj.queue
                lender = b.flavor_cohort.get(rj.queue, "")
                for (resource, flavor), amount in per.items():
                    key = (rj.queue, resource, flavor)
                    b.flavor_used[key] = b.flavor_used.get(key, 0.0) + amount
                    shared = (lender, resource, flavor)
                    if shared in b.cohort_flavor_max:
                        b.cohort_flavor_used[shared] = b.cohort_flavor_used.get(shared, 0.0) + amount
            if rj.queue is not None and gpus > 0:
                b.running[rj.job] = (rj.queue, gpus)
                b.used_gpus[rj.queue] = b.used_gpus.get(rj.queue, 0.0) + gpus
                b.used_jobs[rj.queue] = b.used_jobs.get(rj.queue, 0) + 1
                if rj.queue in b.cohort_of:
                    name = b.cohort_of[rj.queue]
                    b.cohort_used[name] = b.cohort_used.get(name, 0.0) + gpus
            if cluster is None or prices is None or not b.costs(rj.queue, rj.tenant):
                continue
            units = running_units(cluster, rj, prices)
            b.running_cost[rj.job] = (rj.queue, rj.tenant, units)
            if rj.queue in b.max_cost:
                b.used_cost[rj.queue] = b.used_cost.get(rj.queue, 0) + units
            if rj.tenant in b.tenant_max_cost:
                b.tenant_used_cost[rj.tenant] = b.tenant_used_cost.get(rj.tenant, 0) + units
        return b

    def credited(self, evicted: Iterable[str], cohort: bool = False) -> list[str]:
        """The ``evicted`` running jobs whose room comes back: to their queue's budgets, or with ``cohort``
        to their cohort's totals (:attr:`no_queue_credit`, :attr:`no_cohort_credit`)."""
        closed = self.no_cohort_credit if cohort else self.no_queue_credit
        return [job for job in evicted if job not in closed] if closed else list(evicted)

    @property
    def active(self) -> bool:
        """Whether any queue (or tenant) has a budget, or a job of the batch a throttle, at all."""
        return bool(
            self.max_gpus
            or self.max_jobs
            or self.max_cost
            or self.tenant_max_cost
            or self.throttle_max
            or self.group_gpu_max
            or self.license_max
            or self.cohort_max
            or self.cohort_tree
            or self.resources
            or self.flavor_max
            or self.cohort_flavor_max
            or self.flavor_trees
        )

    @property
    def flavor_limits(self) -> bool:
        """Whether any queue has a per-flavor quota, or any cohort a total per flavor."""
        return bool(self.flavor_max or self.cohort_flavor_max or self.flavor_trees)

    def flavored(self, queue: str | None) -> bool:
        """Whether ``queue`` has a per-flavor quota of some resource."""
        return any((queue or "", r) in self.flavor_group for r in FLAVOR_RESOURCES)

    def flavor_at(self, queue: str | None, labels: Mapping[str, str], resource: str = "gpus") -> str | None:
        """The flavor with a quota of ``resource`` of ``queue`` that a node with ``labels`` is counted under
        (None: no such quota there)."""
        group = self.flavor_group.get((queue or "", resource))
        f = None if group is None else flavor_of(labels, group)
        if f is None:
            return None
        if (queue, resource, f.name) in self.flavor_max:
            return f.name
        cohort = self.flavor_cohort.get(queue or "")
        if (cohort, resource, f.name) in self.cohort_flavor_max:
            return f.name
        tree = self.flavor_trees.get((resource, f.name))
        return f.name if tree is not None and (queue or "") in tree.queues else None

    def flavors_of(
        self, queue: str, placed: Iterable[tuple[Mapping[str, str], tuple[float, ...]]]
    ) -> dict[tuple[str, str], float]:
        """Amounts per (resource, flavor) with a quota of ``queue``, of replicas given as (node labels,
        their amounts of each resource of :data:`~placer.solver.jobs.flavors.FLAVOR_RESOURCES`)."""
        out: dict[tuple[str, str], float] = {}
        for labels, amounts in placed:
            for resource, amount in zip(FLAVOR_RESOURCES, amounts, strict=True):
                if amount > 0 and (f := self.flavor_at(queue, labels, resource)) is not None:
                    out[(resource, f)] = out.get((resource, f), 0.0) + amount
        return out

    def flavor_keys(self, queue: str) -> set[tuple[str, str]]:
        """The (resource, flavor) pairs on which ``queue`` has a quota of its own or its cohort a total."""
        cohort = self.flavor_cohort.get(queue)
        own = {(r, f) for q, r, f in self.flavor_max if q == queue}
        trees = {key for key, tree in self.flavor_trees.items() if queue in tree.queues}
        return own | trees | {(r, f) for c, r, f in self.cohort_flavor_max if c == cohort}

    def flavor_left(
        self,
        queue: str,
        resource: str,
        flavor: str,
        evicted: Iterable[str] = (),
        placed: Mapping[tuple[str, str, str], float] | None = None,
        *,
        own_only: bool = False,
    ) -> float:
        """What ``queue`` may still add of ``resource`` on ``flavor``'s nodes after ``placed`` (this
        decision's amounts by (queue, resource, flavor)): the least of its own quota's room
        (:meth:`flavor_room`), its cohort's on the flavor (:meth:`cohort_flavor_room`) and what a tree of
        cohorts' rules leave it there (:attr:`flavor_trees`) — the last two not with ``own_only`` — each
        less what was placed against it; infinite when none holds."""
        placed = placed or {}
        rooms = []
        if (queue, resource, flavor) in self.flavor_max:
            own = self.flavor_room(queue, resource, flavor, evicted)
            rooms.append(own - placed.get((queue, resource, flavor), 0.0))
        cohort = None if own_only else self.flavor_cohort.get(queue)
        if cohort is not None and (cohort, resource, flavor) in self.cohort_flavor_max:
            taken = sum(
                a
                for (q, r, f), a in placed.items()
                if r == resource and f == flavor and self.flavor_cohort.get(q) == cohort
            )
            rooms.append(self.cohort_flavor_room(cohort, resource, flavor, evicted) - taken)
        tree = None if own_only else self.flavor_trees.get((resource, flavor))
        if tree is not None and queue in tree.queues:  # a tree of cohorts on the flavor: its rules' room
            held = {
                q: self.flavor_used.get((q, resource, flavor), 0.0) + placed.get((q, resource, flavor), 0.0)
                for q in tree.queues
            }
            for job in self.credited(evicted, cohort=True):
                q = self.flavor_queue.get(job, "")
                if q in held:
                    held[q] -= self.running_flavor.get(job, {}).get((resource, flavor), 0.0)
            rooms.append(tree.room(queue, held))
        return min(rooms) if rooms else math.inf

    def cohort_flavor_room(
        self, cohort: str, resource: str, flavor: str, evicted: Iterable[str] = ()
    ) -> float:
        """What ``cohort``'s queues may still add of ``resource`` on ``flavor``'s nodes together: its total
        there less what their running jobs hold, plus what the evicted ones that give the cohort its room
        back (:meth:`credited`) hold there."""
        key = (cohort, resource, flavor)
        back = sum(
            self.cohort_flavor_back(cohort, resource, flavor, self.credited(evicted, cohort=True)).values()
        )
        return self.cohort_flavor_max[key] - self.cohort_flavor_used.get(key, 0.0) + back

    def cohort_flavor_back(
        self, cohort: str, resource: str, flavor: str, evicted: Iterable[str]
    ) -> dict[str, float]:
        """What each of the running jobs ``evicted`` (credited already, cohort-wise) of ``cohort``'s queues
        holds of ``resource`` on ``flavor``'s nodes, by id (those that hold nothing there left out)."""
        return {
            job: held
            for job in evicted
            if self.flavor_cohort.get(self.flavor_queue.get(job, "")) == cohort
            and (held := self.running_flavor.get(job, {}).get((resource, flavor)))
        }

    def flavor_room(self, queue: str, resource: str, flavor: str, evicted: Iterable[str] = ()) -> float:
        """What ``queue`` may still add of ``resource`` on ``flavor``'s nodes by its own quota there: the
        quota less what running jobs hold, plus what evicted ones give back."""
        back = sum(self.flavor_back(queue, resource, flavor, self.credited(evicted)).values())
        key = (queue, resource, flavor)
        return self.flavor_max[key] - self.flavor_used.get(key, 0.0) + back

    def flavor_back(self, queue: str, resource: str, flavor: str, evicted: Iterable[str]) -> dict[str, float]:
        """What each of the running jobs ``evicted`` (credited already: :meth:`credited`) holds of
        ``resource`` on ``flavor``'s nodes for ``queue``, by id (those that hold nothing there left out)."""
        key = (resource, flavor)
        return {
            job: held
            for job in evicted
            if self.flavor_queue.get(job) == queue and (held := self.running_flavor.get(job, {}).get(key))
        }

    @property
    def resources(self) -> bool:
        """Whether any queue (or cohort, or tree of cohorts) has a resource budget (CPU, memory, pods)."""
        return bool(self.res_max or self.res_cohort_of)

    def counts_resources(self, queue: str | None) -> bool:
        """Whether the resources of ``queue``'s jobs count against a budget: its own or its cohort's."""
        return queue is not None and (queue in self.res_max or queue in self.res_cohort_of)

    def _back(self, evicted: Iterable[str], queue: str) -> Amounts:
        """What the evicted running jobs of ``queue`` that give its budgets their room back hold."""
        back = (0.0, 0.0, 0.0)
        for job in self.credited(evicted):
            held = self.running_res.get(job)
            if held is not None and held[0] == queue:
                back = _plus(back, held[1])
        return back

    def cohort_resource_room(
        self,
        cohort: str,
        evicted: Iterable[str] = (),
        placed: Mapping[str, Amounts] | None = None,
        queue: str | None = None,
    ) -> Room:
        """Per resource (:data:`RESOURCES`), what ``queue`` of ``cohort`` may still add, or None where the
        cohort has no such total: the total less what its queues hold — running jobs, less those
        ``evicted``, plus what this decision ``placed`` per queue — where each queue counts at least what
        it keeps (:attr:`cohort_res_kept`; Kueue's ``lendingLimit``: the part of its quota the others never
        borrow). Within what it keeps a queue adds without touching the others' room, so its own unused
        kept part is its room too. Negative when the cohort is over already (quotas lowered) and the
        queue's kept part is used up: nothing fits. For a resource whose cohorts make a tree that ``queue``
        is in (:attr:`res_trees`), what the tree's rules leave it, every queue of the tree counted
        (:meth:`~placer.solver.cohorts.CohortTree.room`).

        >>> b = Budgets(cohort_res_max={"c": (10.0, None, None)}, res_cohort_of={"a": "c", "b": "c"},
        ...             res_used={"a": (2.0, 0.0, 1.0)}, cohort_res_kept={"c": {"b": (6.0, 0.0, 0.0)}})
        >>> b.cohort_resource_room("c", queue="a"), b.cohort_resource_room("c", queue="b")
        ((2.0, None, None), (8.0, None, None))
        """
        limits = self.cohort_res_max.get(cohort, _NO_ROOM)
        trees = {r: t for r, t in self.res_trees.items() if (queue or "") in t.queues}
        if not trees and limits == _NO_ROOM:
            return _NO_ROOM
        kept = self.cohort_res_kept.get(cohort, {})
        flat = [q for q, c in self.res_cohort_of.items() if c == cohort]
        members = {*flat, *(q for t in trees.values() for q in t.queues)}
        zero = (0.0, 0.0, 0.0)
        held = {q: _plus(self.res_used.get(q, zero), (placed or {}).get(q, zero)) for q in members}
        for job in self.credited(evicted, cohort=True):
            was = self.running_res.get(job)
            if was is not None and was[0] in held:
                held[was[0]] = tuple(h - x for h, x in zip(held[was[0]], was[1], strict=True))  # type: ignore[assignment]
        out: list[float | None] = []
        for r, limit in enumerate(limits):
            if r in trees:  # a tree of cohorts: what its rules leave the queue (CohortTree.room)
                tree = trees[r]
                out.append(tree.room(queue or "", {q: held[q][r] for q in tree.queues}))
                continue
            if limit is None:
                out.append(None)
                continue
            own = held.get(queue or "", zero)[r]
            keeps = kept.get(queue or "", zero)[r]
            others = sum(max(held[q][r], kept.get(q, zero)[r]) for q in flat if q != queue)
            over = others + max(own, keeps) > limit + 1e-9
            out.append(limit - others - (max(own, keeps) if over else own))
        return tuple(out)  # type: ignore[return-value]

    def resource_room(self, queue: str | None, evicted: Iterable[str] = ()) -> Room:
        """Per resource (:data:`RESOURCES`), what the queue may still add, or None where it has no such
        budget; evicted running jobs give theirs back."""
        if queue is None or queue not in self.res_max:
            return _NO_ROOM
        back = self._back(evicted, queue)
        return _room(self.res_max[queue], self.res_used.get(queue, (0.0, 0.0, 0.0)), back)

    def throttle_rooms(self, job: Job) -> dict[str, int]:
        """Per group of ``job`` with a job limit, how many more of its jobs may start (empty: none)."""
        return {
            g: self.throttle_max[g] - self.throttle_used.get(g, 0)
            for g, most, _ in job_groups(job)
            if most is not None and g in self.throttle_max
        }

    def license_rooms(self, job: Job) -> dict[str, int]:
        """Seats of each licence ``job`` asks for that running jobs leave (before this decision starts
        anything)."""
        return {n: self.license_max.get(n, 0) - self.license_used.get(n, 0) for n in job.licenses}

    def gpu_rooms(self, job: Job) -> dict[str, float]:
        """Per group of ``job`` with a GPU limit, how many more GPUs its jobs may take (empty: none)."""
        return {
            g: self.group_gpu_max[g] - self.group_gpu_used.get(g, 0.0)
            for g, _, gpus in job_groups(job)
            if gpus is not None and g in self.group_gpu_max
        }

    @property
    def money(self) -> bool:
        """Whether any dollar budget is set (only then are placements priced for budgets)."""
        return bool(self.max_cost or self.tenant_max_cost)

    def costs(self, queue: str | None, tenant: str | None) -> bool:
        """Whether a job of this queue and tenant is under a dollar budget."""
        return (queue is not None and queue in self.max_cost) or (
            tenant is not None and tenant in self.tenant_max_cost
        )

    def cost_room(
        self, queue: str | None, tenant: str | None, evicted: Iterable[str] = ()
    ) -> tuple[int | None, int | None]:
        """Money units per hour the queue and the tenant may still add (None where there is no dollar
        budget); evicted running jobs give their spend back."""
        q_room = None
        if queue is not None and queue in self.max_cost:
            q_room = self.max_cost[queue] - self.used_cost.get(queue, 0)
        t_room = None
        if tenant is not None and tenant in self.tenant_max_cost:
            t_room = self.tenant_max_cost[tenant] - self.tenant_used_cost.get(tenant, 0)
        if q_room is None and t_room is None:
            return (None, None)
        for job in evicted:
            rq, rt, units = self.running_cost.get(job, (None, None, 0))
            if q_room is not None and rq == queue and job not in self.no_queue_credit:  # credited()'s rule
                q_room += units
            if t_room is not None and rt == tenant:
                t_room += units
        return (q_room, t_room)

    def room(self, queue: str | None, evicted: Iterable[str] = ()) -> tuple[float | None, int | None]:
        """(GPUs, GPU jobs) the queue may still add, or None where it has no limit; evicted running jobs
        give their share back."""
        if queue is None:
            return (None, None)
        back_gpus = 0.0
        back_jobs = 0
        for job in self.credited(evicted):
            q, g = self.running.get(job, (None, 0.0))
            if q == queue:
                back_gpus += g
                back_jobs += 1
        gpus = None
        if queue in self.max_gpus:
            gpus = self.max_gpus[queue] - self.used_gpus.get(queue, 0.0) + back_gpus
        jobs = None
        if queue in self.max_jobs:
            jobs = self.max_jobs[queue] - self.used_jobs.get(queue, 0) + back_jobs
        return (gpus, jobs)


def cohort_room(
    budgets: Budgets,
    queue: str | None,
    evicted: Iterable[str] = (),
    placed: Mapping[str, float] | None = None,
) -> float | None:
    """GPUs ``queue`` may still add within its cohort (None: the queue is in no cohort): the cohort's total
    less what its queues hold, or for a cohort tree what the tree's rules leave
    (:meth:`~placer.solver.cohorts.CohortTree.room`); evicted running jobs of the cohort's queues give
    theirs back. ``placed``: GPUs this decision placed per queue (the answer so far)."""
    evicted = budgets.credited(evicted, cohort=True)
    tree = budgets.cohort_tree
    if tree is not None and (queue or "") in tree.queues:
        held = {q: budgets.used_gpus.get(q, 0.0) + (placed or {}).get(q, 0.0) for q in tree.queues}
        for job in evicted:
            q, g = budgets.running.get(job, (None, 0.0))
            if q in held:
                held[q] -= g
        return tree.room(queue or "", held)
    cohort = budgets.cohort_of.get(queue or "")
    if cohort is None:
        return None
    back = 0.0
    for job in evicted:
        q, g = budgets.running.get(job, (None, 0.0))
        if q is not None and budgets.cohort_of.get(q) == cohort:
            back += g
    added = sum(g for q, g in (placed or {}).items() if budgets.cohort_of.get(q) == cohort)
    return budgets.cohort_max[cohort] - budgets.cohort_used.get(cohort, 0.0) + back - added


def remaining_cohort_room(
    queue: str | None, assignment: object, budgets: Budgets, plans: list, below: int | None = None
) -> float | None:
    """The cohort's GPU room left after an answer, as :func:`remaining_room` counts a queue's."""
    tree = budgets.cohort_tree
    cohort = budgets.cohort_of.get(queue or "")
    if cohort is None and not (tree is not None and (queue or "") in tree.queues):
        return None
    evicted = list(getattr(assignment, "evictions", {}))
    if below is not None:
        evicted = [v for v in evicted if budgets.ranks.get(v, below) < below]
    placed: dict[str, float] = {}
    for i, reps in getattr(assignment, "placed", {}).items():
        q = plans[i].job.queue or ""
        if (cohort is not None and budgets.cohort_of.get(q) == cohort) or (
            tree is not None and q in tree.queues
        ):
            gpus = sum(r.unit.need.gpus + r.unit.need.milli / 1000 for r in reps if r.node is not None)
            placed[q] = placed.get(q, 0.0) + gpus
    return cohort_room(budgets, queue, evicted, placed)


def remaining_room(
    queue: str | None, assignment: object, budgets: Budgets, plans: list, below: int | None = None
) -> tuple[float | None, int | None]:
    """A queue's budget room left after an answer: its limits, minus running jobs (not evicted), minus what
    the answer placed in that queue. With ``below`` (a job's rank), only evictions of jobs ranked below it
    give room back, as for that job (OJS ML §8)."""
    evicted = list(getattr(assignment, "evictions", {}))
    if below is not None:
        evicted = [v for v in evicted if budgets.ranks.get(v, below) < below]
    room_gpus, room_jobs = budgets.room(queue, evicted)
    for i, reps in getattr(assignment, "placed", {}).items():
        if plans[i].job.queue != queue:
            continue
        gpus = sum(r.unit.need.gpus + r.unit.need.milli / 1000 for r in reps if r.node is not None)
        if gpus <= 0:
            continue
        if room_gpus is not None:
            room_gpus -= gpus
        if room_jobs is not None:
            room_jobs -= 1
    return room_gpus, room_jobs


def remaining_resource_room(
    queue: str | None,
    assignment: object,
    budgets: Budgets,
    plans: list,
    below: int | None = None,
    *,
    cohort: str | None = None,
) -> Room:
    """A queue's room per resource (:data:`RESOURCES`) left after an answer, as :func:`remaining_room`
    counts its GPUs; with ``cohort``, that cohort's room (what all its queues' jobs left of its totals)."""
    evicted = list(getattr(assignment, "evictions", {}))
    if below is not None:
        evicted = [v for v in evicted if budgets.ranks.get(v, below) < below]
    placed: dict[str, Amounts] = {}
    for i, reps in getattr(assignment, "placed", {}).items():
        other = plans[i].job.queue or ""
        # A cohort's room reads every queue of the cohort, or of its trees: any queue with a cohort.
        if (other == queue) if cohort is None else (other in budgets.res_cohort_of):
            placed[other] = _plus(placed.get(other, (0.0, 0.0, 0.0)), _need_resources(reps))
    if cohort is not None:
        return budgets.cohort_resource_room(cohort, evicted, placed, queue)
    room = budgets.resource_room(queue, evicted)
    taken = placed.get(queue or "", (0.0, 0.0, 0.0))
    return tuple(None if r is None else r - t for r, t in zip(room, taken, strict=True))  # type: ignore[return-value]


def remaining_cost_room(
    job: Job, assignment: object, budgets: Budgets, plans: list, pricing: Pricing
) -> tuple[int | None, int | None]:
    """Money units per hour the job's queue and tenant have left after an answer (None where there is no
    dollar budget): their limits, minus running jobs (not evicted), minus what the answer placed there."""
    q_room, t_room = budgets.cost_room(job.queue, job.tenant, getattr(assignment, "evictions", {}))
    if q_room is None and t_room is None:
        return (None, None)
    for i, reps in getattr(assignment, "placed", {}).items():
        other = plans[i].job
        in_queue = q_room is not None and other.queue == job.queue
        in_tenant = t_room is not None and other.tenant == job.tenant
        if not (in_queue or in_tenant):
            continue
        units = pricing.replicas(reps)
        if in_queue:
            q_room -= units  # type: ignore[operator]
        if in_tenant:
            t_room -= units  # type: ignore[operator]
    return (q_room, t_room)


# Greedy's bookkeeping: what its placements so far took from each budget (State.queue_use, cost_use).


def _gpus_of(replicas: list[ReplicaAt]) -> float:
    return sum(r.unit.need.gpus + r.unit.need.milli / 1000 for r in replicas if r.node is not None)


def within_throttle(plan: JobPlan, state: State, budgets: Budgets | None) -> bool:
    """Whether one more job of each of the plan's groups may start, its GPUs fit each group's GPU limit,
    and the seats of each licence it asks for are left (what greedy asks before it searches: these count
    jobs, GPUs and seats, not where they go)."""
    if budgets is None or (
        not budgets.throttle_max and not budgets.group_gpu_max and not budgets.license_max
    ):
        return True
    job = plan.job
    if job.licenses and any(
        state.license_use.get(n, 0) + job.licenses[n] > room for n, room in budgets.license_rooms(job).items()
    ):
        return False
    if job.throttle is None and not job.limits:
        return True
    if any(state.throttle_use.get(g, 0) >= room for g, room in budgets.throttle_rooms(job).items()):
        return False
    gpus = job.total_gpu_milli / 1000
    return all(
        state.group_gpu_use.get(g, 0.0) + gpus <= room + 1e-9 for g, room in budgets.gpu_rooms(job).items()
    )


def within_budget(plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets | None) -> bool:
    """Whether placing ``replicas`` keeps the job's queue within its GPU budget (OJS ML §10.3) and its
    queue and tenant within their dollar budgets (priced where the replicas are, as the checker will)."""
    if budgets is None or not budgets.active:
        return True
    queue = plan.job.queue
    gpus = _gpus_of(replicas)
    if gpus > 0:
        room_gpus, room_jobs = budgets.room(queue, _evicted_below(plan, state))
        added_gpus, added_jobs = state.queue_use.get(queue or "", (0.0, 0))
        if room_gpus is not None and added_gpus + gpus > room_gpus + 1e-9:
            return False
        if room_jobs is not None and added_jobs + 1 > room_jobs:
            return False
        placed = {q: g for q, (g, _) in state.queue_use.items()} if budgets.cohort_tree is not None else None
        c_room = cohort_room(budgets, queue, _evicted_below(plan, state), placed)
        c_used = (
            0.0 if placed is not None else state.cohort_use.get(budgets.cohort_of.get(queue or "", ""), 0.0)
        )
        if c_room is not None and c_used + gpus > c_room + 1e-9:
            return False
        if budgets.group_gpu_max and any(  # an elastic job's GPUs are known only where it is placed
            state.group_gpu_use.get(g, 0.0) + gpus > room + 1e-9
            for g, room in budgets.gpu_rooms(plan.job).items()
        ):
            return False
    if budgets.resources and not _within_resources(plan, replicas, state, budgets):
        return False
    if budgets.flavor_limits and not _within_flavors(plan, replicas, state, budgets):
        return False
    units = budget_cost(plan, replicas, state, budgets)
    if not units:
        return True  # not under a dollar budget, or adds nothing to it
    q_left, t_left = cost_left(plan, state, budgets)
    return (q_left is None or units <= q_left) and (t_left is None or units <= t_left)


def placed_flavors(
    queue: str, replicas: list[ReplicaAt], snap: Snapshot, budgets: Budgets
) -> dict[tuple[str, str], float]:
    """Amounts per (resource, flavor) with a quota of ``queue``, of greedy's or CP-SAT's ``replicas`` (node
    indices into ``snap``)."""
    return budgets.flavors_of(
        queue,
        (
            (snap.nodes[r.node].node.labels, flavor_amounts(r.unit.need))
            for r in replicas
            if r.node is not None
        ),
    )


def flavor_off(plan: JobPlan, state: State, budgets: Budgets | None) -> np.ndarray | None:
    """The nodes the job may not use because its queue has less quota left of some resource on their
    flavor than its smallest replica takes, even if every running job of the queue it outranks there were
    evicted (greedy's node choice keeps off them, so it looks for a flavor with room rather than finding
    out after choosing; :func:`within_budget` still checks the replicas chosen exactly); None when no
    flavor of its queue is that full."""
    queue = plan.job.queue or ""
    if budgets is None or not budgets.flavored(queue):
        return None
    needs = [flavor_amounts(u.need) for u in plan.units if u.tpu is None]
    if not needs:
        return None
    least = dict(zip(FLAVOR_RESOURCES, map(min, zip(*needs, strict=True)), strict=True))
    mine = evict_rank(plan.job)
    evicted = [j for j in budgets.running_flavor if budgets.ranks.get(j, mine) < mine]
    full = {
        (r, f)
        for r, f in budgets.flavor_keys(queue)
        if least[r] > 0 and least[r] > budgets.flavor_left(queue, r, f, evicted, state.flavor_use) + 1e-9
    }
    return flavor_nodes(queue, full, state, budgets) if full else None


def _within_flavors(plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets) -> bool:
    """Whether ``replicas`` keep the job's queue within its quota of each resource on each flavor they
    use."""
    return not over_flavors(plan, replicas, state, budgets)


def over_flavors(
    plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets | None
) -> set[tuple[str, str]]:
    """The (resource, flavor) quotas of the job's queue that ``replicas`` take it over (empty when none)."""
    queue = plan.job.queue or ""
    if budgets is None or not budgets.flavored(queue):
        return set()
    evicted = _evicted_below(plan, state)
    return {
        (r, f)
        for (r, f), amount in placed_flavors(queue, replicas, state.snap, budgets).items()
        if amount > budgets.flavor_left(queue, r, f, evicted, state.flavor_use) + 1e-9
    }


def flavor_nodes(queue: str, kinds: Iterable[tuple[str, str]], state: State, budgets: Budgets) -> np.ndarray:
    """The nodes counted under any of the (resource, flavor) quotas ``kinds`` of ``queue``."""
    chosen = set(kinds)
    resources = sorted({r for r, _ in chosen})
    return np.array(
        [
            any((r, budgets.flavor_at(queue, v.node.labels, r)) in chosen for r in resources)
            for v in state.snap.nodes
        ],
        dtype=bool,
    )


def _within_resources(plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets) -> bool:
    """Whether ``replicas`` keep the job's queue, and the queue's cohort, within their resource budgets
    (CPU, memory, pods)."""
    queue = plan.job.queue
    if not budgets.counts_resources(queue):
        return True
    evicted = _evicted_below(plan, state)
    need = _need_resources(replicas)
    checks = [(budgets.resource_room(queue, evicted), state.queue_res_use.get(queue or "", (0.0, 0.0, 0.0)))]
    cohort = budgets.res_cohort_of.get(queue or "")
    if cohort is not None:  # the room left after what greedy placed so far, in every queue of the cohort
        room = budgets.cohort_resource_room(cohort, evicted, state.queue_res_use, queue)
        checks.append((room, (0.0, 0.0, 0.0)))
    return all(
        room is None or used + n <= room + 1e-9
        for rooms, added in checks
        for room, used, n in zip(rooms, added, need, strict=True)
    )


def _evicted_below(plan: JobPlan, state: State) -> list[str]:
    """The evictions whose budget this job may use: those of jobs it outranks. An eviction is for strictly
    higher-priority work (OJS ML §8), budget room included, so a job never runs on room freed by evicting
    its equals, and never for a job that does not preempt (the CP-SAT model has the same rule per priority
    level, ``_within_by_rank``)."""
    mine = evict_rank(plan.job)
    return [vid for vid, rank in state.evicted.items() if rank < mine]


def budget_cost(
    plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets | None
) -> int | None:
    """Money units per hour of ``replicas`` when the job is under a dollar budget, else None."""
    if budgets is None or state.pricing is None or not budgets.costs(plan.job.queue, plan.job.tenant):
        return None
    return state.pricing.replicas(replicas)


def cost_left(plan: JobPlan, state: State, budgets: Budgets | None) -> tuple[int | None, int | None]:
    """Money units per hour the job's queue and tenant have left now (evictions tried for it included);
    None where there is no dollar budget."""
    if budgets is None:
        return (None, None)
    queue, tenant = plan.job.queue, plan.job.tenant
    q_room, t_room = budgets.cost_room(queue, tenant, _evicted_below(plan, state))
    if q_room is not None:
        q_room -= state.cost_use.get(queue or "", 0)
    if t_room is not None:
        t_room -= state.tenant_cost_use.get(tenant or "", 0)
    return (q_room, t_room)


def charge_budget(
    plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets | None = None
) -> None:
    """Count a committed placement against its queue's GPU, CPU and memory budgets, its queue's and
    tenant's dollar budgets, and its groups (throttle, group limits)."""
    gpus = _gpus_of(replicas)
    for name, seats in plan.job.licenses.items():
        state.license_use[name] = state.license_use.get(name, 0) + seats
    for g, most, max_gpus in job_groups(plan.job):
        if most is not None:
            state.throttle_use[g] = state.throttle_use.get(g, 0) + 1
        if max_gpus is not None:
            state.group_gpu_use[g] = state.group_gpu_use.get(g, 0.0) + gpus
    if gpus > 0 and plan.job.queue is not None:
        used, jobs = state.queue_use.get(plan.job.queue, (0.0, 0))
        state.queue_use[plan.job.queue] = (used + gpus, jobs + 1)
        cohort = budgets.cohort_of.get(plan.job.queue) if budgets is not None else None
        if cohort is not None:
            state.cohort_use[cohort] = state.cohort_use.get(cohort, 0.0) + gpus
    queue = plan.job.queue
    if budgets is not None and queue is not None and budgets.flavored(queue):
        for (resource, flavor), amount in placed_flavors(queue, replicas, state.snap, budgets).items():
            key = (queue, resource, flavor)
            state.flavor_use[key] = state.flavor_use.get(key, 0.0) + amount
    if budgets is not None and queue is not None and budgets.counts_resources(queue):
        state.queue_res_use[queue] = _plus(
            state.queue_res_use.get(queue, (0.0, 0.0, 0.0)), _need_resources(replicas)
        )
    units = budget_cost(plan, replicas, state, budgets)
    if units is not None:
        queue, tenant = plan.job.queue or "", plan.job.tenant or ""
        state.cost_use[queue] = state.cost_use.get(queue, 0) + units
        state.tenant_cost_use[tenant] = state.tenant_cost_use.get(tenant, 0) + units
