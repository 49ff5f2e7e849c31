"""Rule 15b, reservation isolation (OJS ML resources §8.3), for declared reservations
(:class:`placer.solver.reservations.Reservation`, an input type):

* a job naming a reservation is placed only while the reservation is held, runs only on its nodes and, for
  a GPU-count reservation, on at most that many GPUs of each node; with a known duration it ends by the
  reservation's ``end`` (the capacity is guaranteed only until then);
* other jobs never use a held whole-node reservation's nodes, and leave a held GPU-count reservation's GPUs
  free (on each such node they take at most the free GPUs minus the reserved count);
* work started now by other jobs does not run into a reservation that starts later
  (``reservation-backfill``): on a whole reserved node, a non-member placed now must end by the
  reservation's start; on a GPU-count node, the GPUs still held at the start by running work and by
  non-members placed now must leave the reserved count free. A job without a duration runs forever.
* plans of other jobs (``plan``/``workflow`` holds) leave a reservation held now or starting later its
  capacity during its window (``reservation-plan``): no such plan on a whole reserved node while the
  window and the plan overlap; on a GPU-count node, whenever such a plan there is alive in the window,
  running work, non-members placed now and non-member plans leave the reserved count free.

*Held* is re-derived here from the inputs: started, not ended, and — with ``timeout_s`` — either within
``timeout_s`` of its start or in use: a running job whose envelope names the reservation
(``RunningJob.reservation``) holds something on one of its nodes. A job merely sitting on a reserved node
does not keep the reservation held (OJS ML §8.3 ties jobs to a reservation only by its id).

>>> from placer.solver.decision import Decision
>>> from placer.topology import cluster_of, cpu_nodes
>>> from datetime import UTC, datetime
>>> list(check_reservations(Decision(), {}, cluster_of(cpu_nodes(1)), [], datetime.now(UTC)))
[]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from placer.solver.checks.violation import Violation
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job
from placer.topology import Cluster

__all__ = ["check_reservations"]


def _in_use(r: Any, before: Cluster | None) -> bool:
    """Whether a member of ``r`` runs in it: it names ``r`` and holds something on one of its nodes."""
    if before is None:
        return False
    return any(
        before.running_job(j).reservation == r.id
        for node in r.node_names
        if before.has_node(node)
        for j in before.usage(node).jobs
    )


def _held(r: Any, now: datetime, before: Cluster | None) -> bool:
    """Whether a reservation holds its capacity at ``now`` (see the module docstring)."""
    if r.start is not None and now < r.start:
        return False
    if r.end is not None and now >= r.end:
        return False
    if r.timeout_s is None or (now - (r.start or now)).total_seconds() <= r.timeout_s:
        return True
    return _in_use(r, before)


def _ends(job: Job | None, now: datetime) -> datetime | None:
    """When a job placed now ends: ``now`` plus its duration; None (never) without one."""
    if job is None or job.duration_s is None:
        return None
    return now + timedelta(seconds=job.duration_s)


def check_reservations(
    decision: Decision,
    jobs: Mapping[str, Job],
    cluster: Cluster,
    reservations: Sequence[Any],
    now: datetime,
    before: Cluster | None = None,
) -> Iterator[Violation]:
    """``reservation`` and ``reservation-backfill`` violations; ``cluster`` is the cluster after the
    decision's evictions, ``before`` the cluster as given (whose running members keep a reservation with
    ``timeout_s`` held). Members of a reservation that is not held may not be placed at all; only held
    reservations keep others out now, and reservations that start later keep out work still running
    then."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    known = [r for r in reservations if hasattr(r, "node_names")]
    declared = {r.id: r for r in known if _held(r, now, before)}
    later = [r for r in known if r.start is not None and r.start > now]
    for p in decision.placements:
        job = jobs.get(p.job)
        rid = job.reservation.id if job is not None and job.reservation is not None else None
        r = next((x for x in known if x.id == rid), None) if rid else None
        if r is None:
            continue
        if r.id not in declared:
            yield Violation("reservation", p.job, f"its reservation {r.id!r} is not held now")
            continue
        end = _ends(job, now)
        if r.end is not None and end is not None and end > r.end:
            yield Violation(
                "reservation",
                p.job,
                f"started now it runs until {end.isoformat()}, past the end of its reservation {r.id!r} "
                f"({r.end.isoformat()})",
            )
    if not declared and not later:
        return
    member_gpus: dict[tuple[str, str], int] = {}
    other_gpus: dict[str, int] = {}
    # node -> [(job, its reservation, GPU indices, end)] of every placement, for reservations that start later
    placed_on: dict[str, list[tuple[str, str | None, set[int], datetime | None]]] = {}
    for p in decision.placements:
        job = jobs.get(p.job)
        rid = job.reservation.id if job is not None and job.reservation is not None else None
        r = declared.get(rid) if rid else None
        for rep in p.replicas:
            if rep.tpu_pod is not None:
                continue
            n = len(rep.gpus)
            placed_on.setdefault(rep.node, []).append((p.job, rid, set(rep.gpus), _ends(job, now)))
            if r is not None:
                if rep.node not in r.node_names:
                    yield Violation(
                        "reservation", p.job, f"it runs outside its reservation {r.id!r}", rep.node
                    )
                member_gpus[(r.id, rep.node)] = member_gpus.get((r.id, rep.node), 0) + n
                continue
            other_gpus[rep.node] = other_gpus.get(rep.node, 0) + n
            for held in declared.values():
                if held.nodes and rep.node in held.nodes:
                    yield Violation(
                        "reservation",
                        p.job,
                        f"it uses node {rep.node} held whole by reservation {held.id!r}",
                        rep.node,
                    )
    for r in declared.values():
        for node, count in r.gpus.items():
            used = member_gpus.get((r.id, node), 0)
            if used > count:
                yield Violation(
                    "reservation", r.id, f"members hold {used} GPUs of {node}; it reserves {count}", node
                )
            if not cluster.has_node(node):
                continue
            free = len(cluster.free_gpus(node))
            others = other_gpus.get(node, 0)
            if others > max(0, free - count):
                yield Violation(
                    "reservation",
                    r.id,
                    f"other jobs take {others} of the {free} free GPUs of {node}, "
                    f"leaving fewer than the {count} it reserves",
                    node,
                )
    for r in later:
        yield from _backfill(r, placed_on, cluster)
    plans = [h for h in decision.reservations if h.kind in ("plan", "workflow") and h.start is not None]
    for r in [*declared.values(), *later] if plans else ():
        yield from _planned(r, plans, decision, jobs, cluster, now)


def _window(r: Any, now: datetime) -> tuple[datetime | None, datetime | None]:
    """The span over which ``r`` surely holds its capacity (None: unbounded): ``[start, end)``, and with
    ``timeout_s`` only until ``start + timeout_s`` — after that it is released unless a member runs in it,
    which nothing decided now can show."""
    end = r.end
    if r.timeout_s is not None:
        cut = (r.start or now) + timedelta(seconds=r.timeout_s)
        end = cut if end is None else min(end, cut)
    return r.start, end


def _planned(
    r: Any,
    plans: Sequence[Any],
    decision: Decision,
    jobs: Mapping[str, Job],
    cluster: Cluster,
    now: datetime,
) -> Iterator[Violation]:
    """Plans (``plan``/``workflow`` holds) of jobs that are not members of ``r`` that use its capacity
    while it is held (``reservation-plan``). A plan is a promise to start the job there: breaking the
    reservation then is as wrong as breaking it now. On a whole node, any overlap is a violation. On a
    GPU-count node, at each moment a non-member plan there starts to overlap the window, the GPUs held then
    by running work, by non-members placed now and by non-member plans alive then must leave the reserved
    count free (usage only falls between those moments: running work and placements only end)."""
    w0, w1 = _window(r, now)

    def member(job_id: str | None) -> bool:
        job = jobs.get(job_id or "")
        return job is not None and job.reservation is not None and job.reservation.id == r.id

    def overlaps(h: Any) -> bool:
        return (w1 is None or h.start < w1) and (w0 is None or h.end is None or h.end > w0)

    others = [h for h in plans if not member(h.job) and overlaps(h)]
    span = f"from {w0.isoformat() if w0 else 'the start'} to {w1.isoformat() if w1 else 'forever'}"
    for node in r.node_names:
        mine = [h for h in others if any(x.node == node and x.tpu_pod is None for x in h.replicas)]
        if r.nodes:
            for h in mine:
                yield Violation(
                    "reservation-plan",
                    h.job or "?",
                    f"its plan from {h.start.isoformat()} uses node {node}, held whole by reservation "
                    f"{r.id!r} {span} (a plan without an end runs forever)",
                    node,
                )
            continue
        if not cluster.has_node(node):
            continue
        count = r.gpus[node]
        total = cluster.node(node).gpu_count
        for t in sorted({max(h.start, w0) if w0 is not None else h.start for h in mine}):
            alive = [h for h in mine if h.start <= t and (h.end is None or h.end > t)]
            planned = {g for h in alive for x in h.replicas if x.node == node for g in x.gpus}
            if not planned:
                continue  # CPU-only plans there take no reserved GPU
            busy = set(planned)
            for job_id in cluster.usage(node).jobs:  # running work still there at t
                rj = cluster.running_job(job_id)
                if rj.expected_end is None or rj.expected_end > t:
                    busy.update(g for rep in rj.replicas if rep.node == node for g in rep.gpus)
            for p in decision.placements:  # non-members placed now, still running at t
                end = _ends(jobs.get(p.job), now)
                if not member(p.job) and (end is None or end > t):
                    busy.update(
                        g for rep in p.replicas if rep.node == node and rep.tpu_pod is None for g in rep.gpus
                    )
            if total - len(busy) < count:
                yield Violation(
                    "reservation-plan",
                    r.id,
                    f"at {t.isoformat()} it needs {count} GPUs of {node}; running work, jobs placed now "
                    f"and the plans of {', '.join(sorted(h.job or '?' for h in alive))} hold {len(busy)} "
                    f"of its {total} then",
                    node,
                )


def _backfill(
    r: Any,
    placed_on: Mapping[str, list[tuple[str, str | None, set[int], datetime | None]]],
    cluster: Cluster,
) -> Iterator[Violation]:
    """Jobs placed now, not members of ``r`` (a reservation starting later), that would still run at its
    start on its nodes. A GPU-count violation is the reservation's (several jobs may share it)."""
    start: datetime = r.start
    for node in r.node_names:
        alive = [
            (j, gpus)
            for j, rid, gpus, end in placed_on.get(node, ())
            if rid != r.id and (end is None or end > start)
        ]
        if not alive:
            continue
        if r.nodes:
            for j, _ in alive:
                yield Violation(
                    "reservation-backfill",
                    j,
                    f"it would still run at {start.isoformat()}, when reservation {r.id!r} takes node {node} "
                    "whole (a job without a duration runs forever)",
                    node,
                )
            continue
        if not cluster.has_node(node):
            continue
        count = r.gpus[node]
        busy: set[int] = set()
        for job_id in cluster.usage(node).jobs:  # running work still there at the start
            rj = cluster.running_job(job_id)
            if rj.expected_end is None or rj.expected_end > start:
                busy.update(g for rep in rj.replicas if rep.node == node for g in rep.gpus)
        placed = set().union(*(g for _, g in alive)) - busy
        free_then = cluster.node(node).gpu_count - len(busy)
        if free_then - len(placed) < count:
            yield Violation(
                "reservation-backfill",
                r.id,
                f"at {start.isoformat()} it needs {count} GPUs of {node}; running work and jobs placed now "
                f"({', '.join(sorted({j for j, _ in alive}))}) still hold {len(busy) + len(placed)} of its "
                f"{cluster.node(node).gpu_count} then (a job without a duration runs forever)",
                node,
            )
