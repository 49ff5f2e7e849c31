"""Rule 17, queue GPU budgets (OJS ML resources §10.3): after the decision, each queue's active GPU jobs
(running and not evicted, plus placed) hold at most ``max_total_gpus`` GPUs and number at most
``max_concurrent_gpu_jobs``. Re-derived from the inputs, independently of the solver.

CPU and memory budgets (``ml_limits.max_total_cpu_cores``, ``max_total_memory_gb``; a Kueue
ClusterQueue's ``cpu`` and ``memory`` quotas): each queue's active jobs, GPU or not, hold at most that many
cores and GB on nodes (``queue-budget`` too), counted from the replicas' ``cpu_cores`` and ``memory_gb``,
and at most ``max_total_pods`` pods (every replica one; a Kueue ClusterQueue's ``pods`` quota); and the
queues of a cohort with such totals (``config.cohort.max_total_cpu_cores``, ``max_total_memory_gb``,
``max_total_pods``: a Kueue cohort's) hold at most those together.

Per-flavor quotas (a queue's ``flavor_groups``: per resource — GPUs, ``cpu``, ``memory``, ``pods`` — the
group covering it, whose flavors carry ``max_gpus``, ``max_cpu_cores``, ``max_memory_gb`` or ``max_pods``;
a Kueue ClusterQueue's quotas per ResourceFlavor): what the queue's jobs hold of the resource on a
flavor's nodes stays within its quota there (``queue-budget``); a replica on a node counts its GPUs (shares
as fractions), its ``cpu_cores``, its ``memory_gb`` and one pod. A node counts under the first flavor of
the group whose node labels it all has.

Dollar budgets (``cost-budget``): each queue's ``ml_limits.max_cost_per_hour`` and each tenant's
``budgets.tenants`` (prices file) bound the dollars per hour of its active jobs — running and not evicted
(priced from their allocation), plus placed — GPU, TPU and CPU work alike. A replica's price is by
definition :func:`placer.solver.prices.replica_units` (the price is an input, like the catalog it reads: the
checker takes that definition, and re-does the sums itself, in the same integer money units).

A budget is broken by a decision that *adds* to a queue or tenant that ends over it: running jobs alone
over a budget (it was lowered, prices changed) are not the decision's doing, and placing nothing there is
what a decision can do about it.

Evicting a running job gives its room back, but only to jobs that outrank it (OJS ML §8: an eviction is
for strictly higher-priority work): at each rank ``r`` of placed work, the jobs ranked ``r`` or lower must
fit with the evicted jobs they do not outrank still counted.

>>> from placer.solver.decision import Decision
>>> from placer.topology import cluster_of, cpu_nodes
>>> list(check_budgets(Decision(), [], cluster_of(cpu_nodes(1)), {}))
[]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from placer.solver.checks.preemption import rank_of
from placer.solver.checks.violation import Violation
from placer.solver.decision import Decision, JobPlacement
from placer.solver.jobs.model import GpuAffinity, Job
from placer.solver.jobs.queues import QueueConfig
from placer.solver.prices import UNITS_PER_DOLLAR, PriceCatalog, replica_units, to_units
from placer.topology import Cluster

__all__ = ["Rank", "check_budgets"]

Rank = tuple[int, int]


@dataclass
class _Ledger:
    """What one budget holds after the decision: running jobs that stay, and the evicted running jobs and
    the placed jobs with their ranks (evictions give room back only to jobs that outrank the victim)."""

    staying: float = 0.0
    evicted: list[tuple[Rank, float]] = field(default_factory=list)
    placed: list[tuple[Rank, float]] = field(default_factory=list)

    @property
    def total(self) -> float:
        return self.staying + sum(a for _, a in self.placed)

    @property
    def added(self) -> bool:
        return any(a > 0 for _, a in self.placed)

    def at_level(self, r: Rank) -> float:
        """What counts for jobs ranked <= ``r``: what stays, the evicted jobs they do not outrank
        (evicting them freed room only for higher work), and what is placed of rank ``r`` or lower."""
        return (
            self.staying
            + sum(a for rank, a in self.evicted if rank >= r)
            + sum(a for rank, a in self.placed if rank <= r)
        )

    def over_at_level(self, limit: float) -> tuple[Rank, float] | None:
        """The lowest rank ``r`` of placed work at which :meth:`at_level` exceeds ``limit``."""
        for r in sorted({rank for rank, a in self.placed if a > 0}):
            used = self.at_level(r)
            if used > limit + 1e-9:
                return r, used
        return None


def _ledgers(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    keys: Callable[[str | None, str | None], list[Any]],
    running_amount: Callable[[Any], float],
    placed_amount: Callable[[Job, JobPlacement], float],
    rank: Callable[[Job], Rank],
    credit: Callable[[Any, Any], bool] | None = None,
) -> dict[Any, _Ledger]:
    """One ledger per budget key: what running jobs (``keys(queue, tenant)`` of each) hold, staying or
    evicted by the decision, and what its placements add; amounts at or below 0 count nowhere.
    ``credit(running job, key)``: whether its eviction gives that budget its room back (else it counts as
    staying)."""

    def running(rj: Any) -> dict[Any, float]:
        ks = keys(rj.queue, rj.tenant)
        amount = running_amount(rj) if ks else 0.0
        return dict.fromkeys(ks, amount) if amount > 0 else {}

    def placed(job: Job, p: JobPlacement) -> dict[Any, float]:
        ks = keys(job.queue, job.tenant)
        amount = placed_amount(job, p) if ks else 0.0
        return dict.fromkeys(ks, amount) if amount > 0 else {}

    return _split_ledgers(decision, jobs, cluster, running, placed, rank, credit)


def _split_ledgers(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    running: Callable[[Any], dict[Any, float]],
    placed: Callable[[Job, JobPlacement], dict[Any, float]],
    rank: Callable[[Job], Rank],
    credit: Callable[[Any, Any], bool] | None = None,
) -> dict[Any, _Ledger]:
    """One ledger per budget key, each running job and placement splitting what it holds among keys
    (``running(rj)``, ``placed(job, placement)``: key -> amount); an evicted running job counts as
    staying where ``credit(rj, key)`` says its eviction gives nothing back."""
    out: dict[Any, _Ledger] = {}
    evicted = {e.job for e in decision.preemptions}
    for rj in cluster.running_jobs():
        for k, amount in running(rj).items():
            ledger = out.setdefault(k, _Ledger())
            if rj.job in evicted and (credit is None or credit(rj, k)):
                ledger.evicted.append((rank_of(rj.priority_class, rj.priority), amount))
            else:
                ledger.staying += amount
    by_id = {j.id: j for j in jobs}
    for p in decision.placements:
        job = by_id.get(p.job)
        for k, amount in (placed(job, p) if job is not None else {}).items():
            out.setdefault(k, _Ledger()).placed.append((rank(job), amount))  # type: ignore[arg-type]
    return out


def check_budgets(
    decision: Decision,
    jobs: Iterable[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    prices: PriceCatalog | None = None,
    rank: Callable[[Job], Rank] | None = None,
) -> Iterator[Violation]:
    """A ``queue-budget`` violation per queue whose GPU limits the decision takes it over, and a
    ``cost-budget`` violation per queue or tenant whose dollar budget it takes it over. With ``rank`` (a
    placed job's rank at the decision time), also where jobs use room freed by evicting running jobs they
    do not outrank (OJS ML §8: evictions are for strictly higher-priority work only)."""
    jobs = list(jobs)
    rank_of_job = rank or (lambda job: rank_of(job.priority_class.value, job.priority))
    yield from _check_gpus(decision, jobs, cluster, queues, rank_of_job)
    yield from _check_resources(decision, jobs, cluster, queues, rank_of_job)
    yield from _check_flavors(decision, jobs, cluster, queues, rank_of_job)
    yield from _check_cohorts(decision, jobs, cluster, queues, rank_of_job)
    yield from _check_cohort_trees(decision, jobs, cluster, queues, rank_of_job)
    yield from _check_costs(decision, jobs, cluster, queues, prices or PriceCatalog.default(), rank_of_job)


def _keeps_queue(queues: Mapping[str, QueueConfig]) -> Callable[[Any, Any], bool]:
    """``credit`` for a queue's own budgets: an eviction gives its room back unless the victim's queue
    says ``preemption.within_queue: never`` (a Kueue ClusterQueue that does not preempt within itself)."""
    closed = {q for q, qc in queues.items() if qc.config.preemption.within_queue == "never"}
    return lambda rj, _: rj.queue not in closed


def _keeps_cohort(queues: Mapping[str, QueueConfig]) -> Callable[[Any, Any], bool]:
    """``credit`` for a cohort's totals: an eviction gives the victim's room back to the cohort only when
    its own queue takes room from its own evictions, and every other queue of the cohort (of its tree: the
    root's) takes room from the others' (``preemption.within_cohort``) at the victim's priority
    (``within_cohort_max_priority``: the highest it takes)."""
    root = {}
    for q, qc in queues.items():
        cohort = qc.config.cohort
        if cohort is not None:
            root[q] = cohort.tree[-1].name if cohort.tree else cohort.name
    members: dict[str, list[str]] = {}
    for q, c in root.items():
        members.setdefault(c, []).append(q)
    own = _keeps_queue(queues)

    def takes(q: str, priority: int) -> bool:
        p = queues[q].config.preemption
        cap = p.within_cohort_max_priority
        return p.within_cohort != "never" and (cap is None or priority <= cap)

    def credit(rj: Any, key: Any) -> bool:
        others = [q for q in members.get(root.get(rj.queue, ""), []) if q != rj.queue]
        return own(rj, key) and all(takes(q, rj.priority) for q in others)

    return credit


def _gpus(replicas: Iterable[Any]) -> float:
    return sum((r.gpu_milli / 1000 if r.gpu_milli is not None else len(r.gpus)) for r in replicas)


def _on_node(r: Any, field_name: str) -> float:
    """A replica's ``cpu_cores`` or ``memory_gb`` when it holds a node (a TPU replica holds none)."""
    return float(getattr(r, field_name)) if r.node is not None else 0.0


#: Per resource a budget counts: the suffix of a cohort's quota fields for it, the Flavor field of a
#: queue's quota of it, the ClusterQueue resource names that cover it, what one replica holds of it (every
#: replica is one pod), and how a message names its amounts.
_AMOUNTS: tuple[tuple[str, str, frozenset[str], Callable[[Any], float], str], ...] = (
    ("gpus", "max_gpus", frozenset({"nvidia.com/gpu", "amd.com/gpu"}), lambda r: _gpus([r]), "GPUs"),
    ("cpu_cores", "max_cpu_cores", frozenset({"cpu"}), lambda r: _on_node(r, "cpu_cores"), "cores"),
    ("memory_gb", "max_memory_gb", frozenset({"memory"}), lambda r: _on_node(r, "memory_gb"), "GB"),
    ("pods", "max_pods", frozenset({"pods"}), lambda r: 1.0, "pods"),
)


def _level_message(r: Rank, used: float, what: str) -> str:
    return (
        f"jobs of rank {r} or lower hold {used:g} {what} when the running jobs they do not outrank still "
        "count: they use room freed by evicting jobs of their own priority or higher"
    )


def _check_gpus(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    rank: Callable[[Job], Rank],
) -> Iterator[Violation]:
    if not queues:
        return

    def queue(q: str | None, _: str | None) -> list[str]:
        return [q] if q is not None else []

    credit = _keeps_queue(queues)
    gpus = _ledgers(
        decision,
        jobs,
        cluster,
        queue,
        lambda rj: _gpus(rj.replicas),
        lambda _, p: _gpus(p.replicas),
        rank,
        credit,
    )
    count = _ledgers(  # a GPU job counts one
        decision,
        jobs,
        cluster,
        queue,
        lambda rj: 1.0 if _gpus(rj.replicas) > 0 else 0.0,
        lambda _, p: 1.0 if _gpus(p.replicas) > 0 else 0.0,
        rank,
        credit,
    )
    for name, qc in sorted(queues.items()):
        gl, cl = gpus.get(name, _Ledger()), count.get(name, _Ledger())
        if not gl.added:
            continue
        lim = qc.config.ml_limits
        yield from _over_limit(name, gl, lim.max_total_gpus, "max_total_gpus", "GPUs")
        yield from _over_limit(
            name,
            cl,
            lim.max_concurrent_gpu_jobs,
            "max_concurrent_gpu_jobs",
            "GPU jobs",
            "queue has {} active",
        )


def _over_limit(
    name: str, ledger: _Ledger, limit: float | None, limit_name: str, what: str, held: str = "queue holds {}"
) -> Iterator[Violation]:
    """A ``queue-budget`` violation when ``ledger`` ends over ``limit`` (``limit_name``, counting ``what``;
    ``held`` says the total), or uses room freed by evicting jobs it does not outrank; nothing without a
    limit."""
    if limit is None:
        return
    if ledger.total > limit + 1e-9:
        said = held.format(f"{ledger.total:g}")
        yield Violation("queue-budget", name, f"{said} {what} after the decision; {limit_name} is {limit:g}")
    elif (over := ledger.over_at_level(limit)) is not None:
        yield Violation("queue-budget", name, f"{_level_message(*over, what)}; {limit_name} is {limit:g}")


def _on_nodes(replicas: Iterable[Any], field_name: str) -> float:
    return sum(getattr(r, field_name) for r in replicas if r.node is not None)


def _check_resources(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    rank: Callable[[Job], Rank],
) -> Iterator[Violation]:
    # Budget keys: ("queue", name) for a queue's own budget, ("cohort", name) for its cohort's totals
    # (config.cohort.max_total_cpu_cores / max_total_memory_gb), each with its limits.
    limits: dict[tuple[str, str], Any] = {}
    member: dict[str, str] = {}  # queue -> its cohort, where the cohort has a CPU or memory total
    fields = ("max_total_cpu_cores", "max_total_memory_gb", "max_total_pods")
    keeps = ("guaranteed_cpu_cores", "guaranteed_memory_gb", "guaranteed_pods")
    kept: dict[str, dict[str, Any]] = {}  # cohort -> its queues' configurations, where one keeps some
    for name, qc in queues.items():
        lim, cohort = qc.config.ml_limits, qc.config.cohort
        if any(getattr(lim, f) is not None for f in fields):
            limits[("queue", name)] = lim
        if cohort is not None and any(getattr(cohort, f) is not None for f in fields):
            limits[("cohort", cohort.name)] = cohort
            member[name] = cohort.name
    for name, c in member.items():
        kept.setdefault(c, {})[name] = queues[name].config.cohort
    kept = {c: qs for c, qs in kept.items() if any(getattr(x, k) for x in qs.values() for k in keeps)}
    if not limits:
        return

    def keys(q: str | None, _: str | None) -> list[tuple[str, str]]:
        if q is None:  # (no queue: no budget of one, nor of a cohort)
            return []
        out = [("queue", q)] if ("queue", q) in limits else []
        if q in member and member[q] in kept:  # each queue apart: the cohort counts max(held, kept)
            out.append(("member", q))
        return out + ([("cohort", member[q])] if q in member else [])

    by_queue, by_cohort = _keeps_queue(queues), _keeps_cohort(queues)

    def credit(rj: Any, key: Any) -> bool:
        return by_queue(rj, key) if key[0] == "queue" else by_cohort(rj, key)

    for field_name, limit_name, unit, keep in (
        ("cpu_cores", "max_total_cpu_cores", "cores", keeps[0]),
        ("memory_gb", "max_total_memory_gb", "GB", keeps[1]),
        (None, "max_total_pods", "pods", keeps[2]),  # every replica is one pod, on a node or a TPU host
    ):
        held = _ledgers(
            decision,
            jobs,
            cluster,
            keys,
            lambda rj, f=field_name: _on_nodes(rj.replicas, f) if f else float(len(rj.replicas)),  # type: ignore[misc]
            lambda _, p, f=field_name: _on_nodes(p.replicas, f) if f else float(len(p.replicas)),  # type: ignore[misc]
            rank,
            credit,
        )
        for (kind, name), lim in sorted(limits.items()):
            ledger = held.get((kind, name), _Ledger())
            if not ledger.added:
                continue
            if kind == "cohort" and any(getattr(x, keep) for x in kept.get(name, {}).values()):
                ledgers = {q: held.get(("member", q), _Ledger()) for q in kept[name]}
                floors = {q: float(getattr(x, keep)) for q, x in kept[name].items()}
                yield from _over_kept(name, ledgers, floors, getattr(lim, limit_name), unit)
                continue
            said = "queue holds {}" if kind == "queue" else "cohort's queues hold {}"
            yield from _over_limit(name, ledger, getattr(lim, limit_name), limit_name, unit, said)


def _over_kept(
    cohort: str, ledgers: dict[str, _Ledger], kept: dict[str, float], limit: float | None, unit: str
) -> Iterator[Violation]:
    """A ``queue-budget`` violation when a cohort whose queues keep part of their quota (``kept``, a Kueue
    ``lendingLimit``) ends over its total: each queue counts at least what it keeps, used or not. Checked
    at every rank ``r`` of placed work, each queue holding :meth:`_Ledger.at_level` of it, so room freed
    by evicting a job of one's own priority is not used either."""
    if limit is None:
        return
    ranks = sorted({rank for ledger in ledgers.values() for rank, a in ledger.placed if a > 0})
    for r in ranks:
        each = {q: ledger.at_level(r) for q, ledger in ledgers.items()}
        counted = sum(max(h, kept[q]) for q, h in each.items())
        if counted > limit + 1e-9:
            said = ", ".join(f"{q} {each[q]:g} (keeps {kept[q]:g})" for q in sorted(each))
            yield Violation(
                "queue-budget",
                cohort,
                f"cohort counts {counted:g} {unit} at rank {r} and below, each queue at least what it keeps "
                f"({said}); its total is {limit:g}",
            )
            return


def _check_flavors(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    rank: Callable[[Job], Rank],
) -> Iterator[Violation]:
    kinds = [(attr, covered, one, unit) for _, attr, covered, one, unit in _AMOUNTS]
    # (queue, quota field) -> the covering group's flavors in order: (name, node labels, quota, the
    # cohort's total on the flavor)
    flavors: dict[tuple[str, str], list[tuple[str, dict[str, str], float | None, float | None]]] = {}
    cohort_of: dict[str, str] = {}  # queue -> its cohort, where its flavors carry the cohort's totals
    for name, qc in queues.items():
        for attr, covered, _, _ in kinds:
            for group in qc.config.flavor_groups:
                listed = [
                    (f.name, f.node_labels, getattr(f, attr), getattr(f, f"cohort_{attr}"))
                    for f in group.flavors
                ]
                if covered & set(group.covered) and any(
                    own is not None or c is not None for _, _, own, c in listed
                ):
                    flavors[(name, attr)] = listed
                    if qc.config.cohort is not None and any(c is not None for *_, c in listed):
                        cohort_of[name] = qc.config.cohort.name
                    break
    if not flavors:
        return
    # Limits by key: (queue, field, flavor) for a queue's own quota; ("cohort", cohort, field, flavor) for a
    # cohort's total on the flavor (every queue of it states the same).
    quota: dict[tuple[str, ...], float] = {}
    for (q, attr), fs in flavors.items():
        for n, _, most, total in fs:
            if most is not None:
                quota[(q, attr, n)] = most
            if total is not None and q in cohort_of:
                quota[("cohort", cohort_of[q], attr, n)] = total

    def per_flavor(queue: str | None, replicas: Iterable[Any]) -> dict[tuple[str, ...], float]:
        out: dict[tuple[str, ...], float] = {}
        for r in replicas:
            if queue is None or r.node is None or not cluster.has_node(r.node):
                continue
            labels = cluster.node(r.node).labels
            for attr, _, amount, _ in kinds:
                listed = flavors.get((queue, attr), [])
                first = next(
                    (n for n, want, *_ in listed if all(labels.get(k) == v for k, v in want.items())), None
                )
                if first is None or (held := amount(r)) <= 0:
                    continue
                keys: list[tuple[str, ...]] = [(queue, attr, first)]
                if queue in cohort_of:
                    keys.append(("cohort", cohort_of[queue], attr, first))
                for key in keys:
                    if key in quota:
                        out[key] = out.get(key, 0.0) + held
        return out

    by_queue, by_cohort = _keeps_queue(queues), _keeps_cohort(queues)
    ledgers = _split_ledgers(
        decision,
        jobs,
        cluster,
        lambda rj: per_flavor(rj.queue, rj.replicas),
        lambda job, p: per_flavor(job.queue, p.replicas),
        rank,
        lambda rj, key: by_cohort(rj, key) if len(key) == 4 else by_queue(rj, key),
    )
    said = {attr: unit for attr, _, _, unit in kinds}
    for key, ledger in sorted(ledgers.items()):
        if not ledger.added:
            continue
        *_, attr, f = key
        if len(key) == 4:  # a cohort's total on the flavor, over its queues
            yield from _over_limit(
                key[1],
                ledger,
                quota[key],
                f"the cohort's total of {attr} on flavor {f!r}",
                f"{said[attr]} on its nodes",
                "cohort's queues hold {}",
            )
            continue
        yield from _over_limit(
            key[0], ledger, quota[key], f"flavor {f!r}'s {attr}", f"{said[attr]} on its nodes"
        )


def _check_cohorts(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    rank: Callable[[Job], Rank],
) -> Iterator[Violation]:
    """A cohort's queues (``config.cohort``) together hold at most its ``max_total_gpus`` after the
    decision: their running GPU jobs not evicted, plus their placed ones (a Kueue cohort's quota)."""
    cohorts: dict[str, tuple[int, set[str]]] = {}
    for name, qc in queues.items():
        c = qc.config.cohort
        if c is not None and not c.tree:  # a tree's queues: its rules (_check_cohort_trees)
            cohorts.setdefault(c.name, (c.max_total_gpus, set()))[1].add(name)
    for name in _keeping(queues):  # a flat cohort whose queues keep GPUs: a one-node tree there too
        cohorts.pop(name, None)
    if not cohorts:
        return
    member = {q: c for c, (_, qs) in cohorts.items() for q in qs}
    ledgers = _ledgers(
        decision,
        jobs,
        cluster,
        lambda queue, _: [member[queue]] if queue in member else [],
        lambda rj: _gpus(rj.replicas),
        lambda _, p: _gpus(p.replicas),
        rank,
        _keeps_cohort(queues),
    )
    for name, (most, _) in sorted(cohorts.items()):
        ledger = ledgers.get(name, _Ledger())
        if not ledger.added:
            continue
        if ledger.total > most + 1e-9:
            yield Violation(
                "queue-budget",
                name,
                f"cohort holds {ledger.total:g} GPUs after the decision; its total is {most}",
            )
        elif (over := ledger.over_at_level(most)) is not None:
            yield Violation(
                "queue-budget", name, f"{_level_message(*over, 'GPUs')}; the cohort's total is {most}"
            )


def _check_costs(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    prices: PriceCatalog,
    rank: Callable[[Job], Rank],
) -> Iterator[Violation]:
    limits: dict[tuple[str, str], int] = {
        ("queue", name): to_units(qc.config.ml_limits.max_cost_per_hour)
        for name, qc in queues.items()
        if qc.config.ml_limits.max_cost_per_hour is not None
    }
    limits.update({("tenant", t): to_units(v) for t, v in prices.budgets.tenants.items()})
    if not limits:
        return

    def keys(queue: str | None, tenant: str | None) -> list[tuple[str, str]]:
        return [k for k in (("queue", queue), ("tenant", tenant)) if k[1] is not None and k in limits]

    by_queue = _keeps_queue(queues)

    ledgers = _ledgers(
        decision,
        jobs,
        cluster,
        keys,
        lambda rj: float(sum(replica_units(cluster, r, prices) for r in rj.replicas)),
        lambda job, p: float(
            sum(replica_units(cluster, r, prices, whole=_exclusive(job, r.task_group)) for r in p.replicas)
        ),
        rank,
        lambda rj, key: key[0] != "queue" or by_queue(rj, key),
    )
    for (kind, name), limit in sorted(limits.items()):
        ledger = ledgers.get((kind, name), _Ledger())
        if not ledger.added:
            continue
        what = "max_cost_per_hour" if kind == "queue" else "its budget (budgets.tenants)"
        if ledger.total > limit:
            yield Violation(
                "cost-budget",
                name,
                f"{kind} {name!r} costs ${ledger.total / UNITS_PER_DOLLAR:g}/h after the decision (running "
                f"and placed); {what} is ${limit / UNITS_PER_DOLLAR:g}/h",
            )
        elif (over := ledger.over_at_level(limit)) is not None:
            r, used = over
            yield Violation(
                "cost-budget",
                name,
                f"{kind} {name!r}: {_level_message(r, used / UNITS_PER_DOLLAR, 'dollars per hour')}; "
                f"{what} is ${limit / UNITS_PER_DOLLAR:g}/h",
            )


def _exclusive(job: Job, group: str | None) -> bool:
    """A replica that holds its node exclusively (``exclusive_nodes``, ``dedicated``, an exclusive group)
    counts the whole node against dollar budgets: it is what the queue pays for."""
    if job.placement.exclusive_nodes or job.placement.gpu_affinity is GpuAffinity.DEDICATED:
        return True
    return any(g.exclusive for g in job.tasks if g.name == group)


def _keeping(queues: Mapping[str, QueueConfig]) -> dict[str, int]:
    """Flat cohorts (no ``tree``) one of whose queues keeps GPUs (``guaranteed_gpus``, a Kueue
    lendingLimit), each with its total less what its queues keep."""
    kept: dict[str, int] = {}
    totals: dict[str, int] = {}
    for qc in queues.values():
        c = qc.config.cohort
        if c is not None and not c.tree:
            kept[c.name] = kept.get(c.name, 0) + c.guaranteed_gpus
            totals[c.name] = c.max_total_gpus
    return {name: totals[name] - k for name, k in kept.items() if k}


def _check_cohort_trees(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    rank: Callable[[Job], Rank],
) -> Iterator[Violation]:
    """Hierarchical cohorts (``cohort.tree``, Kueue's Cohort objects with a parent or a quota), re-derived
    from the queue configurations as Kueue's quota arithmetic defines them, for GPUs and for cores, GB and
    pods (:func:`_check_tree` each)."""
    credit = _keeps_cohort(queues)
    for amount, _, _, one, unit in _AMOUNTS:
        nodes: dict[str, Any] = {}
        members: dict[str, tuple[str, float, float]] = {}  # queue -> (cohort, nominal, guaranteed)
        for name, qc in queues.items():
            c = qc.config.cohort
            if c is not None and c.tree and getattr(c, f"nominal_{amount}") is not None:
                kept = getattr(c, "guaranteed_gpus" if amount == "gpus" else f"guaranteed_{amount}")
                members[name] = (c.name, float(getattr(c, f"nominal_{amount}")), float(kept))
                for node in c.tree:
                    nodes[node.name] = node
        if amount == "gpus":
            keeping = _keeping(queues)
            for name, qc in queues.items():
                c = qc.config.cohort
                if c is not None and not c.tree and c.name in keeping:
                    # A flat cohort with kept GPUs: each queue's quota is what it keeps, the rest the
                    # cohort's own, so the root's rule says the queues' max(held, kept) add up to at most
                    # the total.
                    members[name] = (c.name, c.guaranteed_gpus, c.guaranteed_gpus)
                    nodes[c.name] = SimpleNamespace(
                        parent=None, nominal_gpus=keeping[c.name], lending_gpus=None, borrowing_gpus=None
                    )
        if not members:
            continue
        per_queue = _ledgers(
            decision,
            jobs,
            cluster,
            lambda queue, _, m=members: [queue] if queue in m else [],  # type: ignore[misc]
            lambda rj, f=one: sum(f(r) for r in rj.replicas),  # type: ignore[misc]
            lambda _, p, f=one: sum(f(r) for r in p.replicas),  # type: ignore[misc]
            rank,
            credit,
        )
        yield from _check_tree(nodes, members, per_queue, amount, unit)
    yield from _check_flavor_trees(decision, jobs, cluster, queues, rank)


def _check_flavor_trees(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    rank: Callable[[Job], Rank],
) -> Iterator[Violation]:
    """Hierarchical cohorts per flavor (a tree's queues' ``Flavor.tree_quota``, its cohorts'
    ``flavor_quotas``): the same rules (:func:`_check_tree`) on what each queue holds on the flavor's nodes,
    a node being the first flavor of the queue's group covering the resource whose labels it all has. A
    flat cohort some of whose queues keep part of their quota on a flavor (``tree_quota``'s
    ``guaranteed_*``, a per-flavor lendingLimit) is such a tree of one cohort: each queue's quota there is
    what it keeps, the cohort's own the rest of its total on the flavor (``cohort_max_*``)."""
    credit = _keeps_cohort(queues)
    for amount, attr, covered, counted, unit in _AMOUNTS:
        listed: dict[str, list[Any]] = {}  # queue of a cohort -> its flavors of the group covering it
        for name, qc in queues.items():
            c = qc.config.cohort
            if c is None:
                continue
            group = next((g for g in qc.config.flavor_groups if covered & set(g.covered)), None)
            if group is not None:
                listed[name] = list(group.flavors)

        def in_tree(q: str, f: Any, a: str = amount) -> bool:
            return bool(queues[q].config.cohort.tree) and f"nominal_{a}" in f.tree_quota  # type: ignore[union-attr]

        def keeps_flat(q: str, f: Any, a: str = amount, t: str = attr) -> bool:
            c = queues[q].config.cohort
            assert c is not None
            return (
                not c.tree
                and bool(f.tree_quota.get(f"guaranteed_{a}"))
                and getattr(f, f"cohort_{t}") is not None
            )

        names = sorted({f.name for q, fs in listed.items() for f in fs if in_tree(q, f) or keeps_flat(q, f)})
        for flavor in names:
            members: dict[str, tuple[str, float, float]] = {}
            nodes: dict[str, Any] = {}
            flat: dict[str, list[tuple[str, float, float]]] = {}  # cohort -> (queue, total there, kept)
            keeping = {  # flat cohorts one of whose queues keeps part of its quota on the flavor
                queues[q].config.cohort.name  # type: ignore[union-attr]
                for q, fs in listed.items()
                for f in fs
                if f.name == flavor and keeps_flat(q, f)
            }
            for q, fs in listed.items():
                entry = next((f for f in fs if f.name == flavor), None)
                cohort = queues[q].config.cohort
                assert cohort is not None
                if entry is not None and not cohort.tree and cohort.name in keeping:
                    total = getattr(entry, f"cohort_{attr}")
                    if total is not None:
                        kept = float(entry.tree_quota.get(f"guaranteed_{amount}", 0.0))
                        flat.setdefault(cohort.name, []).append((q, float(total), kept))
                    continue
                if entry is None or not in_tree(q, entry):
                    continue
                members[q] = (
                    cohort.name,
                    float(entry.tree_quota[f"nominal_{amount}"]),
                    float(entry.tree_quota.get(f"guaranteed_{amount}", 0.0)),
                )
                for node in cohort.tree:
                    own = node.flavor_quotas.get(flavor, {})
                    nodes[node.name] = SimpleNamespace(
                        parent=node.parent,
                        **{f"nominal_{amount}": own.get(f"nominal_{amount}", 0.0)},
                        **{f"{k}_{amount}": own.get(f"{k}_{amount}") for k in ("lending", "borrowing")},
                    )
            for name, queued in flat.items():  # each keeps its part; the cohort's own is the rest
                for q, _, kept in queued:
                    members[q] = (name, kept, kept)
                rest = queued[0][1] - sum(kept for _, _, kept in queued)
                nodes[name] = SimpleNamespace(
                    parent=None,
                    **{f"nominal_{amount}": rest, f"lending_{amount}": None, f"borrowing_{amount}": None},
                )

            def on_flavor(
                queue: str | None,
                replicas: Iterable[Any],
                f: str = flavor,
                groups: dict[str, list[Any]] = listed,
                count: Callable[[Any], float] = counted,
            ) -> float:
                """What ``replicas`` of ``queue`` hold on flavor ``f``'s nodes, as the queue counts them."""
                held = 0.0
                for r in replicas:
                    if queue not in groups or r.node is None or not cluster.has_node(r.node):
                        continue
                    labels = cluster.node(r.node).labels
                    first = next(
                        (
                            x.name
                            for x in groups[queue]
                            if all(labels.get(k) == v for k, v in x.node_labels.items())
                        ),
                        None,
                    )
                    if first == f:
                        held += count(r)
                return held

            per_queue = _ledgers(
                decision,
                jobs,
                cluster,
                lambda queue, _, m=members: [queue] if queue in m else [],  # type: ignore[misc]
                lambda rj, g=on_flavor: g(rj.queue, rj.replicas),  # type: ignore[misc]
                lambda job, p, g=on_flavor: g(job.queue, p.replicas),  # type: ignore[misc]
                rank,
                credit,
            )
            yield from _check_tree(nodes, members, per_queue, amount, f"{unit} on flavor {flavor!r}")


def _check_tree(
    nodes: Mapping[str, Any],
    members: Mapping[str, tuple[str, float, float]],
    per_queue: Mapping[Any, _Ledger],
    amount: str,
    unit: str,
) -> Iterator[Violation]:
    """One tree's rules on one resource (``amount``: the suffix of the cohorts' quota fields): a node
    keeps ``max(0, subtree quota - lendingLimit)``; a cohort's subtree quota is its own plus each child's
    less what the child keeps, its usage each child's usage beyond what the child keeps. After the
    decision a root's usage stays within its subtree quota, and a cohort with a ``borrowingLimit`` uses
    beyond what it keeps at most its subtree quota less what it keeps plus the limit — checked where the
    decision places work of that resource below the cohort."""
    parent_of = {
        n: nodes[n].parent if n in nodes else None for n in {*nodes, *(c for c, _, _ in members.values())}
    }
    kids: dict[str, list[str]] = {}
    for n, p in parent_of.items():
        if p is not None:
            kids.setdefault(p, []).append(n)
    leaves: dict[str, list[str]] = {}
    for q, (parent, _, _) in members.items():
        leaves.setdefault(parent, []).append(q)

    def own(n: str, what: str) -> Any:
        node = nodes.get(n)
        return getattr(node, f"{what}_{amount}") if node is not None else (0 if what == "nominal" else None)

    quota: dict[str, float] = {}
    keeps: dict[str, float] = {}
    used: dict[str, float] = {}

    def settle(n: str) -> None:
        for k in kids.get(n, []):
            settle(k)
        q_total = own(n, "nominal") + sum(members[q][1] - members[q][2] for q in leaves.get(n, []))
        quota[n] = q_total + sum(quota[k] - keeps[k] for k in kids.get(n, []))
        lend = own(n, "lending")
        keeps[n] = max(0.0, quota[n] - lend) if lend is not None else 0.0
        used[n] = sum(max(0.0, per_queue.get(q, _Ledger()).total - members[q][2]) for q in leaves.get(n, []))
        used[n] += sum(max(0.0, used[k] - keeps[k]) for k in kids.get(n, []))

    for root in sorted(n for n, p in parent_of.items() if p is None):
        settle(root)

    def below(n: str) -> list[str]:
        return leaves.get(n, []) + [q for k in kids.get(n, []) for q in below(k)]

    for n in sorted(quota):
        if not any(per_queue.get(q, _Ledger()).added for q in below(n)):
            continue
        if parent_of[n] is None:
            if used[n] > quota[n] + 1e-9:  # said as its members' max(held, kept) against its whole total
                kept: list[tuple[str, float, float]] = [
                    (q, per_queue.get(q, _Ledger()).total, members[q][2]) for q in leaves.get(n, [])
                ]
                kept += [(f"cohort {k}", used[k], keeps[k]) for k in kids.get(n, [])]
                held = ", ".join(f"{m} {h:g} (guaranteed {g:g})" for m, h, g in kept)
                extra = sum(g for _, _, g in kept)
                yield Violation(
                    "queue-budget",
                    n,
                    f"cohort counts {used[n] + extra:g} {unit} after the decision, each member at least what "
                    f"it keeps ({held}); its total is {quota[n] + extra:g}",
                )
            continue
        borrow = own(n, "borrowing")
        if borrow is not None and max(0.0, used[n] - keeps[n]) > quota[n] - keeps[n] + borrow + 1e-9:
            yield Violation(
                "queue-budget",
                n,
                f"cohort takes {max(0.0, used[n] - keeps[n]):g} {unit} from its parent after the decision; "
                f"its quota {quota[n]:g} less the {keeps[n]:g} it keeps, plus its borrowingLimit {borrow}, "
                f"allow {quota[n] - keeps[n] + borrow:g}",
            )
