"""A queue's node flavors (Kueue ``ResourceFlavor``s): which nodes its jobs may use, and the tolerations
they get there.

Why: with Kueue, a ClusterQueue's quota is given per *flavor*, and a flavor is a set of nodes — its
``nodeLabels`` — that may carry taints (``nodeTaints``) and that gives admitted pods ``tolerations``. When
Kueue admits a workload to a flavor, it adds the flavor's node labels to the pods' node selector and its
tolerations to their tolerations. So a pod of a queue whose GPU flavor is ``h100`` (``nodeLabels:
{cloud.google.com/gke-nodepool: a3-pool}``) can only run on that node pool, whatever its own spec says.
placer reads the same thing (:mod:`placer.solver.jobs.kueue` turns the objects into the queue
configuration's ``flavor_groups``) and applies it to each job of the queue here, before placing:

* a ClusterQueue's *resource groups* each cover resources (``cpu``, ``memory``, ``nvidia.com/gpu``...)
  and list flavors; a group matters for a job that requests one of its resources (every job requests CPU
  and memory; GPU jobs a GPU resource; TPU jobs ``google.com/tpu``);
* for each group that matters, the job must run on the nodes of one of the group's flavors: a required
  rule "any of (all of the flavor's node labels)"; a flavor without node labels is every node;
* a flavor whose ``nodeTaints`` the job does not tolerate (with the flavor's own tolerations added) is not
  one Kueue would assign it, so it is left out; a group with no flavor left rejects the job (code
  ``limit``), naming the queue and the flavors;
* the job gets the tolerations of the flavors it may use;
* a pod set gets one flavor of each group (Kueue's flavor assignment): when a group offers the job two
  flavors or more and a task group may run more than one pod, the job gets a :class:`OneFlavor` of them,
  in order, and the engines keep each task group's pods on one flavor's nodes
  (:func:`flavor_level`; the checker's ``one-flavor``).

What is approximated: Kueue gives a pod set only its flavor's tolerations; placer adds
the tolerations of every flavor the job may use, so a job could use a taint another eligible flavor
tolerates on the first flavor's nodes (only when two eligible flavors' nodes and taints overlap). Flavor
order (Kueue tries flavors in order and takes the first with quota left) is greedy's order of trying a pod
set's flavors, not a term of CP-SAT's objective. Per-flavor
quotas are (:attr:`Flavor.max_gpus`, ``max_cpu_cores``, ``max_memory_gb``, ``max_pods``): what the queue
holds of each resource on a flavor's nodes — a node counted under the first flavor, of the group covering
that resource, whose labels it has — stays within its quota there, on top of the queue's budget, the sum
of its flavors' quotas (``docs/kubernetes.md``). So do a cohort's totals per flavor
(:attr:`Flavor.cohort_max_gpus`...): what the cohort's queues hold on a flavor's nodes together.

>>> from placer.solver.jobs.model import Job, TaskGroup
>>> groups = [FlavorGroup(covered=["cpu", "memory"], flavors=[
...     Flavor(name="cpu-pool", node_labels={"cloud.google.com/gke-nodepool": "cpu-pool"})])]
>>> job, problems = with_flavors(Job(id="prep", queue="team-a", tasks=[TaskGroup(cpu_cores=8)]), groups)
>>> problems, job.placement.required[0].rules[0].rules[0].values
([], ['cpu-pool'])
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.model import (
    AffinityOperator,
    AllOf,
    AnyOf,
    FlavorChoice,
    Job,
    LabelRule,
    OneFlavor,
    Toleration,
    tolerated,
)

__all__ = [
    "FLAVOR_LEVEL",
    "FLAVOR_RESOURCES",
    "TREE_QUOTA_FIELDS",
    "Flavor",
    "FlavorGroup",
    "NodeTaint",
    "flavor_level",
    "flavor_of",
    "level_flavor",
    "level_flavors",
    "level_text",
    "quota_groups",
    "requested_resources",
    "with_flavors",
]

#: Per resource of :data:`FLAVOR_RESOURCES`, the suffix of its quota fields in a tree of cohorts.
TREE_AMOUNT = {"gpus": "gpus", "cpu": "cpu_cores", "memory": "memory_gb", "pods": "pods"}
#: Resource names of GPUs and TPUs, as a ClusterQueue covers them.
GPU_NAMES = frozenset({"nvidia.com/gpu", "amd.com/gpu"})
TPU_NAMES = frozenset({"google.com/tpu"})
#: What a per-flavor quota may bound, in placer's units (whole GPUs and shares; cores; GB; pods): each with
#: the :class:`Flavor` field that holds the quota and the resource names a ClusterQueue covers it by.
FLAVOR_RESOURCES: dict[str, tuple[str, frozenset[str]]] = {
    "gpus": ("max_gpus", GPU_NAMES),
    "cpu": ("max_cpu_cores", frozenset({"cpu"})),
    "memory": ("max_memory_gb", frozenset({"memory"})),
    "pods": ("max_pods", frozenset({"pods"})),
}


class NodeTaint(BaseModel):
    """A taint a flavor's nodes carry (Kubernetes ``v1.Taint``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(min_length=1)
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


#: The keys of :attr:`Flavor.tree_quota` (a tree's queue's quota and what it keeps, per resource).
TREE_QUOTA_FIELDS = frozenset(
    f"{kind}_{amount}"
    for kind in ("nominal", "guaranteed")
    for amount in ("gpus", "cpu_cores", "memory_gb", "pods")
)


class Flavor(BaseModel):
    """One node flavor (Kueue ``ResourceFlavor``): its nodes by label, their taints, the tolerations it
    gives, and what the queue may hold on it.

    ``max_gpus``: the queue's GPU quota on this flavor (a ClusterQueue's ``nominalQuota`` of its GPU
    resources for the flavor, plus its ``borrowingLimit`` in a cohort); None: no quota of its own. The
    GPUs the queue's jobs hold, running and placed, on the flavor's nodes stay within it (both engines and
    the checker's rule 17). A node is the first flavor's of its group whose labels it has
    (:func:`flavor_of`). ``max_cpu_cores``, ``max_memory_gb`` and ``max_pods`` are the same for the
    ClusterQueue's ``cpu``, ``memory`` and ``pods`` quotas on the flavor, which every job's replicas on
    the flavor's nodes count against (a pod each, its cores and GB)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    node_labels: dict[str, str] = Field(default_factory=dict)
    node_taints: list[NodeTaint] = Field(default_factory=list)
    tolerations: list[Toleration] = Field(default_factory=list)
    max_gpus: float | None = Field(default=None, ge=0)
    max_cpu_cores: float | None = Field(default=None, ge=0)
    max_memory_gb: float | None = Field(default=None, ge=0)
    max_pods: int | None = Field(default=None, ge=0)
    #: The queue's cohort's total of each resource on this flavor (the nominal quotas of its ClusterQueues
    #: on the flavor, which they lend each other flavor by flavor): what the cohort's queues hold on the
    #: flavor's nodes together stays within it. None: no such total (the queue is in no cohort).
    cohort_max_gpus: float | None = Field(default=None, ge=0)
    cohort_max_cpu_cores: float | None = Field(default=None, ge=0)
    cohort_max_memory_gb: float | None = Field(default=None, ge=0)
    cohort_max_pods: int | None = Field(default=None, ge=0)
    #: In a tree of cohorts (``config.cohort.tree``), the queue's own quota of each resource on this flavor
    #: and what it keeps of it (``nominal_gpus``, ``guaranteed_gpus``, ``nominal_cpu_cores``...: the
    #: :class:`~placer.solver.jobs.queues.Cohort` field names): the tree's rules then hold on the flavor,
    #: among the queues that state their quota on it (``placer.solver.cohorts``), as Kueue keeps them per
    #: flavor and resource. In a flat cohort, ``guaranteed_*`` alone: what a lendingLimit on the flavor
    #: keeps, which the cohort's total there (``cohort_max_*``) counts as the queue's, used or not.
    tree_quota: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _tree_fields(self) -> Flavor:
        for key, value in self.tree_quota.items():
            if key not in TREE_QUOTA_FIELDS:
                raise ValueError(f"tree_quota: {key!r} is none of {', '.join(sorted(TREE_QUOTA_FIELDS))}")
            if value < 0:
                raise ValueError(f"tree_quota: {key} is a quota, not negative ({value:g})")
        return self


class FlavorGroup(BaseModel):
    """A ClusterQueue resource group: the resources it covers and its flavors, in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    covered: list[str] = Field(min_length=1)
    flavors: list[Flavor] = Field(min_length=1)


def flavor_of(labels: Mapping[str, str], group: FlavorGroup) -> Flavor | None:
    """The flavor of ``group`` a node with ``labels`` is counted under: the first, in the group's order,
    whose node labels it all has (a flavor without labels: every node); None when none.

    >>> g = FlavorGroup(covered=["nvidia.com/gpu"], flavors=[Flavor(name="h100", node_labels={"pool": "a3"}),
    ...                                                      Flavor(name="rest")])
    >>> flavor_of({"pool": "a3"}, g).name, flavor_of({"pool": "g2"}, g).name
    ('h100', 'rest')
    """
    for f in group.flavors:
        if all(labels.get(k) == v for k, v in f.node_labels.items()):
            return f
    return None


def quota_groups(groups: list[FlavorGroup]) -> dict[str, FlavorGroup]:
    """Per resource of :data:`FLAVOR_RESOURCES`, the resource group that covers it, when one of its flavors
    has a quota of it of its own, or its cohort's total of it (Kueue puts each resource in one group).

    >>> g = FlavorGroup(covered=["cpu", "nvidia.com/gpu"], flavors=[Flavor(name="a", max_gpus=8, max_pods=9)])
    >>> sorted(quota_groups([g]))
    ['gpus']
    >>> g = FlavorGroup(covered=["cpu", "pods"], flavors=[Flavor(name="a", max_cpu_cores=64, max_pods=9)])
    >>> sorted(quota_groups([g]))
    ['cpu', 'pods']
    """
    out: dict[str, FlavorGroup] = {}
    for resource, (attr, names) in FLAVOR_RESOURCES.items():
        for g in groups:
            if names & set(g.covered) and any(
                getattr(f, attr) is not None
                or getattr(f, f"cohort_{attr}") is not None
                or f"nominal_{TREE_AMOUNT[resource]}" in f.tree_quota
                for f in g.flavors
            ):
                out[resource] = g
                break
    return out


def requested_resources(job: Job) -> set[str]:
    """Resource names the job requests, as a ClusterQueue covers them (module docstring).

    >>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
    >>> sorted(requested_resources(Job(id="t", tasks=[TaskGroup(cpu_cores=4, gpu=GpuDemand(count=8))])))
    ['amd.com/gpu', 'cpu', 'memory', 'nvidia.com/gpu']
    """
    out = {"cpu", "memory"}
    for g in job.tasks:
        if g.gpu is not None and (g.gpu.count or g.gpu.share_milli):
            out |= GPU_NAMES
        if g.tpu is not None:
            out |= TPU_NAMES
    return out


def _tolerated(taint: NodeTaint, tolerations: list[Toleration]) -> bool:
    """Kubernetes' rule (:func:`~placer.solver.jobs.model.tolerated`); ``PreferNoSchedule`` never keeps a
    pod off."""
    return taint.effect == "PreferNoSchedule" or tolerated(taint, tolerations)


def with_flavors(job: Job, groups: list[FlavorGroup]) -> tuple[Job, list[Issue]]:
    """``job`` kept to the nodes of its queue's flavors, with their tolerations (module docstring); the
    issues when a group it needs has no flavor it may use (then the job is returned unchanged)."""
    wanted = requested_resources(job)
    own = list(job.placement.tolerations)
    rules: list[AnyOf] = []
    added: list[Toleration] = []
    one: list[OneFlavor] = []
    problems: list[Issue] = []
    for n, group in enumerate(groups):
        if not wanted & set(group.covered):
            continue
        usable = [f for f in group.flavors if all(_tolerated(t, own + f.tolerations) for t in f.node_taints)]
        if not usable:
            names = ", ".join(f.name for f in group.flavors)
            problems.append(
                issue(
                    "limit",
                    "queue",
                    f"queue {job.queue!r}: the job tolerates the node taints of none of the flavors "
                    f"({names}) of resource group {n} ({', '.join(group.covered)})",
                )
            )
            continue
        if all(f.node_labels for f in usable):
            alternatives = [
                AllOf(
                    rules=[
                        LabelRule(key=k, operator=AffinityOperator.IN, values=[v])
                        for k, v in sorted(f.node_labels.items())
                    ]
                )
                for f in usable
            ]
            rules.append(AnyOf(rules=alternatives))
        for f in usable:
            added += [t for t in f.tolerations if t not in own and t not in added]
        if len(usable) > 1 and _pod_sets(job):
            choices = [FlavorChoice(name=f.name, node_labels=dict(f.node_labels)) for f in usable]
            one.append(OneFlavor(group=n, flavors=choices))
    if problems:
        return job, problems
    if not rules and not added and not one:
        return job, []
    placement = job.placement.model_copy(
        update={
            "required": [*job.placement.required, *rules],
            "tolerations": [*own, *added],
            "one_flavor": [*job.placement.one_flavor, *one],
        }
    )
    return job.model_copy(update={"placement": placement}), []


def _pod_sets(job: Job) -> bool:
    """Whether some task group of ``job`` may run more than one pod on nodes (a pod set whose pods could
    otherwise land on two flavors)."""
    return any(g.tpu is None and (g.count > 1 or g.count_range is not None) for g in job.tasks)


#: How an engine names the level "the flavor of :class:`OneFlavor`" among a unit's domains
#: (:func:`flavor_level`).
FLAVOR_LEVEL = "kueue-flavor:"


def flavor_level(one: OneFlavor) -> str:
    """The level of a unit's domains that stands for ``one`` (the engines keep each pod set in one domain
    of it, as they keep a Flux ``rack: 1``): its flavors' names and node labels, in order, after
    :data:`FLAVOR_LEVEL`, so that the level alone says which flavor each node is.

    >>> one = OneFlavor(flavors=[FlavorChoice(name="a", node_labels={"pool": "a"}), FlavorChoice(name="b")])
    >>> flavor_level(one)
    'kueue-flavor:[["a",{"pool":"a"}],["b",{}]]'
    >>> level_flavors(flavor_level(one))[0]
    ('a', (('pool', 'a'),))
    """
    return FLAVOR_LEVEL + json.dumps(
        [[f.name, f.node_labels] for f in one.flavors], separators=(",", ":"), sort_keys=True
    )


@lru_cache(maxsize=256)
def level_flavors(level: str) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...] | None:
    """The flavors of a level :func:`flavor_level` made (name and node labels each, in order); None for
    any other level."""
    if not level.startswith(FLAVOR_LEVEL):
        return None
    return tuple(
        (name, tuple(sorted(labels.items()))) for name, labels in json.loads(level[len(FLAVOR_LEVEL) :])
    )


def level_flavor(level: str, labels: Mapping[str, str]) -> str | None:
    """The flavor of a node with ``labels`` on a level :func:`flavor_level` made: the first whose labels it
    all has; None when none."""
    for name, wanted in level_flavors(level) or ():
        if all(labels.get(k) == v for k, v in wanted):
            return name
    return None


def level_text(level: str) -> str:
    """A level as a message names it: ``Kueue flavor (a, b)`` for a flavor level, else the level."""
    flavors = level_flavors(level)
    return level if flavors is None else f"Kueue flavor ({', '.join(n for n, _ in flavors)})"
