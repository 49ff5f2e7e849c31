"""Rule 17, queue GPU budgets (OJS ML resources §10.3): after the decision, each queue's active GPU jobs
(running and not evicted, plus placed) hold at most ``max_total_gpus`` GPUs and number at most
``max_concurrent_gpu_jobs``. Re-derived from the inputs, independently of the solver.

Dollar budgets (``cost-budget``): each queue's ``ml_limits.max_cost_per_hour`` and each tenant's
``budgets.tenants`` (prices file) bound the dollars per hour of its active jobs — running and not evicted
(priced from their allocation), plus placed — GPU, TPU and CPU work alike. A replica's price is by
definition :func:`solver.prices.replica_units` (the price is an input, like the catalog it reads: the
checker takes that definition, and re-does the sums itself, in the same integer money units).

A budget is broken by a decision that *adds* to a queue or tenant that ends over it: running jobs alone
over a budget (it was lowered, prices changed) are not the decision's doing, and placing nothing there is
what a decision can do about it.

>>> from solver.decision import Decision
>>> from topology import cluster_of, cpu_nodes
>>> list(check_budgets(Decision(), [], cluster_of(cpu_nodes(1)), {}))
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from solver.checks.violation import Violation
from solver.decision import Decision
from solver.jobs.model import Job
from solver.jobs.queues import QueueConfig
from solver.prices import UNITS_PER_DOLLAR, PriceCatalog, replica_units, to_units
from topology import Cluster


def check_budgets(
    decision: Decision,
    jobs: Iterable[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    prices: PriceCatalog | None = None,
) -> Iterator[Violation]:
    """A ``queue-budget`` violation per queue whose GPU limits the decision takes it over, and a
    ``cost-budget`` violation per queue or tenant whose dollar budget it takes it over."""
    jobs = list(jobs)
    yield from _check_gpus(decision, jobs, cluster, queues)
    yield from _check_costs(decision, jobs, cluster, queues, prices or PriceCatalog.default())


def _gpus(replicas: Iterable[Any]) -> float:
    return sum((r.gpu_milli / 1000 if r.gpu_milli is not None else len(r.gpus)) for r in replicas)


def _check_gpus(
    decision: Decision, jobs: list[Job], cluster: Cluster, queues: Mapping[str, QueueConfig]
) -> Iterator[Violation]:
    if not queues:
        return
    evicted = {e.job for e in decision.preemptions}
    by_id = {j.id: j for j in jobs}
    gpus: dict[str, float] = {}
    count: dict[str, int] = {}
    added: set[str] = set()
    for rj in cluster.running_jobs():
        if rj.job in evicted or rj.queue is None:
            continue
        g = _gpus(rj.replicas)
        if g > 0:
            gpus[rj.queue] = gpus.get(rj.queue, 0.0) + g
            count[rj.queue] = count.get(rj.queue, 0) + 1
    for p in decision.placements:
        job = by_id.get(p.job)
        if job is None or job.queue is None:
            continue
        g = _gpus(p.replicas)
        if g > 0:
            gpus[job.queue] = gpus.get(job.queue, 0.0) + g
            count[job.queue] = count.get(job.queue, 0) + 1
            added.add(job.queue)
    for name, qc in sorted(queues.items()):
        if name not in added:
            continue
        lim = qc.config.ml_limits
        if lim.max_total_gpus is not None and gpus.get(name, 0.0) > lim.max_total_gpus + 1e-9:
            yield Violation(
                "queue-budget",
                name,
                f"queue holds {gpus[name]:g} GPUs after the decision; max_total_gpus is {lim.max_total_gpus}",
            )
        if lim.max_concurrent_gpu_jobs is not None and count.get(name, 0) > lim.max_concurrent_gpu_jobs:
            yield Violation(
                "queue-budget",
                name,
                f"queue has {count[name]} active GPU jobs after the decision; "
                f"max_concurrent_gpu_jobs is {lim.max_concurrent_gpu_jobs}",
            )


def _check_costs(
    decision: Decision,
    jobs: list[Job],
    cluster: Cluster,
    queues: Mapping[str, QueueConfig],
    prices: PriceCatalog,
) -> Iterator[Violation]:
    limits: dict[tuple[str, str], int] = {
        ("queue", name): to_units(qc.config.ml_limits.max_cost_per_hour)
        for name, qc in queues.items()
        if qc.config.ml_limits.max_cost_per_hour is not None
    }
    limits.update({("tenant", t): to_units(v) for t, v in prices.budgets.tenants.items()})
    if not limits:
        return
    spent: dict[tuple[str, str], int] = {}
    added: set[tuple[str, str]] = set()

    def charge(queue: str | None, tenant: str | None, replicas: Iterable[Any], placed: bool) -> None:
        keys = [k for k in (("queue", queue), ("tenant", tenant)) if k[1] is not None and k in limits]
        if not keys:
            return
        units = sum(replica_units(cluster, r, prices) for r in replicas)
        for k in keys:
            spent[k] = spent.get(k, 0) + units  # type: ignore[index]
            if placed and units > 0:
                added.add(k)  # type: ignore[arg-type]

    evicted = {e.job for e in decision.preemptions}
    for rj in cluster.running_jobs():
        if rj.job not in evicted:
            charge(rj.queue, rj.tenant, rj.replicas, placed=False)
    by_id = {j.id: j for j in jobs}
    for p in decision.placements:
        job = by_id.get(p.job)
        if job is not None:
            charge(job.queue, job.tenant, p.replicas, placed=True)
    for (kind, name), limit in sorted(limits.items()):
        used = spent.get((kind, name), 0)
        if (kind, name) in added and used > limit:
            what = "max_cost_per_hour" if kind == "queue" else "its budget (budgets.tenants)"
            yield Violation(
                "cost-budget",
                name,
                f"{kind} {name!r} costs ${used / UNITS_PER_DOLLAR:g}/h after the decision (running and "
                f"placed); {what} is ${limit / UNITS_PER_DOLLAR:g}/h",
            )
