"""Phase 9 driver: decide now, plan the rest, and keep lower-priority work off planned capacity.

:func:`with_plans` wraps the core decision (``decide`` or the reservation phases) and
:mod:`placer.solver.backfill`:

1. decide now with most of the time limit (``Policy.plan_share`` is kept for planning);
2. plan every waiting job (:func:`placer.solver.backfill.plan_holds`) and settle the timeline
   (:func:`placer.solver.backfill.settle`); when a job started now would delay a plan of higher priority,
3. decide once more with each job of lower priority kept off the nodes held for plans it would overlap
   (a ``hostname NotIn`` rule: the whole node, which is conservative when a plan holds part of it) where
   too few GPUs stay free beside the hold; if some still conflict (several stacked up beside one hold),
   once more with those kept off every such node, so that others of the batch may take their room; and
4. re-plan; any conflict left is moved to pending with ``BACKFILL_WOULD_DELAY`` (and an eviction made only
   for it is withdrawn), then plans are made again until nothing conflicts.

Every step only removes work or adds plans, so the result is valid at each planned start; the checker
verifies it (rule 18, :mod:`placer.solver.checks.plans`). Planning has at most ``Policy.plan_share`` of the
time
limit (at most ``Policy.plan_max_s``) from when the decision now is made, and starts no fit that would end
after that: jobs without a plan then are simply not protected in this cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime

from placer.solver.backfill import (
    PLANNABLE,
    Busy,
    Fit,
    Plans,
    Timeline,
    backfill_reason,
    ends,
    hold_of,
    not_on,
    plan_holds,
    planned_reason,
    rank_of,
    settle,
)
from placer.solver.cancel import cancelled
from placer.solver.core import probe_fit
from placer.solver.decision import Decision, JobPlacement, PendingJob, Reason, ReplicaPlacement
from placer.solver.explain import licenses
from placer.solver.jobs.model import Job, ReadResult
from placer.solver.policy import Policy
from placer.solver.preempt import escalated
from placer.solver.reservations import Reservation
from placer.solver.what_if import PROBE_PER_NODE_S
from placer.topology import Cluster

__all__ = ["RESERVATION_RANK", "Core", "jobs_by_id", "with_plans"]

#: A core decision of a batch within a time limit; ``engine`` overrides the policy's (planning's step 5
#: runs greedy's answer through the same steps with greedy alone).
Core = Callable[..., Decision]
#: What the steps after the first decision give: the decision, its plans, and whether backfill withdrew
#: anything from the first.
Outcome = tuple[Decision, Plans, bool]


def with_plans(
    core: Core,
    items: Sequence[Job | ReadResult],
    cluster: Cluster,
    policy: Policy,
    *,
    now: datetime,
    reservations: Sequence[Reservation] = (),
) -> Decision:
    """The core decision with plans (``Hold`` kind ``plan``/``workflow`` in ``reservations``) and the
    conservative-backfill rule applied; see the module docstring."""
    t0 = time.perf_counter()
    limit = policy.time_limit_s
    budget = min(limit * policy.plan_share, policy.plan_max_s)
    # Planning checks the clock between fits, and a fit is a greedy decision on a view of the whole
    # cluster (~30 ms on 1,000 nodes, 0.2-0.3 s on 10,000): no fit starts unless it should end in time.
    # Checking only that the deadline had not passed let scenario L's planning overrun it by 0.2 s.
    probe_s = PROBE_PER_NODE_S * len(cluster.nodes)
    # Under a short limit what starts now comes first: planning gets only what the decision leaves. Nor is
    # time kept back for planning that could not finish one fit in it.
    reserve = budget if limit >= policy.plan_min_limit_s and budget > probe_s else 0.0
    decision = core(items, max(0.05, limit - reserve))
    greedy_answer, core_stats = decision._greedy_answer, decision.stats
    jobs = jobs_by_id(items, now)
    later = any(r.start is not None and r.start > now for r in reservations)
    if not later and not any(_plannable(p, jobs) for p in decision.pending):
        return decision
    # Planning gets its share from when the decision is made, never more: a greedy decision leaves most
    # of the limit, and planning used to spend all of it (scenario M, greedy: 5.1 s of a 5 s limit for a
    # decision made in 0.3 s).
    end = min(t0 + limit, time.perf_counter() + budget) - 0.02
    if policy.reproducible:
        # A count of fits bounds reproducible planning (below); its wall clock is then the time limit's
        # alone, so that a loaded machine, where a fit takes longer than modelled, still finishes the same
        # fits (scenario M with another process running: planning was cut in 5 runs of 5).
        end = t0 + limit - 0.02
    deadline = end - probe_s  # the last moment a fit may start
    if time.perf_counter() > deadline - 0.01:
        _cut(decision)  # no time left to plan: the core decision stands, unprotected this cycle
        return decision
    # Reproducible runs spend a count of fits, not seconds: the count the budget allows at the modelled
    # cost of a fit (``PROBE_PER_NODE_S`` per node), the same on any machine. The wall clock still ends
    # planning at ``end``, and then says so (``stats.cut_by``).
    fits_left = [int(budget / probe_s) if policy.reproducible and probe_s > 0 else -1]
    cut = [False]

    def fit(job: Job, view: Cluster, t: datetime) -> JobPlacement | None:
        if fits_left[0] == 0:
            return None
        fits_left[0] -= 1
        if time.perf_counter() > deadline or cancelled():
            cut[0] = True
            return None
        return probe_fit(job, view, policy, t, end - time.perf_counter())

    stop = float("inf") if policy.reproducible else deadline

    def time_for_a_decision() -> tuple[bool, float]:
        left = end - time.perf_counter()
        return (left > 0.1 if policy.reproducible else left > max(0.1, 2 * probe_s)), left

    def settled(d: Decision, p: Plans, c: set[str]) -> tuple[Decision, Plans]:
        # 4. anything still in the way waits; plan again on what is left
        withdrawn = bool(c)
        for _ in range(4):
            if not c:
                break
            d = _withdraw(d, c, p, jobs)
            p, c = _plan(d, jobs, cluster, now, fit, stop, reservations, p)
        if c:  # out of rounds: the safe answer is to start none of them
            d, p = _withdraw(d, c, p, jobs), Plans()
        if withdrawn:
            _recount_seats(d, jobs)
        d.recount()  # stats follow the final placements: backfill may have withdrawn some
        return d, p

    def steps(decision: Decision, decide: Callable[[Sequence[Job | ReadResult], float], Decision]) -> Outcome:
        """Steps 2-4 from a first decision; ``decide`` makes the later ones."""
        plans, conflicts = _plan(decision, jobs, cluster, now, fit, stop, reservations)
        withdrew = bool(conflicts)
        second, left = time_for_a_decision()
        if conflicts and not second:
            cut[0] = True
        if conflicts and second:  # the second decision costs about a probe at least
            # 3. once more, lower-priority jobs kept off the nodes held for plans they would overlap.
            restricted = [_keep_off(item, jobs, plans, now, cluster) for item in items]
            first = decision
            again = decide(restricted, max(0.05, left * 0.5))
            if {"candidates", "greedy"} & set(again.stats.cut_by):
                # The time left was too short for a whole second decision: one that never considered most
                # of the batch would replace a complete answer with a worse one. Keep the first; step 4
                # withdraws what is in the way of plans.
                cut[0] = True
            else:
                decision = again
                _blame_backfill(decision, first, conflicts, plans, jobs)
                plans, conflicts = _plan(decision, jobs, cluster, now, fit, stop, reservations, plans)
        placed_before = {p.job for p in decision.placements}
        first_plans = plans
        decision, plans = settled(decision, plans, conflicts)
        stacked = placed_before - {p.job for p in decision.placements}
        third, left = time_for_a_decision()
        if stacked and not cut[0] and third:
            # 3b. jobs withdrawn in step 4 stacked up beside a plan (step 3 left the node open to each, as
            # enough GPUs stayed free beside the hold): once more with each of them kept off every node
            # held for a plan it would delay, and the better answer of the two stands. Withdrawing alone
            # can leave their room empty where other jobs of the batch lost to them (a 2-GPU job chosen
            # over a CPU job, then withdrawn: nothing ran where greedy ran the CPU job).
            restricted = [_keep_off(item, jobs, first_plans, now, cluster, strict=stacked) for item in items]
            again = decide(restricted, max(0.05, left * 0.5))
            if {"candidates", "greedy"} & set(again.stats.cut_by):
                cut[0] = True
            else:
                before = {p.job: p for p in decision.pending}
                # Planned afresh, as a first decision is: the holds made for the first answer sat beside
                # work this one does not start, and kept would see conflicts a new plan avoids.
                again_plans, again_conflicts = _plan(again, jobs, cluster, now, fit, stop, reservations)
                again, again_plans = settled(again, again_plans, again_conflicts)
                if (again.stats.objective or 0.0) > (decision.stats.objective or 0.0):
                    for p in again.pending:  # a stacked job waits for the plan it would delay, as it did
                        if p.job in stacked and p.job in before:
                            p.reasons = [r.model_copy() for r in before[p.job].reasons]
                    decision, plans = again, again_plans
        return decision, plans, withdrew

    uses_cpsat = policy.engine != "greedy"
    first = decision if uses_cpsat and greedy_answer is None else None  # the steps never change it
    decision, plans, withdrew = steps(decision, core)
    fifth, _ = time_for_a_decision()
    if uses_cpsat and withdrew and fifth:
        # 5. Backfill withdrew some of the first answer, and the decisions after it were CP-SAT's: a model
        # may well prefer again what backfill then withdraws. Greedy's first answer goes through the same
        # steps with greedy alone deciding, and the answer that keeps more stands, so that the default
        # engine never starts less than greedy alone would. (The engines' claim is about what starts, not
        # about what a model preferred.)
        if greedy_answer is not None:
            fallback = greedy_answer()
            fallback.stats = core_stats.model_copy(deep=True)
            fallback.stats.engine = "greedy"
            fallback.stats.objective = core_stats.greedy_objective
        else:
            assert first is not None  # greedy's answer was the first decision
            fallback = first

        def greedy_decide(batch: Sequence[Job | ReadResult], limit_s: float) -> Decision:
            return core(batch, limit_s, engine="greedy")

        g, g_plans, _ = steps(fallback, greedy_decide)
        if (g.stats.objective or 0.0) > (decision.stats.objective or 0.0):
            g.stats.status = "GREEDY_AFTER_BACKFILL"
            decision, plans = g, g_plans
    # Greedy's value and the bound on the batch as given, whichever decision stands: a later one saw a
    # batch restricted by placer's keep-off rules, stricter than backfill, so its own bound bounds that
    # batch only, and its OPTIMAL claimed nothing about this one.
    if decision.stats is not core_stats:
        decision.stats.greedy_objective = core_stats.greedy_objective
        decision.stats.bound, decision.stats.bound_source = core_stats.bound, core_stats.bound_source
        # A later decision weighed its answers on the batch it saw, not this one's.
        decision.stats.levels = decision.stats.greedy_levels = None
        if core_stats.bound is None and decision.stats.status == "OPTIMAL":
            decision.stats.status = "FEASIBLE"
        decision.recount()
    if cut[0] or (not policy.reproducible and time.perf_counter() > deadline):
        _cut(decision)
    _attach(decision, plans)
    decision.stats.wall_s = round(time.perf_counter() - t0, 6)
    return decision


def _cut(decision: Decision) -> None:
    """Record that the wall clock cut planning short (which jobs got a plan depends on the machine)."""
    if "planning" not in decision.stats.cut_by:
        decision.stats.cut_by.append("planning")
    decision.stats.deterministic = False


def jobs_by_id(items: Sequence[Job | ReadResult], now: datetime) -> dict[str, Job]:
    """The batch's jobs by id, as they count now (escalated, OJS ML §8.4)."""
    out: dict[str, Job] = {}
    for item in items:
        job = item.job if isinstance(item, ReadResult) else item
        if job is not None:
            out[job.id] = escalated(job, now)
    return out


def _plannable(p: PendingJob, jobs: dict[str, Job]) -> bool:
    job = jobs.get(p.job)
    return (
        job is not None
        and job.reservation is None
        and bool(p.reasons)
        and all(r.code in PLANNABLE for r in p.reasons)
    )


def _timeline(decision: Decision, jobs: dict[str, Job], cluster: Cluster, now: datetime) -> Timeline:
    evicted = sorted({e.job for e in decision.preemptions})
    base = cluster.release(*evicted) if evicted else cluster
    line = Timeline(base, now)
    for p in decision.placements:
        job = jobs[p.job]
        line.busy.append(
            Busy(
                p.job,
                list(p.replicas),
                now,
                ends(now, job.duration_s),
                rank_of(job),
                "placed",
                job.licenses,
            )
        )
    return line


def _plan(
    decision: Decision,
    jobs: dict[str, Job],
    cluster: Cluster,
    now: datetime,
    fit: Fit,
    deadline: float,
    reservations: Sequence[Reservation] = (),
    prior: Plans | None = None,
) -> tuple[Plans, set[str]]:
    line = _timeline(decision, jobs, cluster, now)
    future = _future_reservations(line, reservations)
    line.busy.extend(future.values())
    held = _reservation_nodes(decision, now)
    later = _reserved_later(reservations, future, line.now)

    def closed(job: Job, t0: datetime, t1: datetime | None) -> list[str]:
        return sorted({*held(job, t0, t1), *later(job, t0, t1)})

    plannable = {p.job: jobs[p.job] for p in decision.pending if _plannable(p, jobs)}
    plans = plan_holds(
        decision,
        plannable,
        line,
        fit,
        deadline=deadline,
        closed_nodes=closed,
        batch_ids=set(jobs) | {r.job for r in decision.rejected},
        prior=prior,
        grouped=jobs,
    )
    plans.future = future
    conflicts, dropped = settle(line)
    plans.seat_blame = line.seat_blame
    for job in dropped:
        future.pop(job, None)
        for d in (plans.holds, plans.kinds, plans.after, plans.placements):
            d.pop(job, None)
    return plans, conflicts


#: Reservations outrank every job: nothing started now may run into one that starts later.
RESERVATION_RANK = 10**12


def _future_reservations(line: Timeline, reservations: Sequence[Reservation]) -> dict[str, Busy]:
    """Reservations that start later, as holds from their start: the GPUs (whole nodes: all their free
    capacity) they will hold, among those free of running work then. Work started now that would still
    run at a reservation's start is lower-priority work delaying it, which backfill forbids."""
    out: dict[str, Busy] = {}
    for r in reservations:
        if r.start is None or r.start <= line.now or (r.end is not None and r.end <= r.start):
            continue
        at = line.base_at(r.start)
        replicas = []
        for node in r.node_names:
            if not at.has_node(node):
                continue
            free = list(at.free_gpus(node))
            if r.nodes:
                f = at.free(node)
                replicas.append(
                    ReplicaPlacement(
                        node=node, gpus=free, cpu_cores=max(0.0, f.cpu_cores), memory_gb=max(0.0, f.memory_gb)
                    )
                )
            else:
                # Which GPUs a count reservation will take is open: prefer those no placement still holds.
                busy = {
                    g
                    for b in line.busy
                    if b.kind == "placed" and b.alive(r.start, None)
                    for x in b.replicas
                    if x.node == node
                    for g in x.gpus
                }
                free.sort(key=lambda g: (g in busy, g))
                replicas.append(ReplicaPlacement(node=node, gpus=sorted(free[: r.gpus[node]])))
        name = f"reservation:{r.id}"
        out[name] = Busy(name, replicas, r.start, r.end, RESERVATION_RANK, "hold")
    return out


def _reserved_later(
    reservations: Sequence[Reservation], future: dict[str, Busy], now: datetime
) -> Callable[[Job, datetime, datetime | None], list[str]]:
    """Nodes of reservations that start later, closed to plans of other jobs whose window overlaps the
    reservation's ``[start, end)``. Why the hold in the timeline is not enough: it takes only what is
    free at the reservation's start, so capacity a running job frees inside the window would be open to
    plans. A whole node is closed throughout the window (OJS ML §8.3: others never use it while held); a
    GPU-count node only where the hold got fewer GPUs than the count (running work sat on the rest) —
    where it got its count, plans beside it leave that count free."""
    spans: list[tuple[str, datetime, datetime | None, list[str]]] = []  # (id, start, end, nodes)
    for r in reservations:
        if r.start is None or r.start <= now or (r.end is not None and r.end <= r.start):
            continue
        if r.nodes:
            spans.append((r.id, r.start, r.end, r.node_names))
            continue
        hold = future.get(f"reservation:{r.id}")
        got = {x.node: len(x.gpus) for x in hold.replicas} if hold is not None else {}
        short = [n for n, count in sorted(r.gpus.items()) if got.get(n, 0) < count]
        if short:
            spans.append((r.id, r.start, r.end, short))

    def closed(job: Job, t0: datetime, t1: datetime | None) -> list[str]:
        mine = job.reservation.id if job.reservation is not None else None
        return sorted(
            {
                n
                for rid, start, end, nodes in spans
                if rid != mine and (t1 is None or t1 > start) and (end is None or end > t0)
                for n in nodes
            }
        )

    return closed


def _reservation_nodes(
    decision: Decision, now: datetime
) -> Callable[[Job, datetime, datetime | None], list[str]]:
    """Nodes of declared reservations, closed to plans of other jobs while the reservation is held."""
    holds = [h for h in decision.reservations if h.kind == "reservation"]

    def closed(job: Job, t0: datetime, t1: datetime | None) -> list[str]:
        return sorted({r.node for h in holds if h.end is None or h.end > t0 for r in h.replicas})

    return closed


def _keep_off(
    item: Job | ReadResult,
    jobs: dict[str, Job],
    plans: Plans,
    now: datetime,
    cluster: Cluster,
    strict: set[str] | frozenset[str] = frozenset(),
) -> Job | ReadResult:
    """The job with a rule keeping it off nodes held for higher-priority plans (or later reservations)
    it would still be running at, where the GPUs free now outside the hold are too few for one of its
    replicas. Where enough stay free beside the hold, the node stays open: the settle after catches
    the rare case of several such jobs stacking up there, and a job named in ``strict`` (one that did)
    is kept off every such node."""
    job = item.job if isinstance(item, ReadResult) else item
    if job is None or job.id in plans.holds:
        return item
    mine = rank_of(jobs[job.id])
    end = ends(now, job.duration_s)
    need = max((g.gpu.count for g in job.tasks if g.gpu is not None), default=0)
    held: dict[str, set[int]] = {}
    for h in plans.blocking():
        if h.rank > mine and (end is None or end > h.start):
            for r in h.replicas:
                if r.tpu_pod is None:
                    held.setdefault(r.node, set()).update(r.gpus)
    nodes = sorted(
        n
        for n, gpus in held.items()
        if job.id in strict or not cluster.has_node(n) or len(set(cluster.free_gpus(n)) - gpus) < max(need, 1)
    )
    if not nodes:
        return item
    return not_on(job, nodes)


def _withdraw(decision: Decision, conflicts: set[str], plans: Plans, jobs: dict[str, Job]) -> Decision:
    """The decision without the conflicting placements: each waits with ``BACKFILL_WOULD_DELAY`` naming
    the plan it would delay; an eviction made only for withdrawn jobs is withdrawn too."""
    out = decision.model_copy(deep=True)
    out.placements = [p for p in out.placements if p.job not in conflicts]
    for job_id in sorted(conflicts):
        holder, hold, seats = _delayed_by(decision.placement_of(job_id), jobs[job_id], plans)
        reasons = [backfill_reason(job_id, holder, hold, seats)] if hold is not None else []
        out.pending.append(PendingJob(job=job_id, reasons=reasons or [_generic_backfill()]))
    kept = []
    for e in out.preemptions:
        e.for_ = [j for j in e.for_ if j not in conflicts]
        if e.for_:
            kept.append(e)
    out.preemptions = kept
    out.pending.sort(key=lambda p: p.job)
    return out


def _recount_seats(decision: Decision, jobs: dict[str, Job]) -> None:
    """``LICENSES`` reasons say how many seats the decision starts: after a withdrawal, the seats of what
    it still starts (a job withdrawn for a plan's seats no longer holds any)."""
    started: dict[str, int] = {}
    for q in decision.placements:
        job = jobs.get(q.job)
        for name, n in (job.licenses if job is not None else {}).items():
            started[name] = started.get(name, 0) + n
    for p in decision.pending:
        for k, r in enumerate(p.reasons):
            d = r.details
            if r.code == "LICENSES" and d.get("total") and d.get("started") != started.get(d["license"], 0):
                p.reasons[k] = licenses(
                    d["license"], d["total"], d["held"], started.get(d["license"], 0), d["seats"]
                )


def _blame_backfill(
    decision: Decision, first: Decision, conflicts: set[str], plans: Plans, jobs: dict[str, Job]
) -> None:
    """A job that started in the first decision and waits in the second waits because of the plan it
    would delay, whatever the second decision (which saw it kept off held nodes) says. A job waiting in
    both keeps the first decision's reasons: the keep-off rule is placer's, not the job's constraint."""
    before = {p.job: p.reasons for p in first.pending}
    for p in decision.pending:
        if p.job in before:
            p.reasons = [r.model_copy() for r in before[p.job]]
        elif p.job in conflicts:
            holder, hold, seats = _delayed_by(first.placement_of(p.job), jobs[p.job], plans)
            p.reasons = [
                backfill_reason(p.job, holder, hold, seats) if hold is not None else _generic_backfill()
            ]


def _delayed_by(placement: JobPlacement | None, job: Job, plans: Plans) -> tuple[str, Busy | None, list[str]]:
    """The plan of higher priority the job would delay: the one whose licence seats it would hold (then
    those licences), else the first on a node it uses."""
    blamed = plans.seat_blame.get(job.id)
    if blamed is not None and blamed[0] in plans.holds:
        return blamed[0], plans.holds[blamed[0]], blamed[1]
    nodes = {f"pod:{r.tpu_pod}" if r.tpu_pod else r.node for r in placement.replicas} if placement else set()
    mine = rank_of(job)
    for h in sorted(plans.blocking(), key=lambda b: (b.start, b.job)):
        if h.rank > mine and h.locations & nodes:
            return h.job, h, []
    return "", None, []


def _generic_backfill() -> Reason:
    return Reason(
        code="BACKFILL_WOULD_DELAY",
        message="starting now would delay the planned start of higher-priority work",
        details={},
    )


def _attach(decision: Decision, plans: Plans) -> None:
    """Plans into ``decision.reservations`` and a ``PLANNED_START`` reason on each planned job."""
    for job_id in sorted(plans.holds):
        busy = plans.holds[job_id]
        decision.reservations.append(hold_of(job_id, busy, plans.kinds[job_id], plans.placements[job_id]))
        for p in decision.pending:
            if p.job == job_id:
                p.reasons.append(planned_reason(job_id, busy, plans.after.get(job_id, [])))
