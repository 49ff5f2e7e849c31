"""Kueue's ``ClusterQueue`` GPU, CPU and memory quotas read as placer queue budgets, and its
``ResourceFlavor``s as the queue's node flavors (``--queue-config``).

Why: on a Kubernetes cluster with Kueue, how many GPUs a team may hold is a ``ClusterQueue``'s
``nominalQuota`` for ``nvidia.com/gpu`` (or ``amd.com/gpu``), and the team's pods name their
``LocalQueue`` (label ``kueue.x-k8s.io/queue-name``), which points to that ClusterQueue. placer's queue
budget (``ml_limits.max_total_gpus``, the same ledger both engines and the checker keep) is per queue name,
and the pod reader gives each pod its LocalQueue's name as queue, so a LocalQueue gets its ClusterQueue's
GPU quota (the sum over the ClusterQueue's flavors) as its budget. Running pods count against it by the
same label. Its ``cpu`` and ``memory`` quotas (summed over flavors) become the queue's CPU and memory
budgets (``ml_limits.max_total_cpu_cores``, ``max_total_memory_gb``, placer extensions), which every job
of the queue counts against, GPU or not, as Kueue counts every workload's requests.

**Shared ClusterQueues.** Kueue's usual multi-tenant setup points several LocalQueues (one per team
namespace, often of one name) at one ClusterQueue, whose quota they share. Then the queue is the
ClusterQueue: its configuration is named after it and lists its LocalQueues as ``namespace/name``
(``config.local_queues``), and a pod of one of them, pending (:func:`placer.solver.jobs.load.read_text`
and the other readers) or running (``--pods``, ``placer.solver.jobs.queues.in_cluster_queues``), gets the
ClusterQueue's name as its queue, so all of them count against one budget. The same happens when one
LocalQueue name is used in several namespaces.

**Flavors.** When the document holds ``ResourceFlavor`` objects (``kubectl get
clusterqueues,localqueues,resourceflavors -A -o json``), each LocalQueue's configuration also gets its
ClusterQueue's resource groups with their flavors' ``nodeLabels``, ``nodeTaints`` and ``tolerations``
(``flavor_groups``), which keep the queue's jobs on those nodes (:mod:`placer.solver.jobs.flavors`), and
its quotas on each flavor (``max_gpus``, ``max_cpu_cores``, ``max_memory_gb``, ``max_pods``:
:func:`_flavor_quotas`), which bound what the queue holds on that flavor's nodes. A ClusterQueue naming a
flavor the document lacks is refused then; a document without any ResourceFlavor gives budgets only (the
flavors' nodes are not known).

**Cohorts.** ClusterQueues of one cohort (``spec.cohort``, v1beta2 ``spec.cohortName``) borrow each
other's unused quota: each queue's budget is then its nominal GPU quota plus its ``borrowingLimit``
(summed over flavors; none when a GPU resource has no limit: it may borrow whatever is unused), and its
configuration carries the cohort's total, the nominal quotas of all its ClusterQueues
(``config.cohort``), which the GPUs of all their queues' active jobs share (both engines and the checker;
``QUEUE_BUDGET`` names the cohort when it is what is full). A ``lendingLimit`` keeps the rest of the
queue's nominal quota for its own workloads (``config.cohort.guaranteed_gpus``): the cohort counts the
queue as holding at least that, used or not. ``Cohort`` objects with a parent (``spec.parentName``,
v1alpha1 ``spec.parent``) or a GPU quota of their own make a tree (hierarchical cohorts): each queue's
configuration then carries the cohorts from its own up to the root (``config.cohort.tree``, with each
cohort's own quota, ``lendingLimit`` and ``borrowingLimit``) and the engines keep Kueue's rules for the
tree (:mod:`placer.solver.cohorts`) instead of one total. A ClusterQueue of a tree without a LocalQueue
is a pool of its cohort (its quota less what it keeps; nothing runs there).

**Preemption.** A ClusterQueue's ``preemption`` says whether evicting a lower-priority job frees quota
(``config.preemption``, :func:`_preemption`): Kueue's default, ``withinClusterQueue: Never`` and
``reclaimWithinCohort: Never``, frees none, so a job over its quota waits however low the jobs holding
it; placer still evicts to make room on nodes, as kube-scheduler does for an admitted workload.

What is not modelled, and refused or said rather than approximated:

* a queue name that would be both a LocalQueue's and a shared ClusterQueue's — refused;
* a cycle of ``Cohort`` parents, and a ``lendingLimit`` on some of a Cohort's flavors of a resource
  only — refused;
* a cohort's CPU, memory and pods: a ClusterQueue's ``cpu``, ``memory`` and ``pods`` quotas become its queue's
  budgets (``ml_limits.max_total_cpu_cores``, ``max_total_memory_gb``, ``max_total_pods``, summed over
  flavors; in a cohort its nominal quota plus its ``borrowingLimit``, no budget when one has none), and a flat
  cohort's totals of them are its ClusterQueues' nominal quotas (``config.cohort``'s fields of the same
  names), which its queues' jobs share; a ``lendingLimit`` below such a quota keeps the rest for the queue
  (``config.cohort.guaranteed_cpu_cores``, ``guaranteed_memory_gb``, ``guaranteed_pods``), counted as for
  GPUs; in a tree of cohorts each queue states its own quota of them and what it keeps
  (``config.cohort.nominal_cpu_cores``..., ``guaranteed_*``), each Cohort object its own quota, lending and
  borrowing limits of them (``CohortNode``), and the tree's rules hold for each as for GPUs; other
  resources' quotas are not counted (``docs/kubernetes.md`` says so).

The input is what ``kubectl get clusterqueues,localqueues -A -o json`` (or ``-o yaml``) prints: a
``List``, or one object.

>>> doc = {"apiVersion": "v1", "kind": "List", "items": [
...     {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
...      "spec": {"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
...          {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": 64},
...                                         {"name": "nvidia.com/gpu", "nominalQuota": "16"}]}]}]}},
...     {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
...      "metadata": {"namespace": "team-a", "name": "team-a-queue"}, "spec": {"clusterQueue": "cq"}}]}
>>> is_kueue_document(doc), kueue_queue_configs(doc)[0]["config"]["ml_limits"]
(True, {'max_total_gpus': 16, 'max_total_cpu_cores': 64.0})
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from placer.solver.jobs.errors import Issue, JobValidationError, issue
from placer.solver.jobs.flavors import TREE_AMOUNT
from placer.topology.importers._common import child_map, child_str
from placer.topology.importers.quantity import parse_quantity

__all__ = ["GPU_RESOURCES", "KINDS", "is_kueue_document", "kueue_queue_configs"]

#: Resource names counted as GPUs in a quota.
GPU_RESOURCES = frozenset({"nvidia.com/gpu", "amd.com/gpu"})
#: Kueue kinds this reader takes (ResourceFlavors and Cohorts may come along in a List; they are read past).
KINDS = frozenset({"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort"})


def _kind(obj: Any) -> str | None:
    """An object's ``kind`` when it is text (a hostile document may put anything there)."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    return kind if isinstance(kind, str) else None


def _items(obj: Any) -> list[Any] | None:
    if _kind(obj) in KINDS:
        return [obj]
    if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
        return obj["items"]
    return None


def is_kueue_document(obj: Any) -> bool:
    """A Kueue ClusterQueue or LocalQueue, or a List holding only Kueue objects and at least one of them."""
    items = _items(obj)
    if not items:
        return False
    kinds = {_kind(i) for i in items}
    return kinds <= KINDS and bool(kinds & {"ClusterQueue", "LocalQueue"})


def kueue_queue_configs(obj: Any, source: str = "") -> list[dict[str, Any]]:
    """One OJS §10 queue-configuration document (``{"queue", "config"}``) per LocalQueue whose
    ClusterQueue has a GPU quota (module docstring); :func:`placer.solver.jobs.queues.load_queue_configs`
    validates them as it validates any. Raises :class:`~placer.solver.jobs.errors.JobValidationError`
    naming every problem."""
    where = source or "<config>"
    problems: list[Issue] = []
    quotas: dict[str, int] = {}
    cluster_queues: dict[str, tuple[dict[str, Any], str]] = {}  # name -> (spec, path)
    flavors: dict[str, dict[str, Any]] = {}
    local: dict[str, list[tuple[str, str, str]]] = {}  # LocalQueue name -> [(namespace, ClusterQueue, path)]
    cohort_of: dict[str, str] = {}  # ClusterQueue -> its cohort
    borrowing: dict[str, int | None] = {}  # ClusterQueue in a cohort -> GPUs it may borrow (None: no limit)
    guaranteed: dict[str, int] = {}  # ClusterQueue in a cohort -> GPUs it does not lend (lendingLimit)
    cohorts: dict[str, dict[str, Any]] = {}  # Cohort object -> its CohortNode document
    other_limits: dict[str, dict[str, float]] = {}  # ClusterQueue -> its CPU and memory budgets
    nominals: dict[str, dict[str, float]] = {}  # ClusterQueue in a cohort -> its CPU, memory, pods quotas
    kept: dict[str, dict[str, tuple[float, str]]] = {}  # ... -> by resource, what it does not lend, and where
    preemption: dict[str, dict[str, Any]] = {}  # ClusterQueue -> its QuotaPreemption document
    for i, item in enumerate(_items(obj) or []):
        path = f"{where}: items[{i}]"
        if not isinstance(item, dict):
            problems.append(issue("type", path, "an item must be a Kubernetes object"))
            continue
        meta = child_map(item, "metadata")
        name = meta.get("name")
        raw_spec = item.get("spec")
        spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
        if item.get("kind") == "ResourceFlavor" and isinstance(name, str):
            flavors[name] = _flavor(name, spec, f"{path}.spec", problems)
        elif item.get("kind") == "ClusterQueue" and isinstance(name, str):
            _quota_shape(spec, f"{path}.spec", problems)
            cluster_queues[name] = (spec, f"{path}.spec")
            preemption[name] = _preemption(spec, f"{path}.spec", problems)
            total = _gpu_quota(spec, f"{path}.spec", problems)
            if total is not None:
                quotas[name] = total
            cohort = spec.get("cohort") or spec.get("cohortName")  # v1beta1, v1beta2
            in_cohort = isinstance(cohort, str) and bool(cohort)
            for resource, (key, _) in _RESOURCE_FIELDS.items():
                nominal, amount, keeps = _resource_quota(spec, f"{path}.spec", resource, in_cohort, problems)
                if amount is not None:
                    other_limits.setdefault(name, {})[key] = amount
                if nominal is not None and in_cohort:
                    nominals.setdefault(name, {})[key] = nominal
                if keeps is not None:
                    kept.setdefault(name, {})[resource] = keeps
            if isinstance(cohort, str) and cohort:
                cohort_of[name] = cohort
                borrowing[name] = _gpu_borrowing(spec, f"{path}.spec", problems)
                guaranteed[name] = _gpu_guaranteed(spec, f"{path}.spec", problems)
        elif item.get("kind") == "Cohort" and isinstance(name, str):
            _quota_shape(spec, f"{path}.spec", problems)
            cohorts[name] = _cohort_node(name, spec, f"{path}.spec", problems)
        elif item.get("kind") == "LocalQueue" and isinstance(name, str):
            cq = spec.get("clusterQueue")
            if not isinstance(cq, str) or not cq:
                problems.append(
                    issue("required", f"{path}.spec.clusterQueue", "a LocalQueue names its ClusterQueue")
                )
                continue
            local.setdefault(name, []).append((str(meta.get("namespace") or "default"), cq, path))
    groups = {
        cq: _flavor_groups(spec, at, flavors, cq in cohort_of, problems) if flavors else []
        for cq, (spec, at) in cluster_queues.items()
    }
    users: dict[str, list[tuple[str, str]]] = {}  # ClusterQueue -> its LocalQueues (namespace, name)
    for name, entries in local.items():
        for namespace, cq, path in entries:
            if cq not in cluster_queues:
                why = f"no ClusterQueue {cq!r} in the document"
                problems.append(issue("dependency", f"{path}.spec.clusterQueue", why))
                continue
            users.setdefault(cq, []).append((namespace, name))
    chains = _cohort_chains(cohort_of, cohorts, where, problems)
    for cq, cohort in cohort_of.items():  # a tree's ClusterQueue with no LocalQueue: its quota, less what
        if cq not in users and cohort in chains:  # it keeps, is a pool of its cohort (nothing runs there)
            node = cohorts.setdefault(cohort, {"name": cohort})
            node["nominal_gpus"] = node.get("nominal_gpus", 0) + quotas.get(cq, 0) - guaranteed.get(cq, 0)
            for resource, suffix in _TREE_AMOUNTS.items():
                own = nominals.get(cq, {}).get(_RESOURCE_FIELDS[resource][0])
                if own is not None:
                    unlent = kept.get(cq, {}).get(resource, (0, ""))[0]
                    node[f"nominal_{suffix}"] = node.get(f"nominal_{suffix}", 0) + own - unlent
            for name, limits in _raw_flavors(cluster_queues[cq][0]).items():  # the same per flavor
                pool = node.setdefault("flavor_quotas", {}).setdefault(name, {})
                for key, value in limits.items():
                    if key.startswith("nominal_"):
                        lent = limits.get(key.replace("nominal_", "lending_"), value)
                        pool[key] = pool.get(key, 0.0) + lent
    tree_totals = _tree_totals(cohort_of, cohorts, chains, quotas, users, guaranteed)
    tree_flavors = _tree_flavors(cluster_queues, cohort_of, cohorts, chains)
    totals: dict[str, int] = {}  # cohort -> the nominal GPU quotas of its ClusterQueues
    res_totals: dict[str, dict[str, float]] = {}  # cohort -> its CQs' nominal CPU, memory and pods quotas
    for cq, cohort in cohort_of.items():
        for key, amount in nominals.get(cq, {}).items():
            res_totals.setdefault(cohort, {})[key] = res_totals.get(cohort, {}).get(key, 0) + amount
        for resource, (amount, _) in kept.get(cq, {}).items():
            if cohort not in chains and cq not in users:  # no LocalQueue: what it keeps stays unused,
                res_totals[cohort][_RESOURCE_FIELDS[resource][0]] -= amount  # out of the cohort's total
        totals[cohort] = totals.get(cohort, 0) + quotas.get(cq, 0)
        if cq not in users:  # no LocalQueue: nothing runs there, and what it does not lend stays unused
            totals[cohort] -= guaranteed.get(cq, 0)
    flavor_totals = _cohort_flavor_totals(cluster_queues, cohort_of, chains, users) if flavors else {}
    out: list[dict[str, Any]] = []
    for cq, members in users.items():
        config: dict[str, Any] = {}
        cohort = cohort_of.get(cq)
        raw = _raw_flavors(cluster_queues[cq][0]) if cohort is not None else {}
        for group in groups[cq]:  # its cohort's totals on each flavor, and what it keeps there
            for entry in group["flavors"]:
                for field in ("max_gpus", "max_cpu_cores", "max_memory_gb", "max_pods"):
                    shared = flavor_totals.get((cohort or "", field, entry["name"]))
                    if shared is None:
                        continue
                    entry[f"cohort_{field}"] = int(shared) if field == "max_pods" else shared
                    suffix = field.removeprefix("max_")
                    limits = raw.get(entry["name"], {})
                    if f"lending_{suffix}" in limits and f"nominal_{suffix}" in limits:
                        unlent = limits[f"nominal_{suffix}"] - limits[f"lending_{suffix}"]
                        if unlent > 0:
                            entry.setdefault("tree_quota", {})[f"guaranteed_{suffix}"] = unlent
        if cohort is not None:  # nominal plus what it may borrow, and the cohort's total
            more = borrowing[cq]
            if more is not None:
                config["ml_limits"] = {"max_total_gpus": quotas.get(cq, 0) + more}
            config["cohort"] = {"name": cohort, "max_total_gpus": totals[cohort]}
            if guaranteed.get(cq):
                config["cohort"]["guaranteed_gpus"] = guaranteed[cq]
            if cohort not in chains:  # a flat cohort: its CPU, memory and pods totals and what it keeps
                config["cohort"].update(res_totals.get(cohort, {}))
                for resource, (amount, _) in kept.get(cq, {}).items():
                    config["cohort"][_RESOURCE_FIELDS[resource][1]] = amount
            else:  # a tree: its rules, not one total, for GPUs and each resource the queue has a quota of
                config["cohort"].update(
                    max_total_gpus=tree_totals[chains[cohort][-1]],
                    nominal_gpus=quotas.get(cq, 0),
                    tree=[cohorts.get(c, {"name": c}) | {"parent": p} for c, p in _pairs(chains[cohort])],
                )
                for resource, suffix in _TREE_AMOUNTS.items():
                    own = nominals.get(cq, {}).get(_RESOURCE_FIELDS[resource][0])
                    if own is not None:
                        config["cohort"][f"nominal_{suffix}"] = own
                for resource, (unlent, _) in kept.get(cq, {}).items():
                    config["cohort"][_RESOURCE_FIELDS[resource][1]] = unlent
                per_flavor = tree_flavors.get(chains[cohort][-1], set())
                for group in groups[cq] if per_flavor else ():  # its quota on each flavor, for the trees
                    for entry in group["flavors"]:  # kept per flavor (two flavors or more of a resource)
                        limits = raw.get(entry["name"], {})
                        tree: dict[str, float] = {}
                        for suffix in per_flavor:
                            if f"nominal_{suffix}" not in limits:
                                continue
                            nominal = limits[f"nominal_{suffix}"]
                            tree[f"nominal_{suffix}"] = nominal
                            if f"lending_{suffix}" in limits:
                                tree[f"guaranteed_{suffix}"] = max(0.0, nominal - limits[f"lending_{suffix}"])
                        if tree:
                            entry["tree_quota"] = tree
        elif cq in quotas:  # a ClusterQueue without a GPU quota sets no GPU budget
            config["ml_limits"] = {"max_total_gpus": quotas[cq]}
        if cq in other_limits:
            config["ml_limits"] = {**config.get("ml_limits", {}), **other_limits[cq]}
        if groups[cq]:
            config["flavor_groups"] = groups[cq]
        if not config:
            continue
        config["preemption"] = preemption[cq]
        name = members[0][1]
        if len(members) == 1 and len(local[name]) == 1:  # one LocalQueue, its name unique: it is the queue
            out.append({"queue": name, "config": config})
        else:  # shared, or a name used in several namespaces: the ClusterQueue, by namespace/name
            config["local_queues"] = sorted(f"{ns}/{lq}" for ns, lq in members)
            out.append({"queue": cq, "config": config})
    named: dict[str, int] = {}
    for entry in out:
        named[entry["queue"]] = named.get(entry["queue"], 0) + 1
    for queue, times in named.items():
        if times > 1:
            why = f"queue {queue!r} would be both a LocalQueue's and a shared ClusterQueue's name"
            problems.append(issue("conflict", where, why))
    for entry in out:  # a pod naming a LocalQueue of the key's name but of another ClusterQueue
        listed = set(entry["config"].get("local_queues", ()))
        strays = [f"{ns}/{entry['queue']}" for ns, _, _ in local.get(entry["queue"], ())]
        for lq in (x for x in strays if listed and x not in listed):
            why = f"LocalQueue {lq!r} is not in ClusterQueue {entry['queue']!r}, whose queue has its name"
            problems.append(issue("conflict", where, why))
    if problems:
        raise JobValidationError(problems)
    return out


#: Kueue's preemption policies (``ClusterQueuePreemption``), each read as whether an eviction of a
#: lower-priority job gives its quota back (placer evicts only for strictly higher priority).
_WITHIN_QUEUE = {
    "Never": "never",
    "LowerPriority": "lower-priority",
    "LowerOrNewerEqualPriority": "lower-priority",
}
_RECLAIM = ("Never", "LowerPriority", "Any")
_BORROW = ("Never", "LowerPriority")


def _preemption(spec: dict[str, Any], path: str, problems: list[Issue]) -> dict[str, Any]:
    """A ClusterQueue's ``preemption`` as a :class:`~placer.solver.jobs.queues.QuotaPreemption` document.

    ``withinClusterQueue`` (default ``Never``) is ``within_queue``: ``Never`` frees no quota by evicting
    the queue's own jobs; ``LowerPriority`` and ``LowerOrNewerEqualPriority`` do for its lower-priority
    ones (placer never evicts an equal). Kueue reclaims a cohort's quota by preemption under
    ``reclaimWithinCohort`` only when the preemptor fits within its ClusterQueue's nominal quota, and under
    ``borrowWithinCohort`` when it borrows; placer's engines do not tell the two apart, so ``within_cohort``
    is ``lower-priority`` only when both allow it (``reclaimWithinCohort`` not ``Never`` and
    ``borrowWithinCohort.policy: LowerPriority``, its ``maxPriorityThreshold`` kept as
    ``within_cohort_max_priority``), else ``never``: stricter than Kueue where only one does, never
    looser. An unknown policy is refused, naming it."""
    raw = spec.get("preemption")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        problems.append(issue("type", f"{path}.preemption", "must be an object"))
        return {"within_queue": "never", "within_cohort": "never"}  # Kueue's defaults

    def policy(field: str, allowed: tuple[str, ...] | dict[str, str], value: Any) -> str:
        value = "Never" if value is None else value
        if not isinstance(value, str) or value not in allowed:
            why = f"{value!r} is not one of {', '.join(allowed)}"
            problems.append(issue("enum", f"{path}.preemption.{field}", why))
            return "Never"
        return value

    within = policy("withinClusterQueue", _WITHIN_QUEUE, raw.get("withinClusterQueue"))
    reclaim = policy("reclaimWithinCohort", _RECLAIM, raw.get("reclaimWithinCohort"))
    borrow_raw = raw.get("borrowWithinCohort")
    if borrow_raw is not None and not isinstance(borrow_raw, dict):
        problems.append(issue("type", f"{path}.preemption.borrowWithinCohort", "must be an object"))
        borrow_raw = {}
    borrow = policy("borrowWithinCohort.policy", _BORROW, (borrow_raw or {}).get("policy"))
    cap = (borrow_raw or {}).get("maxPriorityThreshold")
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool)):
        at = f"{path}.preemption.borrowWithinCohort.maxPriorityThreshold"
        problems.append(issue("type", at, "must be an integer (a priority)"))
        cap = None
    cohort = reclaim != "Never" and borrow == "LowerPriority"
    out: dict[str, Any] = {
        "within_queue": _WITHIN_QUEUE.get(within, "never"),
        "within_cohort": "lower-priority" if cohort else "never",
    }
    if cohort and cap is not None:
        out["within_cohort_max_priority"] = cap
    return out


def _gpu_resources(spec: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, resource) of every GPU resource of a ClusterQueue's flavors (``nvidia.com/gpu`` and the
    other :data:`GPU_RESOURCES`), in document order; containers of the wrong type are skipped (the queue
    configuration's model names them)."""
    for g, group in enumerate(_as_list(spec.get("resourceGroups"))):
        for f, flavor in enumerate(_as_list(group.get("flavors") if isinstance(group, dict) else None)):
            for r, res in enumerate(_as_list(flavor.get("resources") if isinstance(flavor, dict) else None)):
                if (
                    isinstance(res, dict)
                    and isinstance(res.get("name"), str)
                    and res["name"] in GPU_RESOURCES
                ):
                    yield f"{path}.resourceGroups[{g}].flavors[{f}].resources[{r}]", res


def _whole_gpus(value: Any, at: str, what: str, problems: list[Issue]) -> int | None:
    """``value`` (a Kubernetes quantity) as a whole, non-negative number of GPUs; None and a problem
    naming ``at`` otherwise."""
    try:
        q = parse_quantity(value)
    except (ValueError, TypeError) as e:
        problems.append(issue("type", at, f"not a Kubernetes quantity: {e}"))
        return None
    if q != q.to_integral_value() or q < 0:
        problems.append(issue("range", at, f"a GPU {what} is a whole number, got {q}"))
        return None
    return int(q)


def _gpu_borrowing(spec: dict[str, Any], path: str, problems: list[Issue]) -> int | None:
    """The GPUs a ClusterQueue of a cohort may borrow beyond its nominal quota: its GPU resources'
    ``borrowingLimit`` summed over its flavors; None when one of them has none (Kueue then lets it borrow
    all the cohort leaves unused)."""
    total: int | None = 0
    for at, res in _gpu_resources(spec, path):
        if res.get("borrowingLimit") is None:
            total = None
            continue
        value = _whole_gpus(res["borrowingLimit"], f"{at}.borrowingLimit", "limit", problems)
        if value is not None and total is not None:
            total += value
    return total


def _gpu_guaranteed(spec: dict[str, Any], path: str, problems: list[Issue]) -> int:
    """The GPUs a ClusterQueue of a cohort does not lend: over its GPU resources with a ``lendingLimit``,
    the nominal quota minus that limit (Kueue lends at most ``lendingLimit`` of a quota to the cohort and
    keeps the rest for the queue's own workloads, used or not). A limit that is not a whole number of GPUs
    or exceeds the nominal quota is refused, naming it (Kueue's own validation refuses it too)."""
    total = 0
    for at, res in _gpu_resources(spec, path):
        if res.get("lendingLimit") is None:
            continue
        lend = _whole_gpus(res["lendingLimit"], f"{at}.lendingLimit", "limit", problems)
        nominal = _whole_gpus(res.get("nominalQuota"), f"{at}.nominalQuota", "quota", [])
        if lend is None or nominal is None:
            continue
        if lend > nominal:
            problems.append(
                issue("range", f"{at}.lendingLimit", f"{lend} is more than the nominal quota {nominal}")
            )
            continue
        total += nominal - lend
    return total


def _cohort_node(name: str, spec: dict[str, Any], path: str, problems: list[Issue]) -> dict[str, Any]:
    """A ``Cohort`` object as a :class:`~placer.solver.jobs.queues.CohortNode` document: its parent
    (``spec.parent``, v1beta1 ``spec.parentName``) and its GPU quota, lending and borrowing limits summed
    over flavors. A lending limit on some GPU flavors and not others is refused (placer sums flavors, and
    what a cohort keeps of each flavor depends on its children's)."""
    node: dict[str, Any] = {"name": name}
    parent = spec.get("parentName") or spec.get("parent")
    if parent is not None and (not isinstance(parent, str) or not parent):
        problems.append(issue("type", f"{path}.parentName", "a Cohort's parent is a Cohort's name"))
    elif parent:
        node["parent"] = parent
    for resource, amount in _TREE_AMOUNTS.items():
        node.update(_cohort_amounts(spec, path, resource, amount, problems))
    per_flavor: dict[str, dict[str, float]] = {}
    for group in _as_list(spec.get("resourceGroups")):
        for flavor in _as_list(group.get("flavors") if isinstance(group, dict) else None):
            if isinstance(flavor, dict) and isinstance(flavor.get("name"), str) and _flavor_limits(flavor):
                per_flavor[flavor["name"]] = _flavor_limits(flavor)
    if per_flavor:
        node["flavor_quotas"] = per_flavor
    resources = list(_gpu_resources(spec, path))
    if not resources:
        return node
    node["nominal_gpus"] = _gpu_quota(spec, path, problems) or 0
    if all(res.get("borrowingLimit") is not None for _, res in resources):
        node["borrowing_gpus"] = _gpu_borrowing(spec, path, problems)
    lending = [(at, res.get("lendingLimit")) for at, res in resources]
    if all(v is not None for _, v in lending):
        node["lending_gpus"] = sum(
            _whole_gpus(v, f"{at}.lendingLimit", "limit", problems) or 0 for at, v in lending
        )
    elif any(v is not None for _, v in lending):
        at = next(at for at, v in lending if v is not None)
        why = "a lendingLimit on some of a Cohort's GPU flavors and not others is not modelled"
        problems.append(issue("unsupported", f"{at}.lendingLimit", why))
    return node


#: A Kubernetes resource a tree of cohorts counts beside GPUs -> the suffix of its quota fields
#: (``nominal_cpu_cores``, ``lending_memory_gb``...).
_TREE_AMOUNTS = {r: a for r, a in TREE_AMOUNT.items() if r != "gpus"}


def _named_resources(spec: dict[str, Any], path: str, resource: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each entry of ``resource`` in ``spec.resourceGroups[].flavors[].resources[]``, with its path."""
    for g, group in enumerate(_as_list(spec.get("resourceGroups"))):
        for f, flavor in enumerate(_as_list(group.get("flavors") if isinstance(group, dict) else None)):
            for r, res in enumerate(_as_list(flavor.get("resources") if isinstance(flavor, dict) else None)):
                if isinstance(res, dict) and res.get("name") == resource:
                    yield f"{path}.resourceGroups[{g}].flavors[{f}].resources[{r}]", res


def _cohort_amounts(
    spec: dict[str, Any], path: str, resource: str, amount: str, problems: list[Issue]
) -> dict[str, Any]:
    """A ``Cohort`` object's own quota of ``resource`` (``cpu``, ``memory``, ``pods``), summed over its
    flavors, with its lending and borrowing limits (summed, when every flavor of it has one), as
    :class:`~placer.solver.jobs.queues.CohortNode` fields; none without a quota of it. A lending limit on
    some of its flavors and not others is refused, as for GPUs."""
    nominal: float | None = None
    lending: list[tuple[str, Any]] = []
    borrowing: list[Any] = []
    for at, res in _named_resources(spec, path, resource):
        value = _amount(res.get("nominalQuota"), f"{at}.nominalQuota", resource, problems)
        nominal = (nominal or 0) + (value or 0)
        lending.append((f"{at}.lendingLimit", res.get("lendingLimit")))
        more = res.get("borrowingLimit")
        borrowing.append(None if more is None else _amount(more, f"{at}.borrowingLimit", resource, problems))
    if nominal is None:
        return {}
    out: dict[str, Any] = {f"nominal_{amount}": nominal}
    if all(b is not None for b in borrowing):
        out[f"borrowing_{amount}"] = sum(borrowing)
    if all(v is not None for _, v in lending):
        out[f"lending_{amount}"] = sum(_amount(v, at, resource, problems) or 0 for at, v in lending)
    elif any(v is not None for _, v in lending):
        at = next(at for at, v in lending if v is not None)
        why = f"a lendingLimit on some of a Cohort's {resource} flavors and not others is not modelled"
        problems.append(issue("unsupported", at, why))
    return out


def _cohort_chains(
    cohort_of: dict[str, str], cohorts: dict[str, dict[str, Any]], where: str, problems: list[Issue]
) -> dict[str, list[str]]:
    """Per cohort of a tree — a Cohort object with a parent or a quota is in the tree, and so is every
    cohort above or below one — the cohorts from it up to the root. A cycle of parents is refused."""
    chains: dict[str, list[str]] = {}
    for start in {*cohort_of.values(), *cohorts}:
        chain = [start]
        while (parent := cohorts.get(chain[-1], {}).get("parent")) is not None:
            if parent in chain:
                why = f"cohort parents make a cycle ({' -> '.join([*chain, parent])})"
                problems.append(issue("conflict", where, why))
                break
            chain.append(parent)
        else:
            if len(chain) > 1 or any(set(cohorts.get(c, {})) - {"name"} for c in chain):
                chains[start] = chain
    roots = {chain[-1] for chain in chains.values()}
    for start in {*cohort_of.values(), *cohorts}:  # a flat cohort whose root is a tree's root is in it
        if start not in chains and start in roots:
            chains[start] = [start]
    return chains


def _pairs(chain: list[str]) -> list[tuple[str, str | None]]:
    """(cohort, its parent) along ``chain`` (the root's parent None)."""
    return [(c, chain[i + 1] if i + 1 < len(chain) else None) for i, c in enumerate(chain)]


def _tree_totals(
    cohort_of: dict[str, str],
    cohorts: dict[str, dict[str, Any]],
    chains: dict[str, list[str]],
    quotas: dict[str, int],
    users: dict[str, Any],
    guaranteed: dict[str, int],
) -> dict[str, int]:
    """Per tree root, every nominal GPU quota in the tree: its ClusterQueues' with a LocalQueue (those
    without are already their cohort's pool) and its cohorts' own (``max_total_gpus``, for information)."""
    out: dict[str, int] = {}
    for cq, cohort in cohort_of.items():
        if cohort in chains and cq in users:
            root = chains[cohort][-1]
            out[root] = out.get(root, 0) + quotas.get(cq, 0)
    for name, node in cohorts.items():
        if name in chains:
            root = chains[name][-1]
            out[root] = out.get(root, 0) + node.get("nominal_gpus", 0)
    return out


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _quota_shape(spec: dict[str, Any], path: str, problems: list[Issue]) -> None:
    """A ``type`` problem for each part of ``spec.resourceGroups`` that is not the shape Kueue's API gives it
    (a list of groups, each with a list of ``flavors``, each with a list of ``resources``, each an object
    with a ``name``). Why: the readers walk these leniently, and a quota in a malformed part would be read
    as no quota at all — a queue without a budget, looser than Kueue.

    >>> problems = []
    >>> _quota_shape({"resourceGroups": [{"flavors": {"name": "h100"}}]}, "cq.spec", problems)
    >>> [(p.code, p.path) for p in problems]
    [('type', 'cq.spec.resourceGroups[0].flavors')]
    """
    groups = spec.get("resourceGroups")
    if groups is None:
        return
    if not isinstance(groups, list):
        problems.append(issue("type", f"{path}.resourceGroups", "a list of resource groups"))
        return
    for g, group in enumerate(groups):
        at = f"{path}.resourceGroups[{g}]"
        flavors = group.get("flavors") if isinstance(group, dict) else None
        if not isinstance(flavors, list):
            problems.append(
                issue("type", f"{at}.flavors" if isinstance(group, dict) else at, "a list of flavors")
            )
            continue
        for f, flavor in enumerate(flavors):
            resources = flavor.get("resources") if isinstance(flavor, dict) else None
            where = f"{at}.flavors[{f}]"
            if not isinstance(resources, list):
                problems.append(
                    issue(
                        "type",
                        f"{where}.resources" if isinstance(flavor, dict) else where,
                        "a list of resources",
                    )
                )
                continue
            for r, res in enumerate(resources):
                if not isinstance(res, dict) or not isinstance(res.get("name"), str):
                    problems.append(issue("type", f"{where}.resources[{r}]", "a resource with a name"))


def _gpu_quota(spec: dict[str, Any], path: str, problems: list[Issue]) -> int | None:
    """The GPUs of a ClusterQueue's nominal quotas, summed over its flavors; None without a GPU quota."""
    total = None
    for at, res in _gpu_resources(spec, path):
        value = _whole_gpus(res.get("nominalQuota"), f"{at}.nominalQuota", "quota", problems)
        if value is not None:
            total = (total or 0) + value
    return total


#: Bytes per GB (placer's memory unit, GB of 2^30 bytes).
_GB = 2**30
#: A Kubernetes resource counted as a budget -> its fields in a queue configuration: the budget (and the
#: cohort's total), and what the queue keeps of it in a cohort (``config.cohort.guaranteed_*``).
_RESOURCE_FIELDS = {
    "cpu": ("max_total_cpu_cores", "guaranteed_cpu_cores"),
    "memory": ("max_total_memory_gb", "guaranteed_memory_gb"),
    "pods": ("max_total_pods", "guaranteed_pods"),
}


def _resource_quota(
    spec: dict[str, Any], path: str, resource: str, in_cohort: bool, problems: list[Issue]
) -> tuple[float | None, float | None, tuple[float, str] | None]:
    """A ClusterQueue's nominal quota of ``resource`` (``cpu`` in cores, ``memory`` in GB of 2^30 bytes),
    summed over its flavors; its budget of it: the nominal quota, plus in a cohort its ``borrowingLimit``
    (None when one flavor has none: Kueue then lets it borrow whatever the cohort leaves, which the
    cohort's total bounds); and in a cohort what it keeps of it, with the path of the first
    ``lendingLimit`` that keeps some: over the flavors with a ``lendingLimit``, the quota minus the limit
    (Kueue lends at most the limit to the cohort; None when no flavor keeps any). (None, None, None)
    without a quota of it. A value that is not a non-negative quantity is a problem naming it; so is a
    ``lendingLimit`` above the quota (Kueue's validation refuses it too)."""
    nominal: float | None = None
    borrow: float | None = 0  # whole for pods, where every amount is
    keeps: tuple[float, str] | None = None
    for at, res in _named_resources(spec, path, resource):
        value = _amount(res.get("nominalQuota"), f"{at}.nominalQuota", resource, problems)
        if value is not None:
            nominal = (nominal or 0) + value
        if in_cohort and res.get("lendingLimit") is not None and value is not None:
            lend = _amount(res["lendingLimit"], f"{at}.lendingLimit", resource, problems)
            if lend is not None and lend > value:
                why = f"{lend:g} is more than the nominal quota {value:g}"
                problems.append(issue("range", f"{at}.lendingLimit", why))
            elif lend is not None and lend < value:  # it keeps the rest for its own workloads
                was, first = keeps if keeps is not None else (0, f"{at}.lendingLimit")
                keeps = (was + value - lend, first)
        if res.get("borrowingLimit") is None:
            borrow = None
        else:
            more = _amount(res["borrowingLimit"], f"{at}.borrowingLimit", resource, problems)
            if more is not None and borrow is not None:
                borrow += more
    if nominal is None or not in_cohort:
        return nominal, nominal, None
    return nominal, None if borrow is None else nominal + borrow, keeps


def _amount(value: Any, at: str, resource: str, problems: list[Issue]) -> float | None:
    """``value`` (a Kubernetes quantity) in placer's unit of ``resource`` (cores; GB for memory; a whole
    count of pods); None and a problem naming ``at`` when it is not a non-negative quantity (or, for pods,
    not a whole one)."""
    try:
        q = parse_quantity(value)
    except (ValueError, TypeError) as e:
        problems.append(issue("type", at, f"not a Kubernetes quantity: {e}"))
        return None
    if q < 0:
        problems.append(issue("range", at, f"a quota is not negative, got {q}"))
        return None
    if resource == "pods":
        if q != q.to_integral_value():
            problems.append(issue("range", at, f"a pods quota is a whole number, got {q}"))
            return None
        return int(q)
    return float(q) / _GB if resource == "memory" else float(q)


def _flavor(name: str, spec: dict[str, Any], path: str, problems: list[Issue]) -> dict[str, Any]:
    """A ResourceFlavor as a :class:`~placer.solver.jobs.flavors.Flavor` document (validated by the queue
    configuration's model, which names a wrong field); wrong container types are named here."""
    out: dict[str, Any] = {"name": name}
    for field, key, kind in (
        ("nodeLabels", "node_labels", dict),
        ("nodeTaints", "node_taints", list),
        ("tolerations", "tolerations", list),
    ):
        value = spec.get(field)
        if value is None:
            continue
        if not isinstance(value, kind):
            what = "an object" if kind is dict else "a list"
            problems.append(issue("type", f"{path}.{field}", f"must be {what}"))
            continue
        if field == "nodeTaints":  # v1.Taint; timeAdded is bookkeeping
            value = [
                {k: v for k, v in t.items() if k != "timeAdded"} if isinstance(t, dict) else t for t in value
            ]
        out[key] = value
    return out


def _flavor_groups(
    spec: dict[str, Any],
    path: str,
    flavors: dict[str, dict[str, Any]],
    in_cohort: bool,
    problems: list[Issue],
) -> list[dict[str, Any]]:
    """A ClusterQueue's resource groups as ``flavor_groups`` (covered resources, their flavors in order),
    each flavor with the ClusterQueue's quotas on it (``max_gpus``, ``max_cpu_cores``, ``max_memory_gb``,
    ``max_pods``: nominal, plus the borrowing limit in a cohort; left out when the flavor has no quota of
    that resource, or in a cohort without a borrowing limit of it)."""
    out: list[dict[str, Any]] = []
    groups = spec.get("resourceGroups")
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        if not isinstance(group, dict):
            continue
        covered = group.get("coveredResources")
        listed = group.get("flavors")
        if not isinstance(listed, list) or not isinstance(covered, list):
            bad = "flavors" if not isinstance(listed, list) else "coveredResources"
            problems.append(issue("type", f"{path}.resourceGroups[{g}].{bad}", "must be a list"))
            continue
        names = [f["name"] for f in listed if isinstance(f, dict) and isinstance(f.get("name"), str)]
        missing = [n for n in names if n not in flavors]
        for n in missing:
            problems.append(
                issue(
                    "dependency",
                    f"{path}.resourceGroups[{g}].flavors",
                    f"no ResourceFlavor {n!r} in the document",
                )
            )
        if missing or not names or not isinstance(covered, list):
            continue
        listed_ok = [f for f in listed if isinstance(f, dict) and isinstance(f.get("name"), str)]
        entries = []
        for f, flavor in zip(listed_ok, names, strict=True):
            entries.append({**flavors[flavor], **_flavor_quotas(f, in_cohort)})
        out.append({"covered": [str(c) for c in covered], "flavors": entries})
    return out


def _flavor_quotas(flavor: dict[str, Any], in_cohort: bool) -> dict[str, float]:
    """One flavor entry's quotas, as :class:`~placer.solver.jobs.flavors.Flavor` fields: per resource
    (its GPU resources together; ``cpu``, ``memory``, ``pods``) its ``nominalQuota``, plus
    ``borrowingLimit`` in a cohort; left out without a quota of it, or in a cohort when one has no
    borrowing limit. Bad values are named by the ClusterQueue's quota reading (:func:`_gpu_quota`,
    :func:`_resource_quota`), not again here.

    >>> quotas = [{"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "512Gi"},
    ...           {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 4}]
    >>> _flavor_quotas({"resources": quotas}, False)
    {'max_cpu_cores': 64.0, 'max_memory_gb': 512.0, 'max_gpus': 8.0}
    >>> _flavor_quotas({"resources": quotas}, True)  # in a cohort: only what has a borrowing limit
    {'max_gpus': 12.0}
    """
    out: dict[str, float] = {}
    lost: set[str] = set()
    for res in _as_list(flavor.get("resources")):
        name = child_str(res, "name", "") if isinstance(res, dict) else ""
        field = "max_gpus" if name in GPU_RESOURCES else _QUOTA_FIELDS.get(name)
        if field is None or field in lost:
            continue
        nominal: float | None
        more: float | None
        if field == "max_gpus":
            nominal = _whole_gpus(res.get("nominalQuota"), "", "quota", [])
            more = (
                None
                if res.get("borrowingLimit") is None
                else _whole_gpus(res["borrowingLimit"], "", "limit", [])
            )
        else:
            nominal = _amount(res.get("nominalQuota"), "", name, [])
            more = None if res.get("borrowingLimit") is None else _amount(res["borrowingLimit"], "", name, [])
        if nominal is None or (in_cohort and more is None):
            lost.add(field)
            out.pop(field, None)
            continue
        out[field] = out.get(field, 0.0) + nominal + (more if in_cohort and more is not None else 0)
    return out


#: The :class:`~placer.solver.jobs.flavors.Flavor` field of each node resource's per-flavor quota.
_QUOTA_FIELDS = {"cpu": "max_cpu_cores", "memory": "max_memory_gb", "pods": "max_pods"}


def _flavor_lent(flavor: dict[str, Any], lends_only: bool) -> dict[str, float]:
    """What one flavor entry of a ClusterQueue of a flat cohort brings the cohort's total on the flavor,
    per :class:`~placer.solver.jobs.flavors.Flavor` quota field: its ``nominalQuota`` (GPU resources
    together); with ``lends_only`` (a ClusterQueue without a LocalQueue: nothing of its own runs), only
    what it lends (its ``lendingLimit`` where it has one). From :func:`_flavor_limits`.

    >>> _flavor_lent({"resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 2}]}, True)
    {'max_gpus': 2.0}
    """
    limits = _flavor_limits(flavor)
    return {
        f"max_{key.removeprefix('nominal_')}": limits.get(key.replace("nominal_", "lending_"), value)
        if lends_only
        else value
        for key, value in limits.items()
        if key.startswith("nominal_")
    }


#: A ClusterQueue or Cohort resource -> the suffix of its quota fields in a tree (GPU resources together).
_TREE_SUFFIX = {**dict.fromkeys(sorted(GPU_RESOURCES), "gpus"), **_TREE_AMOUNTS}


def _flavor_limits(flavor: dict[str, Any]) -> dict[str, float]:
    """One flavor entry's quotas for a tree of cohorts, by field (``nominal_gpus``, ``lending_gpus``,
    ``borrowing_gpus``, ``nominal_cpu_cores``...): each resource's ``nominalQuota`` and, where given, its
    ``lendingLimit`` and ``borrowingLimit`` (GPU resources together). Bad values are named elsewhere.

    >>> _flavor_limits({"resources": [{"name": "cpu", "nominalQuota": "8", "lendingLimit": "2"}]})
    {'nominal_cpu_cores': 8.0, 'lending_cpu_cores': 2.0}
    """
    out: dict[str, float] = {}
    for res in _as_list(flavor.get("resources")):
        name = child_str(res, "name", "") if isinstance(res, dict) else ""
        suffix = _TREE_SUFFIX.get(name)
        if suffix is None:
            continue
        kind = "memory" if name == "memory" else "pods" if name == "pods" else "cpu"
        for field, key in (
            ("nominalQuota", "nominal"),
            ("lendingLimit", "lending"),
            ("borrowingLimit", "borrowing"),
        ):
            if res.get(field) is None:
                continue
            value = (
                _whole_gpus(res[field], "", "quota", [])
                if suffix == "gpus"
                else _amount(res[field], "", kind, [])
            )
            if value is not None:
                out[f"{key}_{suffix}"] = out.get(f"{key}_{suffix}", 0.0) + value
    return out


def _raw_flavors(spec: dict[str, Any]) -> dict[str, dict[str, float]]:
    """A ClusterQueue's flavors by name, each with :func:`_flavor_limits`."""
    out: dict[str, dict[str, float]] = {}
    for group in _as_list(spec.get("resourceGroups")):
        for flavor in _as_list(group.get("flavors") if isinstance(group, dict) else None):
            if isinstance(flavor, dict) and isinstance(flavor.get("name"), str):
                out[flavor["name"]] = _flavor_limits(flavor)
    return out


def _tree_flavors(
    cluster_queues: dict[str, tuple[dict[str, Any], str]],
    cohort_of: dict[str, str],
    cohorts: dict[str, dict[str, Any]],
    chains: dict[str, list[str]],
) -> dict[str, set[str]]:
    """Per tree root, the quota suffixes (``gpus``, ``cpu_cores``...) its ClusterQueues and Cohorts give
    on two flavors or more: the trees placer keeps per flavor for them (on one flavor, the tree of the
    resource summed over flavors says the same)."""
    seen: dict[tuple[str, str], set[str]] = {}  # (root, suffix) -> flavors
    for cq, cohort in cohort_of.items():
        if cohort not in chains:
            continue
        root = chains[cohort][-1]
        for group in _as_list(cluster_queues[cq][0].get("resourceGroups")):
            for flavor in _as_list(group.get("flavors") if isinstance(group, dict) else None):
                if isinstance(flavor, dict) and isinstance(flavor.get("name"), str):
                    for key in _flavor_limits(flavor):
                        if key.startswith("nominal_"):
                            seen.setdefault((root, key[len("nominal_") :]), set()).add(flavor["name"])
    for name, node in cohorts.items():
        if name in chains:
            for flavor, quotas in node.get("flavor_quotas", {}).items():
                for key in quotas:
                    if key.startswith("nominal_"):
                        seen.setdefault((chains[name][-1], key[len("nominal_") :]), set()).add(flavor)
    out: dict[str, set[str]] = {}
    for (root, suffix), flavors in seen.items():
        if len(flavors) > 1:
            out.setdefault(root, set()).add(suffix)
    return out


def _cohort_flavor_totals(
    cluster_queues: dict[str, tuple[dict[str, Any], str]],
    cohort_of: dict[str, str],
    chains: dict[str, list[str]],
    users: dict[str, Any],
) -> dict[tuple[str, str, str], float]:
    """Per flat cohort, quota field and flavor, the cohort's total on the flavor (:func:`_flavor_lent` of
    each of its ClusterQueues), for the fields the cohort has on two flavors or more (on one, its total
    over flavors says the same)."""
    out: dict[tuple[str, str, str], float] = {}
    for cq, cohort in cohort_of.items():
        if cohort in chains:
            continue
        for group in _as_list(cluster_queues[cq][0].get("resourceGroups")):
            for flavor in _as_list(group.get("flavors") if isinstance(group, dict) else None):
                name = flavor.get("name") if isinstance(flavor, dict) else None
                if not isinstance(name, str):
                    continue
                for field, amount in _flavor_lent(flavor, cq not in users).items():
                    out[(cohort, field, name)] = out.get((cohort, field, name), 0.0) + amount
    flavors: dict[tuple[str, str], int] = {}
    for cohort, field, _ in out:
        flavors[(cohort, field)] = flavors.get((cohort, field), 0) + 1
    return {k: v for k, v in out.items() if flavors[(k[0], k[1])] > 1}
