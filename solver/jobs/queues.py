"""Queue configuration of OJS ML resources §10: ``ml_defaults``, ``ml_limits`` and the GPU budget.

A queue-config file holds one ``{"queue": ..., "config": {...}}`` object or a list of them (the §10.1 and
§10.2 examples are exactly this shape). Defaults fill only attributes the producer left unset (§10.1);
limit violations are rejections (§10.2, HTTP 422); the GPU budget (§10.3) is never a rejection, the
solver keeps over-budget jobs pending.

:func:`load_queue_configs` turns such an object, a list of them, or their JSON/YAML text into
``{queue name: QueueConfig}`` for :attr:`placer.solver.jobs.options.ReadOptions.queues`, and refuses a bad
configuration as a whole (:class:`~placer.solver.jobs.errors.JobValidationError`, every issue at once): a
wrong
type or an unknown key in ``ml_limits``, a GPU type or priority class outside the closed lists, an
``ml_defaults`` key that is not an ML resources attribute or whose value the job reader itself would
refuse, a default that breaks the same queue's limits (``conflict``), a queue named twice (``duplicate``).
Defaults are applied by the OJS reader (:func:`placer.solver.jobs.formats.ojs.read_envelope`) to the
attributes a
producer left unset; limits are checked for every format by :func:`placer.solver.jobs.guards.check_job`.

>>> qc = QueueConfig.model_validate({"queue": "q", "config": {"ml_limits": {"max_gpu_count": 4}}})
>>> qc.config.ml_limits.max_gpu_count
4
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from placer.solver.jobs.errors import Issue, JobValidationError, issue
from placer.solver.jobs.flavors import FlavorGroup
from placer.solver.jobs.kueue import is_kueue_document, kueue_queue_configs
from placer.topology import Cluster

__all__ = [
    "GUARANTEED_FIELDS",
    "MAX_BUDGET_PER_HOUR",
    "Cohort",
    "CohortNode",
    "MlLimits",
    "QueueConfig",
    "QueueSettings",
    "QuotaPreemption",
    "in_cluster_queues",
    "load_queue_config_file",
    "load_queue_configs",
    "local_queue_names",
    "pydantic_issues",
]


#: Highest dollar budget (queue ``max_cost_per_hour``, the prices file's tenant budgets), in dollars per hour:
#: budgets are compared as integer hundredths of a cent in the CP-SAT model.
MAX_BUDGET_PER_HOUR = 1_000_000_000.0


class MlLimits(BaseModel):
    """§10.2 ``ml_limits`` (and §10.3 budget fields and the dollar budget, which are not rejections)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_gpu_count: int | None = Field(default=None, ge=0)
    max_gpu_memory_gb: float | None = Field(default=None, ge=0)
    max_memory_gb: float | None = Field(default=None, ge=0)
    max_timeout_seconds: int | None = Field(default=None, ge=0)
    allowed_gpu_types: list[str] | None = None
    allowed_priority_classes: list[str] | None = None
    max_concurrent_gpu_jobs: int | None = Field(default=None, ge=0)
    max_total_gpus: int | None = Field(default=None, ge=0)
    #: placer extensions (not OJS): CPU cores and memory (GB of 2^30 bytes) the queue's active jobs may hold
    #: together, running and placed, on nodes (a Kueue ClusterQueue's ``cpu`` and ``memory`` quotas). Budgets
    #: like ``max_total_gpus``: over one a job waits (``QUEUE_BUDGET``), every job of the queue counting,
    #: GPU or not.
    max_total_cpu_cores: float | None = Field(default=None, ge=0)
    max_total_memory_gb: float | None = Field(default=None, ge=0)
    #: placer extension (not OJS): pods the queue's active jobs may be together, running and placed, every
    #: replica one pod (a Kueue ClusterQueue's ``pods`` quota). A budget like the others.
    max_total_pods: int | None = Field(default=None, ge=0)
    #: placer extension (not OJS): dollars per hour the queue's active jobs may cost, running and placed,
    #: priced like ``cost_per_hour`` (``placer.solver.prices``). A budget like §10.3's: over it a job waits.
    max_cost_per_hour: float | None = Field(default=None, ge=0, le=MAX_BUDGET_PER_HOUR)


#: The :class:`Cohort` fields of what a queue keeps of its ``cpu``, ``memory`` and ``pods`` quotas, in the
#: order of ``placer.solver.budgets.RESOURCES``.
GUARANTEED_FIELDS = ("guaranteed_cpu_cores", "guaranteed_memory_gb", "guaranteed_pods")


#: A cohort's quota fields, per resource (:attr:`CohortNode.flavor_quotas`' keys).
_NODE_QUOTA_FIELDS = frozenset(
    f"{kind}_{amount}"
    for kind in ("nominal", "lending", "borrowing")
    for amount in ("gpus", "cpu_cores", "memory_gb", "pods")
)


class CohortNode(BaseModel):
    """placer extension (not OJS): one cohort of a tree (a Kueue ``Cohort`` object with a parent or a
    quota of its own; hierarchical cohorts). ``nominal_gpus``: its own GPU quota, a pool its subtree
    shares on top of its members'; ``lending_gpus``: at most this much of its subtree's quota is lent to
    its parent (None: all of it); ``borrowing_gpus``: its subtree takes at most this much beyond its own
    quota from its parent (None: no limit). The same three for ``cpu_cores``, ``memory_gb`` (GB of 2^30
    bytes) and ``pods``: a tree's rules hold for each of them among the queues that state their own quota
    of it (:attr:`Cohort.nominal_cpu_cores`...)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(min_length=1)
    parent: str | None = Field(default=None, min_length=1)
    nominal_gpus: int = Field(default=0, ge=0)
    lending_gpus: int | None = Field(default=None, ge=0)
    borrowing_gpus: int | None = Field(default=None, ge=0)
    nominal_cpu_cores: float = Field(default=0.0, ge=0)
    lending_cpu_cores: float | None = Field(default=None, ge=0)
    borrowing_cpu_cores: float | None = Field(default=None, ge=0)
    nominal_memory_gb: float = Field(default=0.0, ge=0)
    lending_memory_gb: float | None = Field(default=None, ge=0)
    borrowing_memory_gb: float | None = Field(default=None, ge=0)
    nominal_pods: int = Field(default=0, ge=0)
    lending_pods: int | None = Field(default=None, ge=0)
    borrowing_pods: int | None = Field(default=None, ge=0)
    #: The same per flavor (a Kueue Cohort's quotas are per flavor and resource): flavor name -> its
    #: ``nominal_*``, ``lending_*`` and ``borrowing_*`` amounts (the field names above), for the trees
    #: kept per flavor (the queues' ``Flavor.tree_quota``).
    flavor_quotas: dict[str, dict[str, float]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _flavor_fields(self) -> CohortNode:
        for flavor, quotas in self.flavor_quotas.items():
            for key, value in quotas.items():
                if key not in _NODE_QUOTA_FIELDS:
                    raise ValueError(f"flavor_quotas[{flavor!r}]: {key!r} is not a quota field of a cohort")
                if value < 0:
                    raise ValueError(f"flavor_quotas[{flavor!r}]: {key} is a quota, not negative ({value:g})")
        return self


class Cohort(BaseModel):
    """placer extension (not OJS): a budget several queues share on top of their own (a Kueue cohort: its
    ClusterQueues borrow each other's unused quota). Their active GPU jobs — running and not evicted, plus
    placed — hold at most ``max_total_gpus`` together; each queue's own ``ml_limits.max_total_gpus`` (its
    nominal quota plus what it may borrow) still holds. Every queue of a cohort states the same total.

    ``guaranteed_gpus``: the part of this queue's quota it does not lend (a Kueue ``lendingLimit``: nominal
    quota minus the limit). The cohort counts each queue as holding at least that much, used or not, so the
    others never borrow it: the queues' ``max(GPUs held, guaranteed_gpus)`` add up to at most
    ``max_total_gpus``.

    ``tree``: for a cohort in a tree (Kueue hierarchical cohorts), the cohorts from this queue's up to the
    root (:class:`CohortNode`), and ``nominal_gpus`` the queue's own quota. The tree's rules then replace
    the one total (:mod:`placer.solver.cohorts`: Kueue's quota arithmetic — what each node keeps, lends
    and borrows); ``max_total_gpus`` is the root's whole quota, for information.

    ``max_total_cpu_cores``, ``max_total_memory_gb`` and ``max_total_pods``: the cores and GB (on nodes)
    the cohort's queues' active jobs — every job, GPU or not, running and not evicted plus placed — hold
    at most together, and the pods they are (a Kueue cohort's ``cpu``, ``memory`` and ``pods``: its
    ClusterQueues' nominal quotas), on top of each queue's own ``ml_limits`` budget of them. They bound the
    queues that name this cohort as theirs; the Kueue reader states them for flat cohorts only (a tree's
    rules are given by ``tree`` and ``nominal_cpu_cores``... instead).

    ``guaranteed_cpu_cores``, ``guaranteed_memory_gb`` and ``guaranteed_pods``: the part of this queue's
    ``cpu``, ``memory`` and ``pods`` quotas it does not lend (a Kueue ``lendingLimit`` on them: nominal
    quota minus the limit), as ``guaranteed_gpus`` is for GPUs: the cohort counts the queue as holding at
    least that much of each, used or not, so the queues' ``max(held, guaranteed)`` add up to at most the
    cohort's total of it. In a flat cohort each needs that total; in a ``tree``, the queue's own quota of
    it.

    ``nominal_cpu_cores``, ``nominal_memory_gb`` and ``nominal_pods``: in a ``tree``, the queue's own quota
    of that resource (its ClusterQueue's ``nominalQuota``, summed over flavors); the tree's rules then hold
    for it as for GPUs, among the tree's queues that state it (None: the queue is outside that resource's
    tree, bound by its own budget only)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(min_length=1)
    max_total_gpus: int = Field(ge=0)
    max_total_cpu_cores: float | None = Field(default=None, ge=0)
    max_total_memory_gb: float | None = Field(default=None, ge=0)
    max_total_pods: int | None = Field(default=None, ge=0)
    guaranteed_gpus: int = Field(default=0, ge=0)
    guaranteed_cpu_cores: float = Field(default=0.0, ge=0)
    guaranteed_memory_gb: float = Field(default=0.0, ge=0)
    guaranteed_pods: int = Field(default=0, ge=0)
    nominal_gpus: int = Field(default=0, ge=0)
    nominal_cpu_cores: float | None = Field(default=None, ge=0)
    nominal_memory_gb: float | None = Field(default=None, ge=0)
    nominal_pods: int | None = Field(default=None, ge=0)
    tree: list[CohortNode] = Field(default_factory=list)

    @model_validator(mode="after")
    def _chain(self) -> Cohort:
        for kept, total in zip(
            GUARANTEED_FIELDS, ("max_total_cpu_cores", "max_total_memory_gb", "max_total_pods"), strict=True
        ):
            if not getattr(self, kept):
                continue
            nominal = kept.replace("guaranteed_", "nominal_")
            if self.tree and getattr(self, nominal) is None:
                raise ValueError(f"{kept} in a tree needs the queue's {nominal}: it keeps part of its quota")
            if self.tree and getattr(self, kept) > getattr(self, nominal):
                raise ValueError(f"{kept} is more than the queue's {nominal}: it keeps part of its quota")
            if not self.tree and getattr(self, total) is None:
                raise ValueError(f"{kept} needs the cohort's {total}: what a queue keeps is kept out of it")
        for nominal in ("nominal_cpu_cores", "nominal_memory_gb", "nominal_pods"):
            if getattr(self, nominal) is not None and not self.tree:
                raise ValueError(f"{nominal} is a tree's queue's own quota (a flat cohort states totals)")
        if self.tree:
            if self.tree[0].name != self.name:
                raise ValueError(
                    f"tree starts at {self.tree[0].name!r}, not at the queue's cohort {self.name!r}"
                )
            for below, above in zip(self.tree, self.tree[1:], strict=False):
                if below.parent != above.name:
                    raise ValueError(
                        f"tree: {above.name!r} follows {below.name!r}, whose parent is {below.parent!r}"
                    )
            if self.tree[-1].parent is not None:
                raise ValueError(
                    f"tree ends at {self.tree[-1].name!r}, which has a parent ({self.tree[-1].parent!r})"
                )
            if len({n.name for n in self.tree}) != len(self.tree):
                raise ValueError("tree names a cohort twice (a cycle)")
        return self


class QuotaPreemption(BaseModel):
    """placer extension (not OJS): whether evicting a running job gives its room in the budgets back, for
    the jobs of this queue. placer evicts only for strictly higher-priority work (OJS ML §8), to make room
    on nodes; what the victim held then comes back to its queue's budgets (GPUs, GPU jobs, cores, memory,
    pods, per-flavor GPUs, dollars) for the queue's own jobs that outrank it (``within_queue``), and to
    its cohort's totals for the cohort's jobs that outrank it (``within_cohort``, asked of every queue of
    the cohort but the victim's). ``never``: evictions still make room on nodes, but free no quota, so a
    job over its budget waits however low the jobs that hold it.

    ``within_cohort_max_priority``: with ``within_cohort``, only victims of at most this numeric priority
    give the cohort's room back to this queue's jobs (Kueue's ``borrowWithinCohort.maxPriorityThreshold``).

    A Kueue ClusterQueue's ``preemption`` (:mod:`placer.solver.jobs.kueue`): ``withinClusterQueue`` (its
    default ``Never``) is ``within_queue``; ``reclaimWithinCohort`` with ``borrowWithinCohort`` is
    ``within_cohort`` (module docstring there). placer's own default keeps both: the room an eviction frees
    is the evicting job's to use.

    >>> QuotaPreemption().within_queue, QuotaPreemption(within_cohort="never").within_cohort
    ('lower-priority', 'never')
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    within_queue: Literal["lower-priority", "never"] = "lower-priority"
    within_cohort: Literal["lower-priority", "never"] = "lower-priority"
    within_cohort_max_priority: int | None = None


class QueueSettings(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    ml_defaults: dict[str, Any] = Field(default_factory=dict)
    ml_limits: MlLimits = Field(default_factory=MlLimits)
    #: placer extension (not OJS): the queue's node flavors by resource group (Kueue ResourceFlavors of
    #: its ClusterQueue, :mod:`placer.solver.jobs.flavors`): its jobs run only on their nodes.
    flavor_groups: list[FlavorGroup] = Field(default_factory=list)
    #: placer extension (not OJS): Kubernetes pods and workloads of these Kueue LocalQueues
    #: (``namespace/name``) are this queue's, so that the LocalQueues of one ClusterQueue count against
    #: one quota, as in Kueue (:mod:`placer.solver.jobs.kueue`). Empty: a job names the queue itself.
    local_queues: list[str] = Field(default_factory=list)
    #: placer extension (not OJS): the shared budget of the cohort the queue is in (:class:`Cohort`).
    cohort: Cohort | None = None
    #: placer extension (not OJS): what evictions give back to the budgets (:class:`QuotaPreemption`).
    preemption: QuotaPreemption = Field(default_factory=QuotaPreemption)


class QueueConfig(BaseModel):
    """One queue's configuration, in the OJS §10 envelope ``{"queue", "config"}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queue: str = Field(min_length=1)
    config: QueueSettings = Field(default_factory=QueueSettings)


# ---------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------

#: pydantic error types -> issue codes.
_PYDANTIC_CODES = {
    "missing": "required",
    "extra_forbidden": "malformed",
    "greater_than_equal": "range",
    "greater_than": "range",
    "less_than_equal": "range",
    "string_too_short": "range",
    "literal_error": "enum",
}


def pydantic_issues(e: ValidationError, prefix: str) -> list[Issue]:
    """pydantic's errors as issues with dotted/indexed paths under ``prefix`` (also used for limits files)."""
    out: list[Issue] = []
    for err in e.errors():
        path = prefix
        for part in err["loc"]:
            path = f"{path}[{part}]" if isinstance(part, int) else (f"{path}.{part}" if path else str(part))
        code = _PYDANTIC_CODES.get(err["type"], "type")
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        out.append(issue(code, path or "<config>", message[:300]))
    return out


def _check_lists(limits: MlLimits, path: str) -> list[Issue]:
    from placer.solver.jobs.formats.ojs_v03 import is_gpu_type
    from placer.solver.jobs.model import PriorityClass

    out: list[Issue] = []
    for i, t in enumerate(limits.allowed_gpu_types or []):
        if not is_gpu_type(t):
            out.append(issue("enum", f"{path}.allowed_gpu_types[{i}]", f"{t!r} is not a GPU type id (§3.2)"))
    classes = [c.value for c in PriorityClass]
    for i, c in enumerate(limits.allowed_priority_classes or []):
        if c not in classes:
            out.append(
                issue("enum", f"{path}.allowed_priority_classes[{i}]", f"must be one of {', '.join(classes)}")
            )
    return out


def _check_defaults(defaults: Mapping[str, Any], limits: MlLimits, path: str) -> list[Issue]:
    """Defaults must be ML resources attributes the reader accepts, and within the queue's own limits."""
    from placer.solver.jobs.fields import Fields
    from placer.solver.jobs.formats.ojs_v03 import V03_ATTRIBUTES, parse_attributes

    out: list[Issue] = []
    for k in defaults:
        if k not in V03_ATTRIBUTES:
            out.append(issue("enum", f"{path}.{k}", "not an ext_ml_* attribute of OJS ML resources (§10.1)"))
    f = Fields({k: v for k, v in defaults.items() if k in V03_ATTRIBUTES}, path)
    parse_attributes(f, [], {})
    out += f.issues
    if f.issues:
        return out
    bounds = (
        ("ext_ml_gpu_count", limits.max_gpu_count),
        ("ext_ml_gpu_memory_gb", limits.max_gpu_memory_gb),
        ("ext_ml_memory_gb", limits.max_memory_gb),
        ("ext_ml_timeout_seconds", limits.max_timeout_seconds),
    )
    for key, bound in bounds:
        v = defaults.get(key)
        if bound is not None and v is not None and v > bound:
            out.append(issue("conflict", f"{path}.{key}", f"default {v} exceeds the queue limit {bound}"))
    allowed = (
        ("ext_ml_gpu_type", limits.allowed_gpu_types),
        ("ext_ml_priority_class", limits.allowed_priority_classes),
    )
    for key, values in allowed:
        v = defaults.get(key)
        if values is not None and v is not None and v not in values:
            out.append(
                issue("conflict", f"{path}.{key}", f"default {v!r} is not allowed by the queue limits")
            )
    return out


def load_queue_configs(obj_or_text: Any, source: str = "") -> dict[str, QueueConfig]:
    """Queue configurations by queue name, from one ``{"queue", "config"}`` object, a list of them, or
    their JSON/YAML text; or Kueue's ClusterQueues and LocalQueues (:mod:`placer.solver.jobs.kueue`: each
    LocalQueue gets its ClusterQueue's GPU quota as its budget). Raises
    :class:`~placer.solver.jobs.errors.JobValidationError` for a bad configuration.

    >>> qs = load_queue_configs('{"queue": "gpu", "config": {"ml_defaults": {"ext_ml_gpu_count": 1}}}')
    >>> qs["gpu"].config.ml_defaults
    {'ext_ml_gpu_count': 1}
    >>> try:
    ...     load_queue_configs({"queue": "q", "config": {"ml_limits": {"max_gpu_count": "4"}}})
    ... except JobValidationError as e:
    ...     [(i.code, i.path) for i in e.issues]
    [('type', 'config.ml_limits.max_gpu_count')]
    """
    if isinstance(obj_or_text, str):
        from placer.solver.jobs.parse import parse_json_or_yaml

        obj_or_text = parse_json_or_yaml(obj_or_text, source=source)
    if is_kueue_document(obj_or_text):  # kubectl get clusterqueues,localqueues -A -o json
        obj_or_text = kueue_queue_configs(obj_or_text, source)
    single = isinstance(obj_or_text, Mapping)
    items = [obj_or_text] if single else obj_or_text
    if not isinstance(items, list):
        raise JobValidationError(
            [
                issue(
                    "type",
                    source or "<config>",
                    "a queue configuration must be an object or a list of objects",
                )
            ]
        )
    out: dict[str, QueueConfig] = {}
    problems: list[Issue] = []
    for i, item in enumerate(items):
        prefix = "" if single else f"[{i}]"
        try:
            qc = QueueConfig.model_validate(item)
        except ValidationError as e:
            problems += pydantic_issues(e, prefix)
            continue
        settings = f"{prefix}.config" if prefix else "config"
        problems += _check_lists(qc.config.ml_limits, f"{settings}.ml_limits")
        problems += _check_defaults(qc.config.ml_defaults, qc.config.ml_limits, f"{settings}.ml_defaults")
        if qc.queue in out:
            problems.append(
                issue("duplicate", f"{prefix}.queue" if prefix else "queue", f"queue {qc.queue!r} twice")
            )
        for k, lq in enumerate(qc.config.local_queues):
            if lq.count("/") != 1 or not all(lq.split("/")):
                at = f"{settings}.local_queues[{k}]"
                problems.append(issue("malformed", at, f"{lq!r}: a LocalQueue is namespace/name"))
        out[qc.queue] = qc
    nodes: dict[str, tuple[CohortNode, str]] = {}
    for qc in out.values():  # a cohort of a tree is described the same way by every queue below it
        c = qc.config.cohort
        for node in c.tree if c is not None else []:
            if nodes.setdefault(node.name, (node, qc.queue))[0] != node:
                first = nodes[node.name][1]
                why = f"queues {first!r} and {qc.queue!r} describe cohort {node.name!r} differently"
                problems.append(issue("conflict", "config.cohort.tree", why))
    for field in ("max_total_gpus", "max_total_cpu_cores", "max_total_memory_gb", "max_total_pods"):
        totals: dict[str, tuple[float | None, str]] = {}
        for qc in out.values():
            c = qc.config.cohort
            if c is None:
                continue
            if totals.setdefault(c.name, (getattr(c, field), qc.queue))[0] != getattr(c, field):
                first = totals[c.name][1]
                why = f"queues {first!r} and {qc.queue!r} state different {field} for cohort {c.name!r}"
                problems.append(issue("conflict", f"config.cohort.{field}", why))
    seen: dict[str, str] = {}
    for qc in out.values():
        for lq in qc.config.local_queues:
            if seen.setdefault(lq, qc.queue) != qc.queue:
                why = f"LocalQueue {lq!r} is listed by queues {seen[lq]!r} and {qc.queue!r}"
                problems.append(issue("conflict", "config.local_queues", why))
    if problems:
        raise JobValidationError(problems)
    return out


def local_queue_names(queues: Mapping[str, QueueConfig]) -> dict[tuple[str, str], str]:
    """``(namespace, LocalQueue) -> queue`` for the queues that list Kueue LocalQueues
    (``config.local_queues``): what a Kubernetes pod's ``kueue.x-k8s.io/queue-name`` label means in its
    namespace.

    >>> qc = QueueConfig.model_validate({"queue": "cq", "config": {"local_queues": ["a/lq", "b/lq"]}})
    >>> local_queue_names({"cq": qc})
    {('a', 'lq'): 'cq', ('b', 'lq'): 'cq'}
    """
    out: dict[tuple[str, str], str] = {}
    for name, qc in queues.items():
        for lq in qc.config.local_queues:
            namespace, _, local = lq.partition("/")
            out[(namespace, local)] = name
    return out


def in_cluster_queues(cluster: Cluster, queues: Mapping[str, QueueConfig]) -> Cluster:
    """``cluster`` with each running pod of a LocalQueue a queue lists (``config.local_queues``) in that
    queue: as a pending pod is read (:func:`placer.solver.jobs.load.read_text`), so that running and
    pending work of a shared ClusterQueue counts against one budget. A running pod's namespace is its
    ``tenant`` (``placer cluster --pods``). The same cluster object when nothing moves.

    >>> from placer.topology import cluster_of, dgx_h100
    >>> qc = QueueConfig.model_validate({"queue": "cq", "config": {"local_queues": ["ml/lq"]}})
    >>> c = cluster_of(dgx_h100(2))
    >>> pod = {"job": "ml/p", "tenant": "ml", "queue": "lq", "replicas": [{"node": "dgx-h100-1"}]}
    >>> in_cluster_queues(c.allocate(pod), {"cq": qc}).running_job("ml/p").queue
    'cq'
    """
    names = local_queue_names(queues)
    if not names:
        return cluster
    moved = [
        rj
        for rj in cluster.running_jobs()
        if rj.tenant is not None and rj.queue is not None and (rj.tenant, rj.queue) in names
    ]
    if not moved:
        return cluster
    renamed = [rj.model_copy(update={"queue": names[(rj.tenant, rj.queue)]}) for rj in moved]
    return cluster.release(*[rj.job for rj in moved]).with_allocations(renamed)


def load_queue_config_file(path: str | Path) -> dict[str, QueueConfig]:
    """:func:`load_queue_configs` over a UTF-8 JSON or YAML file (``OSError`` when it cannot be read).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
    ...     _ = fh.write("queue: q\\nconfig:\\n  ml_limits:\\n    max_gpu_count: 4\\n")
    >>> load_queue_config_file(fh.name)["q"].config.ml_limits.max_gpu_count
    4
    >>> os.unlink(fh.name)
    """
    from placer.solver.jobs.parse import read_utf8_file

    return load_queue_configs(read_utf8_file(path), source=str(path))
