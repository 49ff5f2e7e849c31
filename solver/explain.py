"""Phase 8: why each job is pending, in words a user understands, from the same facts the decision used.

Codes (``Reason.code``); ``UNSATISFIABLE`` is fixed for backends (Fluxion's "unsatisfiable request",
Slurm's "requested node configuration is not available"):

* ``UNSATISFIABLE`` — could not run even on the empty cluster; ``details.eliminated`` counts the nodes each
  constraint ruled out (``gpu_type``, ``gpu_memory``, ``rules``, ``too_small``, ...).
* ``INSUFFICIENT_CAPACITY`` — fits the empty cluster but not the current one (``details.blocked``).
* ``NO_NVLINK_DOMAIN`` — no NVLink domain has enough free GPUs of the right type together.
* ``NO_ONE_FLAVOR`` — a pod set of a Kueue queue offering several flavors: no one flavor has room for all its
  pods (Kueue gives a pod set one flavor).
* ``NO_TPU_SLICE`` — no free contiguous TPU slice of the shape.
* ``LOST_TO_HIGHER_PRIORITY`` — there was room, but jobs of this batch that rank at least as high
  (class, then numeric priority) took it (``details.jobs`` names them).
* ``OUTWEIGHED_IN_BATCH`` — there was room, but only lower-ranked jobs of this batch use it: together they
  place more priority-weighted demand than this job would (CP-SAT's first objective level), e.g. two
  4-GPU jobs of priority 0 over one 7-GPU job of priority 10 on one 8-GPU node.
* ``SCHEDULING_GATED``, ``DEPENDENCY_UNMET``, ``NOT_BEFORE`` — not eligible yet.
* ``QUEUE_BUDGET`` — the job fits, but its queue's GPU budget (``max_total_gpus``,
  ``max_concurrent_gpu_jobs``, OJS ML §10.3), or its CPU or memory budget (``max_total_cpu_cores``,
  ``max_total_memory_gb``: a Kueue ClusterQueue's ``cpu`` and ``memory`` quotas), or its GPU quota on every
  flavor it may use (``Flavor.max_gpus``), does not; ``details`` say how much more budget it needs
  (``resource`` names CPU or memory; ``flavors`` the GPUs left per flavor).
* ``COST_BUDGET`` — the job fits, but its queue's (``max_cost_per_hour``) or tenant's (prices file
  ``budgets.tenants``) dollars per hour do not; ``details`` say how many more dollars per hour would let
  it run.
* ``THROTTLE`` — a group it counts against (``Job.throttle``, a Slurm array's ``%N``; ``Job.limits``, a
  Slurm QOS's ``GrpJobs`` and ``GrpTRES=gres/gpu``) runs as many jobs, or holds as many GPUs, as it lets
  at once, counting what this decision starts; ``details`` name the group, its limit (``max_running`` or
  ``max_gpus``) and both counts. It starts when enough of them end.
* ``LICENSES`` — the job fits, but a cluster-wide licence it asks for (``Job.licenses``, Slurm's
  ``--licenses``) has too few seats left: ``details`` name the licence, the cluster's seats, what running
  jobs hold, what this decision starts and what the job needs (Slurm's pending reason ``Licenses``). It
  starts when enough seats come back.
* ``KEPT_APART`` — a job of the batch it is kept apart from on a zone or rack (required anti-affinity on
  that domain, either way) is placed by this decision: one of such a pair is placed per decision
  (:mod:`placer.solver.apart`).
* ``NOT_CONSIDERED`` — the time limit ran out before the job's turn (lowest priority last); it stays
  pending for the next cycle.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from placer.solver.assignment import Assignment
from placer.solver.candidates import DYNAMIC_CHECKS, STATIC_CHECKS, UnitCandidates
from placer.solver.decision import Reason
from placer.solver.demand import JobPlan, Unit
from placer.solver.jobs.flavors import FLAVOR_LEVEL, level_flavors
from placer.solver.jobs.model import Job
from placer.solver.preempt import evict_rank, job_rank
from placer.solver.rules import holds, job_labels
from placer.solver.snapshot import Snapshot, scope_value

if TYPE_CHECKING:  # budgets reads this module's reasons: a name for the annotations only
    from placer.solver.budgets import Budgets

__all__ = [
    "CAPACITY_CODES",
    "MAX_NAMED",
    "Owners",
    "affinity_reason",
    "cost_budget",
    "few",
    "group_gpus",
    "kept_apart_reason",
    "licenses",
    "not_considered",
    "owners_of",
    "pending_reasons",
    "queue_budget",
    "queue_flavors",
    "queue_resources",
    "spread_reason",
    "throttle",
    "unavailable",
    "unsatisfiable",
]


def _counts(d: dict[str, int], words: dict[str, str]) -> str:
    return "; ".join(f"{n} node{'s' if n != 1 else ''}: {words.get(k, k)}" for k, n in d.items())


def queue_budget(plan: JobPlan, assignment: Assignment, budgets: Budgets, plans: list[JobPlan]) -> Reason:
    """``QUEUE_BUDGET``: the job fits the cluster but not its queue's GPU budget (OJS ML §10.3); the message
    says what budget change would let it run."""
    from placer.solver.budgets import remaining_cohort_room, remaining_room

    queue = plan.job.queue
    rank = evict_rank(plan.job)
    room_gpus, _ = remaining_room(queue, assignment, budgets, plans, rank)
    need = plan.job.total_gpu_milli / 1000
    parts = []
    details: dict[str, object] = {"queue": queue, "gpus": need}
    cohort_left = remaining_cohort_room(queue, assignment, budgets, plans, rank)
    if (
        (room_gpus is None or need <= room_gpus + 1e-9)
        and cohort_left is not None
        and need > cohort_left + 1e-9
        and queue is not None  # (a cohort's room is only known for a queue's job)
    ):
        tree = budgets.cohort_tree
        in_tree = tree is not None and queue in tree.queues
        cohort = tree.queues[queue][0] if tree is not None and in_tree else budgets.cohort_of[queue]
        more = need - cohort_left
        left = (
            f"has {cohort_left:g} GPUs left" if cohort_left >= 0 else f"is already {-cohort_left:g} GPUs over"
        )
        details.update(cohort=cohort, more_gpus=more)
        return Reason(
            code="QUEUE_BUDGET",
            message=f"queue {queue!r} is within its own GPU budget but its cohort {cohort!r} {left} of its "
            f"total: it needs {need:g} GPUs — fits if the cohort allowed {more:g} more GPUs (it waits; it is "
            "not rejected)",
            details=details,
        )
    if room_gpus is not None and need > room_gpus + 1e-9:
        more = need - room_gpus  # a queue already over its budget needs the excess too
        left = (
            f"has {room_gpus:g} left of max_total_gpus"
            if room_gpus >= 0
            else f"is already {-room_gpus:g} over max_total_gpus"
        )
        parts.append(f"it needs {need:g} GPUs and the queue {left}")
        details["more_gpus"] = more
        change = f"fits if queue {queue!r}'s budget allowed {more:g} more GPUs"
    else:
        parts.append("the queue is at max_concurrent_gpu_jobs")
        details["more_jobs"] = 1
        change = f"fits if queue {queue!r} allowed one more concurrent GPU job"
    return Reason(
        code="QUEUE_BUDGET",
        message=f"queue {queue!r} is over its GPU budget: {'; '.join(parts)} — {change} "
        "(it waits; it is not rejected)",
        details=details,
    )


def queue_resources(
    plan: JobPlan, assignment: Assignment, budgets: Budgets, plans: list[JobPlan]
) -> Reason | None:
    """``QUEUE_BUDGET`` for the queue's CPU, memory or pods budget (``max_total_cpu_cores``,
    ``max_total_memory_gb``, ``max_total_pods``), or its cohort's total of them, when the job's cores or
    GB on nodes, or its pods, exceed what the answer leaves of it (``details`` then name the ``cohort``
    too); None when all have room (or there is none)."""
    from placer.solver.budgets import RESOURCE_LIMITS, RESOURCES, remaining_resource_room

    queue = plan.job.queue
    on_nodes = [u for u in plan.units if u.tpu is None]
    needs = (
        sum(u.replicas * u.need.cpu for u in on_nodes),
        sum(u.replicas * u.need.mem for u in on_nodes),
        float(sum(u.replicas for u in plan.units)),
    )
    cohort = budgets.res_cohort_of.get(queue or "")
    for of in (None, cohort) if cohort is not None else (None,):
        rooms = remaining_resource_room(queue, assignment, budgets, plans, evict_rank(plan.job), cohort=of)
        for resource, need, room, limit, unit in zip(
            RESOURCES, needs, rooms, RESOURCE_LIMITS, ("cores", "GB", "pods"), strict=True
        ):
            if room is None or need <= room + 1e-9:
                continue
            more = need - room
            who = f"queue {queue!r}" if of is None else f"cohort {of!r}"
            left = (
                f"has {room:g} {unit} left of {limit}"
                if room >= 0
                else f"is already {-room:g} {unit} over {limit}"
            )
            details = {"queue": queue, "resource": resource, "need": need, "room": room, "more": more}
            what = "queue" if of is None else "cohort"
            return Reason(
                code="QUEUE_BUDGET",
                message=f"{who} is over its {resource} budget"
                + ("" if of is None else f" (queue {queue!r} is in it)")
                + f": it needs {need:g} {unit} and the {what} {left} — fits if {who}'s budget allowed "
                f"{more:g} more {unit} (it waits; it is not rejected)",
                details=details if of is None else {**details, "cohort": of},
            )
    return None


def queue_flavors(
    plan: JobPlan,
    assignment: Assignment,
    budgets: Budgets,
    plans: list[JobPlan],
    cands: list[UnitCandidates],
    snap: Snapshot,
) -> Reason | None:
    """``QUEUE_BUDGET`` for per-flavor quotas: when, for some resource (GPUs, cores, GB, pods, in that
    order), every flavor with a quota of it whose nodes the job may use has less room left, after this
    answer, than the job needs of it (None otherwise, or when it may use nodes of no such flavor)."""
    from placer.solver.budgets import placed_flavors

    queue = plan.job.queue or ""
    units = [u for u in plan.units if u.tpu is None]
    needs = {
        "gpus": plan.job.total_gpu_milli / 1000,
        "cpu": sum(u.replicas * u.need.cpu for u in units),
        "memory": sum(u.replicas * u.need.mem for u in units),
        "pods": float(sum(u.replicas for u in units)),
    }
    may = np.zeros(len(snap.nodes), dtype=bool)
    for c in cands:
        if c.unit.tpu is None:
            may |= c.static
    rank = evict_rank(plan.job)
    evicted = [v for v in assignment.evictions if budgets.ranks.get(v, rank) < rank]
    placed: dict[tuple[str, str, str], float] = {}  # this answer's, per queue (a cohort's total counts all)
    for i, reps in assignment.placed.items():
        owner = plans[i].job.queue
        if owner is not None and budgets.flavored(owner):
            for (r, name), amount in placed_flavors(owner, reps, snap, budgets).items():
                placed[(owner, r, name)] = placed.get((owner, r, name), 0.0) + amount
    for resource, need in needs.items():
        usable = {
            f
            for n in np.flatnonzero(may)
            if (f := budgets.flavor_at(queue, snap.nodes[int(n)].node.labels, resource))
        }
        if not need or not usable:
            continue
        left = {f: budgets.flavor_left(queue, resource, f, evicted, placed) for f in usable}
        if any(need <= room + 1e-9 for room in left.values()):
            continue
        own = {f: budgets.flavor_left(queue, resource, f, evicted, placed, own_only=True) for f in usable}
        unit = _UNITS[resource]
        rooms = ", ".join(f"{f} {room:g}" for f, room in sorted(left.items()))
        details: dict[str, object] = {"queue": queue, "resource": resource, "need": need}
        if resource == "gpus":
            details["gpus"] = need
        details["flavors"] = dict(sorted(left.items()))
        cohort = budgets.flavor_cohort.get(queue) or next(
            (t.queues[queue][0] for t in budgets.flavor_trees.values() if queue in t.queues), None
        )
        whose = f" (its own, or its cohort {cohort!r}'s on the flavor)" if cohort is not None else ""
        if cohort is not None:
            details["cohort"] = cohort
            # Only the cohort's totals on the flavors hold it back: the queue's own quotas would let it in.
            details["cohort_only"] = any(need <= room + 1e-9 for room in own.values())
        return Reason(
            code="QUEUE_BUDGET",
            message=f"queue {queue!r} is over its {_QUOTA[resource]} quota on every flavor it may use"
            f"{whose}: it needs {need:g} {unit} and the flavors have {rooms} left "
            "(it waits; it is not rejected)",
            details=details,
        )
    return None


#: A per-flavor quota's resource as a message names its amounts, and its quota.
_UNITS = {"gpus": "GPUs", "cpu": "cores", "memory": "GB of memory", "pods": "pods"}
_QUOTA = {"gpus": "GPU", "cpu": "CPU", "memory": "memory", "pods": "pods"}


def throttle(group: str, limit: int, running: int, started: int) -> Reason:
    """``THROTTLE``: ``running`` jobs of ``group`` run and the decision starts ``started`` more, which is
    ``limit`` or more (a Slurm array's ``%N``)."""
    return Reason(
        code="THROTTLE",
        message=f"throttle group {group!r} lets {limit} run at once: {running} run and this decision "
        f"starts {started} (it waits for one of them to end; it is not rejected)",
        details={"group": group, "max_running": limit, "running": running, "started": started},
    )


def licenses(name: str, total: int | None, held: int, started: int, need: int) -> Reason:
    """``LICENSES``: the cluster has ``total`` seats of licence ``name`` (None: it defines no such
    licence, so none), running jobs hold ``held`` and the decision starts jobs holding ``started`` more,
    so the job's ``need`` does not fit. ``UNSATISFIABLE`` (fixed, with the same details) when ``need`` is
    more than the cluster has at all: it never runs (Slurm refuses such a request at submission)."""
    details = {"license": name, "total": total or 0, "held": held, "started": started, "seats": need}
    if total is not None and need > total:  # fixed: no decision, however empty the cluster, lets it run
        return Reason(
            code="UNSATISFIABLE",
            message=f"no decision can ever run it: it asks {need} seats of licence {name!r}, which has "
            f"{total}",
            details=details,
        )
    if total is None:
        return Reason(
            code="LICENSES",
            message=f"the cluster defines no licence {name!r} (a Slurm cluster's are what scontrol show "
            "licenses prints: placer place --slurm-licenses); the job waits for one",
            details=details,
        )
    return Reason(
        code="LICENSES",
        message=f"licence {name!r} has {total} seats: running jobs hold {held} and this decision starts "
        f"{started} more, so {need} more do not fit (it waits for seats; it is not rejected)",
        details=details,
    )


def group_gpus(group: str, limit: float, held: float, started: float, need: float) -> Reason:
    """``THROTTLE`` for a group's GPU limit (``Job.limits``' ``max_gpus``, a Slurm QOS's
    ``GrpTRES=gres/gpu``): its running jobs hold ``held`` GPUs and the decision starts ``started`` more,
    so the job's ``need`` does not fit under ``limit``."""
    return Reason(
        code="THROTTLE",
        message=f"group {group!r} holds at most {limit:g} GPUs at once: its running jobs hold {held:g} and "
        f"this decision starts {started:g} more, so {need:g} more do not fit (it waits; it is not rejected)",
        details={"group": group, "max_gpus": limit, "gpus_held": held, "gpus_started": started, "gpus": need},
    )


def cost_budget(kind: str, name: str, limit: int, left: int, cost: int) -> Reason:
    """``COST_BUDGET``: the job (costing ``cost`` money units per hour where it would run) does not fit
    what the ``kind`` (``queue`` or ``tenant``) ``name`` has ``left`` of its ``limit``; the message says
    how many more dollars per hour would let it run."""
    from placer.solver.prices import UNITS_PER_DOLLAR

    def usd(units: int) -> float:
        return units / UNITS_PER_DOLLAR

    more = cost - max(left, 0)
    what = "max_cost_per_hour" if kind == "queue" else "budgets.tenants"
    return Reason(
        code="COST_BUDGET",
        message=f"{kind} {name!r} is over its dollar budget: the job costs ${usd(cost):g}/h and the {kind} "
        f"has ${usd(max(left, 0)):g}/h left of its ${usd(limit):g}/h ({what}; running jobs and this "
        f"decision's placements count) — fits if {kind} {name!r}'s budget allowed ${usd(more):g}/h more "
        "(it waits; it is not rejected)",
        details={
            kind: name,
            "max_cost_per_hour": usd(limit),
            "left_per_hour": usd(max(left, 0)),
            "cost_per_hour": usd(cost),
            "more_cost_per_hour": usd(more),
        },
    )


def not_considered(limit_s: float) -> Reason:
    """The reason for jobs the deadline left unexamined."""
    return Reason(
        code="NOT_CONSIDERED",
        message=f"the {limit_s:g} s time limit ran out before this job's turn (jobs are considered in "
        "priority order); it stays pending for the next cycle — a longer time limit considers more jobs",
        details={"time_limit_s": limit_s},
    )


def unsatisfiable(plan: JobPlan, cands: list[UnitCandidates], why: str) -> Reason:
    """The fixed ``UNSATISFIABLE`` reason, with per-constraint node counts."""
    eliminated: dict[str, int] = {}
    for c in cands:
        if c.unit.tpu is not None:
            continue  # TPU replicas go to pods: node counts would only say "node has no GPU"
        for k, n in c.eliminated.items():
            eliminated[k] = max(eliminated.get(k, 0), n)
    text = f"no node of this cluster can ever run it: {why}"
    if eliminated:
        text += f" ({_counts(eliminated, STATIC_CHECKS)})"
    return Reason(code="UNSATISFIABLE", message=text, details={"eliminated": eliminated})


def unavailable(cands: list[UnitCandidates], up: list[UnitCandidates], snap: Snapshot) -> Reason:
    """The ``NODES_UNAVAILABLE`` reason: no node can run the job now only because every node that could is
    cordoned or not ready (``cands``: its candidates; ``up``: the same as if every node were up, among
    which it is satisfiable). It waits, as a pod on NotReady nodes stays Pending and a Slurm job waits
    with ``ReqNodeNotAvail``; ``UNSATISFIABLE``, fixed, would tell a backend to give up on it."""
    waiting = np.zeros(len(snap.nodes), dtype=bool)
    eliminated: dict[str, int] = {}
    for c, u in zip(cands, up, strict=True):
        if c.unit.tpu is not None:
            continue
        waiting |= u.static & ~c.static
        for k, n in c.eliminated.items():
            eliminated[k] = max(eliminated.get(k, 0), n)
    names = [snap.nodes[int(i)].name for i in np.flatnonzero(waiting)]
    return Reason(
        code="NODES_UNAVAILABLE",
        message=(
            f"the nodes that could run it are cordoned or not ready now ({few(names)}); "
            "it waits for them to come back"
        ),
        details={"count": len(names), "nodes": names[:MAX_NAMED], "eliminated": eliminated},
    )


def pending_reasons(
    plan: JobPlan,
    cands: list[UnitCandidates],
    assignment: Assignment,
    plans: list[JobPlan],
    snap: Snapshot,
    owners: Owners | None = None,
    ranks: Mapping[str, int] | None = None,
    memo: dict[tuple[bytes, int, bool], tuple[list[str], list[str], int, int]] | None = None,
    anti: np.ndarray | None = None,
    affinity: np.ndarray | None = None,
    spread: np.ndarray | None = None,
) -> list[Reason]:
    """Reasons for a job that was satisfiable but not placed. ``owners`` (:func:`owners_of`) and ``ranks``
    (job id to :func:`placer.solver.preempt.job_rank`, for every plan) may be computed once per answer:
    computed
    here per pending job they made explaining a 5,000-job batch quadratic (0.8 ms a job on 10,000 nodes).
    ``memo`` (one dict per answer) shares the takers among pending jobs that could use the same nodes and
    rank alike: 1,000 pending 4-GPU jobs behind 12,000 placed ones took 10 s without it. ``anti``: the
    nodes running jobs' anti-affinity keeps the job off (theirs or its own rules; a zone's or a rack's
    nodes for a rule on that domain), which its candidates do not count; ``affinity``: those of them its
    required pod affinity keeps it off (counted as ``pod_affinity``); ``spread``: those its topology
    spread constraints keep it off (``topology_spread``)."""
    reasons: list[Reason] = []
    node_units = [(u, c) for u, c in zip(plan.units, cands, strict=True) if u.tpu is None]
    tpu_units = [u for u in plan.units if u.tpu is not None]
    if tpu_units:
        shape = tpu_units[0].tpu
        assert shape is not None
        reasons.append(
            Reason(
                code="NO_TPU_SLICE",
                message=f"no free contiguous {shape.type or 'TPU'} slice of "
                f"{'x'.join(map(str, shape.topology)) if shape.topology else f'{shape.chip_count} chips'} "
                "in any pod it may use",
            )
        )
    if anti is not None and anti.any():
        node_units = [(u, _off_anti(c, anti, affinity, spread)) for u, c in node_units]
    short = [
        (u, c)
        for u, c in node_units
        if int(c.now.sum()) == 0 or (u.distinct and int(c.now.sum()) < u.replicas)
    ]
    for u, c in short:
        blocked = dict(c.blocked)
        reasons.append(
            Reason(
                code="INSUFFICIENT_CAPACITY",
                message=f"fits an empty cluster but not the current one: task group {u.group!r} needs "
                f"{u.replicas} replica(s) of {_need_text(u)}, and no free room now "
                f"({_counts(blocked, DYNAMIC_CHECKS)})",
                details={"blocked": blocked, "group": u.group},
            )
        )
    for u, c in node_units if not short else ():
        if u.exclusive_domains and u.slices is not None:
            reasons.append(_alone_reason(u, c, snap))
    if plan.nvlink and (plan.scope or "").startswith("nvlink_domain") and not short:
        gpus = sum(u.replicas * u.need.gpus for u, _ in node_units)
        reasons.append(
            Reason(
                code="NO_NVLINK_DOMAIN",
                message=f"needs {gpus} GPUs inside one NVLink domain; none it may use has that many free",
                details={"gpus": gpus},
            )
        )
    for u, c in node_units if not short else ():
        for level, _ in u.domains:
            if level.startswith(FLAVOR_LEVEL):
                reasons.append(_one_flavor_reason(u, c, level, snap))
    # Who took the room: placed jobs on the nodes this job could have used now.
    could = np.zeros(len(snap.nodes), dtype=bool)
    for _, c in node_units:
        could |= c.now
    mine = job_rank(plan.job)
    key = (could.tobytes(), mine, bool(tpu_units))
    hit = memo.get(key) if memo is not None else None
    if hit is None:
        hit = _takers(could, bool(tpu_units), mine, assignment, plans, owners, ranks)
        if memo is not None:
            memo[key] = hit
    ahead, behind, n_ahead, n_behind = hit
    if (n_ahead or n_behind) and not short:
        # Only jobs that rank at least as high may be called "higher priority". Lower-ranked takers mean
        # the model chose them together over this job because together they place more priority-weighted
        # demand (objective level 1); saying "lost to higher priority" would then be false.
        if ahead:
            reasons.append(
                Reason(
                    code="LOST_TO_HIGHER_PRIORITY",
                    message=(
                        "there was room, but jobs of this batch ranked ahead of it took it: "
                        f"{few(ahead, total=n_ahead)}"
                    ),
                    details={"jobs": ahead, "count": n_ahead},
                )
            )
        else:
            reasons.append(
                Reason(
                    code="OUTWEIGHED_IN_BATCH",
                    message=(
                        "there was room, but lower-priority jobs of this batch use it: "
                        f"{few(behind, total=n_behind)}; "
                        "together they place more priority-weighted demand than this job would, and "
                        "placing the most priority-weighted demand comes first"
                    ),
                    details={"jobs": behind, "count": n_behind},
                )
            )
    if not reasons:
        reasons.append(
            Reason(
                code="INSUFFICIENT_CAPACITY",
                message="its gang does not fit whole in the free capacity left (all replicas or none)",
            )
        )
    return reasons


def kept_apart_reason(plan: JobPlan, partners: list[str]) -> Reason:
    """``KEPT_APART``: a job of the batch it is kept apart from on a zone or rack (either job's required
    anti-affinity on that domain matches the other) was placed by this decision; one of such a pair is
    placed per decision (:mod:`placer.solver.apart`), and the next decision, with that job running, places
    this one outside its domain if there is room."""
    keys = sorted({k for k, _ in plan.anti_domains}) or ["a zone or rack"]
    return Reason(
        code="KEPT_APART",
        message=f"kept apart on {', '.join(keys)} from {few(partners, 5)}, which this decision places: "
        "one of such a pair is placed per decision; decided again once it runs",
        details={"jobs": partners},
    )


def affinity_reason(job: Job, first: str | None, plans: list[JobPlan]) -> Reason:
    """``POD_AFFINITY``: no running job matches every required pod-affinity term of ``job``, and it does
    not start its group — another job of the batch (``first``) starts it in this decision (at most one does:
    :mod:`placer.solver.apart`), or its own labels do not match (then the jobs of the batch that do match,
    which it may join once they run, are named)."""
    rules = [d.rule for d in job.placement.affinity_required]
    terms = [{"key": d.key, "rule": d.rule.model_dump(mode="json")} for d in job.placement.affinity_required]
    details: dict[str, object] = {"terms": terms}
    if first is not None and all(holds(r, job_labels(job)) for r in rules):
        why = f"job {first!r} of this batch starts its group in this decision; it joins it once that runs"
        details["first"] = first
    else:
        why = "its own labels do not match them, so it cannot start its group either"
        batch = sorted(
            p.id for p in plans if p.id != job.id and all(holds(r, job_labels(p.job)) for r in rules)
        )
        if batch:
            why += f"; of this batch {few(batch, 5)} match them: it can join once one runs"
            details["batch"] = batch
    return Reason(
        code="POD_AFFINITY",
        message=f"no running job matches every term of its required pod affinity, and {why}",
        details=details,
    )


def spread_reason(partners: list[str] | None, facts: list[dict[str, object]]) -> Reason:
    """``POD_TOPOLOGY_SPREAD``: the job's topology spread constraints leave it no node (``facts``: each
    domain's count of the jobs they match, and the least, as ``details.constraints``), or ``partners``,
    jobs of the batch that its constraints count or whose constraints count it, are placed by this
    decision (``details.jobs``; placer places one of such a pair per decision, :mod:`placer.solver.skew`,
    and decides the other next call, against where that one runs)."""
    if partners:
        return Reason(
            code="POD_TOPOLOGY_SPREAD",
            message=f"{few(partners, 5)} of this batch, which its topology spread counts (or whose spread "
            "counts it), is placed by this decision: one of such a pair is placed per decision; decided "
            "again once it runs",
            details={"jobs": partners},
        )

    def counts(f: Mapping[str, Any]) -> str:
        items = [f"{d} {n}" for d, n in f["counts"].items()]
        return f" (its pods per domain: {few(items, 5)})" if items else ""

    said = "; ".join(
        f"on {f['key']} at most {f['max_skew']} above the least domain ({f['least']}){counts(f)}"
        for f in facts
    )
    return Reason(
        code="POD_TOPOLOGY_SPREAD",
        message=f"no node keeps its topology spread constraints: {said}",
        details={"constraints": facts},
    )


def _off_anti(
    cand: UnitCandidates,
    anti: np.ndarray,
    affinity: np.ndarray | None = None,
    spread: np.ndarray | None = None,
) -> UnitCandidates:
    """``cand`` without the nodes ``anti`` keeps the job off, counted as blocked by ``anti_affinity``, or
    by ``pod_affinity`` for those of them in ``affinity``, by ``topology_spread`` for those (left) in
    ``spread``."""
    off = cand.now & anti
    if not off.any():
        return cand
    blocked = dict(cand.blocked)
    for name, mask in (("pod_affinity", affinity), ("topology_spread", spread)):
        if mask is None:
            continue
        by_it = int((off & mask).sum())
        if by_it:
            blocked[name] = blocked.get(name, 0) + by_it
        off = off & ~mask
    kept = int(off.sum())
    if kept:
        blocked["anti_affinity"] = blocked.get("anti_affinity", 0) + kept
    return UnitCandidates(cand.unit, cand.static, cand.now & ~anti, cand.eliminated, blocked)


def _alone_reason(unit: Unit, cand: UnitCandidates, snap: Snapshot) -> Reason:
    """``INSUFFICIENT_CAPACITY`` for exclusive slices: how many domains they need (one each, with nothing
    in it), and how many of the domains of their nodes have no running job now."""
    assert unit.slices is not None
    level, size = unit.slices
    need = unit.replicas // size
    domains: dict[str, bool] = {}  # domain -> nothing runs in it
    for n in range(len(snap.nodes)):
        value = scope_value(snap, n, level)
        if value is not None:
            domains[value] = domains.get(value, True) and not snap.nodes[n].running
    mine = {v for n in np.flatnonzero(cand.static) if (v := scope_value(snap, int(n), level)) is not None}
    free = sum(1 for v in mine if domains.get(v))
    return Reason(
        code="INSUFFICIENT_CAPACITY",
        message=f"task group {unit.group!r} runs in {need} slice(s) of {size}, each alone in a {level} where "
        f"nothing else runs or is placed; {free} of the {len(mine)} {level}s it may use have no running job "
        "now (a slice needs one to itself, with room for it)",
        details={
            "group": unit.group,
            "level": level,
            "slices": need,
            "free_domains": free,
            "domains": len(mine),
        },
    )


def _one_flavor_reason(unit: Unit, cand: UnitCandidates, level: str, snap: Snapshot) -> Reason:
    """``NO_ONE_FLAVOR``: Kueue gives the pod set one flavor, and no flavor alone has room for it (its pods
    may fit the flavors together); the nodes it may use now, per flavor."""
    now: dict[str, int] = {}
    for n in np.flatnonzero(cand.now).tolist():
        f = scope_value(snap, n, level)
        if f is not None:
            now[f] = now.get(f, 0) + 1
    per = {f: now.get(f, 0) for f, _ in level_flavors(level) or ()}
    return Reason(
        code="NO_ONE_FLAVOR",
        message=f"Kueue gives task group {unit.group!r} one flavor of {', '.join(per)}, and no flavor alone "
        f"has room for its {unit.replicas} pods of {_need_text(unit)} (nodes with room for one now: "
        f"{', '.join(f'{f}: {n}' for f, n in per.items())})",
        details={"group": unit.group, "flavors": per},
    )


Owners = tuple[np.ndarray, dict[int, set[str]], set[str]]

#: Pending reasons that mean "no room now" (not: never, over budget, waiting for a time or a dependency):
#: what planning, preemptibility hints and reservation notes answer.
CAPACITY_CODES = frozenset(
    {
        "INSUFFICIENT_CAPACITY",
        "NO_NVLINK_DOMAIN",
        "NO_ONE_FLAVOR",
        "NO_TPU_SLICE",
        "LOST_TO_HIGHER_PRIORITY",
        "OUTWEIGHED_IN_BATCH",
    }
)


def few(names: Sequence[str], most: int = 10, total: int | None = None) -> str:
    """At most ``most`` names, and how many more (of ``total``, when ``names`` is itself a first part).

    >>> few(["a", "b", "c"], most=2)
    'a, b and 1 more'
    >>> few(["a", "b"], most=2, total=5)
    'a, b and 3 more'
    """
    total = len(names) if total is None else total
    return ", ".join(names[:most]) + (f" and {total - min(most, len(names))} more" if total > most else "")


#: At most this many job ids in a pending reason's ``details.jobs`` (``details.count`` has them all): a
#: pending job behind 12,000 placed ones must not carry 12,000 ids, a thousand times over.
MAX_NAMED = 100


def _takers(
    could: np.ndarray,
    tpu: bool,
    mine: int,
    assignment: Assignment,
    plans: list[JobPlan],
    owners: Owners | None,
    ranks: Mapping[str, int] | None,
) -> tuple[list[str], list[str], int, int]:
    """Placed jobs on the nodes in ``could`` (and TPU slice holders when ``tpu``) ranked at least as high
    as ``mine`` and below it: the first :data:`MAX_NAMED` ids of each, sorted, and how many in all."""
    touched, by_node, tpu_owners = owners if owners is not None else owners_of(assignment, plans)
    takers: set[str] = set()
    if touched.size:
        for n in touched[could[touched]]:
            takers |= by_node[int(n)]
    if tpu:
        takers |= tpu_owners
    if ranks is not None:
        rank_of = {t: ranks[t] for t in takers if t in ranks}
    else:
        rank_of = {p.id: job_rank(p.job) for p in plans if p.id in takers}
    ahead = [t for t in takers if rank_of.get(t, mine) >= mine]
    behind = [t for t in takers if rank_of.get(t, mine) < mine]
    return heapq.nsmallest(MAX_NAMED, ahead), heapq.nsmallest(MAX_NAMED, behind), len(ahead), len(behind)


def owners_of(assignment: Assignment, plans: list[JobPlan]) -> Owners:
    """Nodes the assignment touches (sorted array), the job ids on each, and the jobs holding TPU slices:
    computed once per decision and shared by every pending job's explanation."""
    owners: dict[int, set[str]] = {}
    tpu: set[str] = set()
    for i, reps in assignment.placed.items():
        for r in reps:
            if r.node is not None:
                owners.setdefault(r.node, set()).add(plans[i].id)
            elif r.pod is not None:
                tpu.add(plans[i].id)
    return (np.array(sorted(owners), dtype=np.int64), owners, tpu)


def _need_text(u: Unit) -> str:
    need = u.need
    parts = []
    if need.gpus:
        parts.append(f"{need.gpus} GPU{'s' if need.gpus != 1 else ''}")
    if need.milli:
        parts.append(f"{need.milli / 1000:g} of a GPU")
    if need.cpu:
        parts.append(f"{need.cpu:g} cores")
    if need.mem:
        parts.append(f"{need.mem:g} GB memory")
    parts.extend(f"{amount:g} {name}" for name, amount in need.extra)
    return ", ".join(parts) or "nothing"
