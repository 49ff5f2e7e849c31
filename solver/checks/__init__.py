"""The independent checker: is a :class:`~placer.solver.decision.Decision` valid for its jobs and cluster?

Why independent: the checker is the project's "never trust the solver's own word". It shares no code
with the solver beyond the input types (``placer.solver.jobs.model``, ``placer.solver.decision``, the
``topology``
public API) and the definition of a replica's price (``placer.solver.prices.replica_units``, for budgets):
label rules, box tests, device accounting are all written again here, so one bug cannot hide in both.
Each rule family of ``docs/placement-rules.md`` is one module:

==================  ==========================================================================
module              rules
==================  ==========================================================================
``accounting``      1 every job answered once; evictions name running jobs
``gang``            2 gang completeness (counts, split replicas, shares, resources)
``nodes``           3 node exists / usable / untainted; 4 accelerator kind, GPU type, memory, CC
``devices``         5 GPU double-booking and shares; 6 node capacity
``nvlink``          7 one NVLink domain
``affinity``        8 node selector and required rules; 9 anti-affinity
``spread``          10 exclusivity; 11 distinct nodes, node count; 12 topology scope
``tpu``             13 TPU pods, chips, contiguity, hosts
``timing``          14 dependencies, not_before; 15 reservations are declared
``reservations``    15 reservation isolation, window end, later reservations (backfill), plans
``preemption``      16 who may be evicted, for whom; eviction directives
``budgets``         17 queue GPU, CPU and memory budgets; queue and tenant dollar budgets
``plans``           18 planned starts (conservative backfill)
``shape``           19 Flux shapes inside a node (sockets with their cores and GPUs)
``throttle``        20 at most ``max_running`` jobs, ``max_gpus`` GPUs per group (%N, QOS)
``extended``        21 extended resources (Kubernetes, Flux types, SSS Resource), counted per node
``licenses``        22 cluster-wide licence seats (Slurm ``Licenses=``, ``--licenses``)
==================  ==========================================================================

Cost: O(replicas + chips + nodes touched); nothing loops over the cluster's nodes or GPUs.

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> from placer.topology import cluster_of, dgx_h100
>>> job = Job(id="j", tasks=[TaskGroup(gpu=GpuDemand(count=2), cpu_cores=8)])
>>> ok = Decision(placements=[JobPlacement(job="j", replicas=[
...     ReplicaPlacement(node="dgx-h100-1", gpus=[0, 1], cpu_cores=8)])])
>>> check(ok, [job], cluster_of(dgx_h100(2)))
[]
>>> bad = Decision(placements=[JobPlacement(job="j", replicas=[
...     ReplicaPlacement(node="dgx-h100-1", gpus=[0, 8], cpu_cores=8)])])
>>> [str(v) for v in check(bad, [job], cluster_of(dgx_h100(2)))]
['[gpu-index] job j on dgx-h100-1: GPU index 8 does not exist (the node has 8 GPUs)']
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any

from placer.solver.checks.accounting import check_accounting
from placer.solver.checks.affinity import (
    check_anti_affinity,
    check_domain_anti_affinity,
    check_node_rules,
    check_pod_affinity,
    check_running_anti_affinity,
)
from placer.solver.checks.alternatives import shaped
from placer.solver.checks.budgets import check_budgets
from placer.solver.checks.context import build_context
from placer.solver.checks.devices import check_devices
from placer.solver.checks.extended import check_extended, check_extended_counts
from placer.solver.checks.gang import check_gang
from placer.solver.checks.licenses import check_licenses
from placer.solver.checks.nodes import check_accelerator, check_model_version, check_nodes
from placer.solver.checks.nvlink import check_nvlink
from placer.solver.checks.plans import check_plans
from placer.solver.checks.preemption import check_directives, check_preemption, job_rank
from placer.solver.checks.reservations import check_reservations
from placer.solver.checks.shape import check_shapes
from placer.solver.checks.skew import check_topology_spread
from placer.solver.checks.spread import (
    check_distinct,
    check_domains,
    check_exclusive,
    check_one_flavor,
    check_scope,
    check_slices,
)
from placer.solver.checks.throttle import check_throttles
from placer.solver.checks.timing import check_timing
from placer.solver.checks.tpu import check_tpu
from placer.solver.checks.violation import RULES, Violation
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job
from placer.solver.jobs.queues import QueueConfig
from placer.solver.prices import PriceCatalog
from placer.topology import Cluster

__all__ = ["RULES", "Violation", "check"]


def check(
    decision: Decision,
    jobs: Iterable[Job],
    cluster: Cluster,
    *,
    now: datetime | None = None,
    reservations: Iterable[Any] | None = None,
    rejected_ids: Collection[str] = (),
    queues: Mapping[str, QueueConfig] | None = None,
    prices: PriceCatalog | None = None,
) -> list[Violation]:
    """Every rule the decision breaks (empty when it is valid), in rule order, then decision order.

    ``cluster`` carries the running jobs; ``decision.preemptions`` release theirs first. ``now``
    (default: ``decision.now``, else the current UTC time) is compared with ``not_before`` and plans.
    ``reservations``: the reservation ids (or holds) the input declares; without them no job with a
    reservation may be placed.
    ``rejected_ids``: ids of jobs the readers refused, which must appear in ``decision.rejected``.
    ``queues`` (GPU and dollar budgets) and ``prices`` (the catalog dollar budgets are counted with, and
    tenant budgets; default: the default catalog) bring rule 17.
    """
    now = now or decision.now  # a recorded decision is checked at its own time
    jobs = shaped(decision, jobs, cluster)  # SSS alternative node shapes: the one each placement fits
    ctx = build_context(decision, jobs, cluster, now=now, reservations=reservations)
    out: list[Violation] = list(check_accounting(ctx, rejected_ids))
    for placement, job in ctx.placed:
        out.extend(check_gang(job, placement))
    for placement, job in ctx.placed:
        for rep in placement.replicas:
            out.extend(check_nodes(ctx, job, rep))
            out.extend(check_accelerator(ctx, job, rep))
            out.extend(check_model_version(ctx, job, rep))
            out.extend(check_extended(ctx, job, rep))
    out.extend(check_devices(ctx))
    out.extend(check_extended_counts(ctx))
    out.extend(check_shapes(ctx))
    taken: dict[tuple[str, tuple[int, ...]], str] = {}
    for placement, job in ctx.placed:
        out.extend(check_nvlink(ctx, job, placement))
        for rep in placement.replicas:
            out.extend(check_node_rules(ctx, job, rep))
        out.extend(check_anti_affinity(ctx, job, placement))
        out.extend(check_running_anti_affinity(ctx, job, placement))
        out.extend(check_domain_anti_affinity(ctx, job, placement))
        out.extend(check_pod_affinity(ctx, job, placement))
        out.extend(check_topology_spread(ctx, job, placement))
        out.extend(check_exclusive(ctx, job, placement))
        out.extend(check_distinct(ctx, job, placement))
        out.extend(check_scope(ctx, job, placement))
        out.extend(check_domains(ctx, job, placement))
        out.extend(check_slices(ctx, job, placement))
        out.extend(check_one_flavor(ctx, job, placement))
        for rep in placement.replicas:
            out.extend(check_tpu(ctx, job, rep, taken))
        out.extend(check_timing(ctx, job))
    out.extend(check_preemption(ctx, cluster))
    out.extend(check_directives(ctx, cluster))
    out.extend(
        check_budgets(
            decision, ctx.jobs.values(), cluster, queues or {}, prices, rank=lambda job: job_rank(job, ctx)
        )
    )
    out.extend(
        check_reservations(decision, ctx.jobs, ctx.cluster, list(reservations or ()), ctx.now, before=cluster)
    )
    out.extend(check_plans(decision, ctx.jobs, cluster, ctx.now))
    out.extend(check_throttles(decision, ctx.jobs.values(), cluster, ctx.now))
    out.extend(check_licenses(decision, ctx.jobs.values(), cluster, ctx.now))
    return out
