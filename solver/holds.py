"""Placing a batch when the cluster declares reservations: two calls of the same pure core.

Phase A, per active reservation with member jobs: the members are placed on a view of the cluster where
only the reserved capacity is open to them (a ``hostname`` rule keeps them on the reserved nodes; the
non-reserved free GPUs of those nodes are held by a blocker). Phase B: every other job is placed on a view
where phase A's placements run and the rest of each reservation is held. The merged Decision lists every
placement, and each reservation's hold in ``reservations``. Decide first (phases), act second (merge).

Running jobs on reserved capacity are *pinned* (made non-preemptible in a phase's view) where an eviction
would hand reserved capacity to the wrong job:

* phase B, whole-node reservation: every running job on its nodes. The node is held whole; what an
  eviction frees there belongs to the reservation, never to a non-member (OJS ML §8.3: "other jobs never
  use reserved capacity while it is held");
* phase B, GPU-count reservation: running jobs on a node where the reservation holds fewer GPUs than it
  reserves (running work sits on the rest), since the GPUs an eviction frees go to the reservation first.
  Where it holds its full count, non-members may evict there as anywhere else;
* phase A, GPU-count reservation: running jobs on its nodes. Members use only the GPUs it holds; evicting
  a neighbour would give them more than the reservation's count.

A reservation is held (``Reservation.state``) while it has started and not ended, and, with ``timeout_s``,
while one of its members runs in it (:func:`placer.solver.reservations.running_members`) or the timeout since
its
start has not passed.

A member job the reservation can never hold (it needs more GPUs than reserved, a node shape the reserved
nodes lack, or it runs longer than the reservation's whole window) is rejected, as OJS ML §8.3 asks
("sufficient unreleased capacity"); a member whose known duration (``ext_ml_timeout_seconds``) would run
past the reservation's ``end`` from now waits (``RESERVATION_ENDS``): the capacity is guaranteed only until
then. A member without a duration is not refused (its length is unknown). A member of a reservation that
is not active now (not started, ended, released after ``timeout_s``) waits with ``RESERVATION_INACTIVE``.
A reservation naming a node the cluster lacks is an input error (``JobValidationError``,
:func:`placer.solver.reservations.check_against`), raised before anything is placed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from placer.solver.core import decide
from placer.solver.decision import (
    Decision,
    Hold,
    PendingJob,
    Reason,
    RejectedJob,
    ReplicaPlacement,
    Stats,
    as_running,
)
from placer.solver.explain import CAPACITY_CODES
from placer.solver.jobs.model import Job, LabelRule, ReadResult
from placer.solver.jobs.queues import QueueConfig
from placer.solver.policy import Policy
from placer.solver.reservations import Reservation, check_against, running_members
from placer.topology import Cluster, RunningJob

__all__ = ["place_with_reservations"]


def _held_gpus(cluster: Cluster, r: Reservation) -> dict[str, list[int]]:
    """GPU indices a reservation holds now, per node: the lowest free ones (whole nodes: all free)."""
    out: dict[str, list[int]] = {}
    for node in r.node_names:
        if not cluster.has_node(node):
            continue
        free = list(cluster.free_gpus(node))
        out[node] = free if r.nodes else free[: r.gpus[node]]
    return out


def _blocker(job: str, cluster: Cluster, hold: Mapping[str, list[int]], *, whole: bool) -> RunningJob | None:
    """A pseudo running job holding ``hold`` GPUs per node (and, for whole nodes, their free CPU, memory
    and the extended resources of their allocatable), so that a phase's view has that capacity taken."""
    replicas = []
    for node, gpus in sorted(hold.items()):
        free = cluster.free(node)
        rep: dict[str, object] = {"node": node, "gpus": gpus}
        if whole:
            rep.update(
                cpu_cores=max(0.0, free.cpu_cores),
                memory_gb=max(0.0, free.memory_gb),
                storage_gb=max(0.0, free.storage_gb),
                shm_gb=max(0.0, free.shm_gb or 0.0),
                extra={
                    name: left
                    for name in sorted(cluster.node(node).spec.extra)
                    if (left := cluster.free_extra(node, name)) > 0
                },
            )
        if gpus or whole:
            replicas.append(rep)
    if not replicas:
        return None
    return RunningJob.model_validate(
        {"job": job, "priority_class": "reserved", "preemptible": False, "replicas": replicas}
    )


def _pinned(cluster: Cluster, nodes: Iterable[str]) -> Cluster:
    """``cluster`` with every running job that holds something on ``nodes`` made non-preemptible, for one
    phase's view (see the module docstring: an eviction there would hand reserved capacity to the wrong
    job). The running jobs keep their devices; only who may evict them changes."""
    ids = sorted({j for n in nodes if cluster.has_node(n) for j in cluster.usage(n).jobs})
    pin = [
        rj
        for rj in (cluster.running_job(j) for j in ids)
        if rj.preemptible is not False and rj.priority_class != "reserved"
    ]
    if not pin:
        return cluster
    fixed = [rj.model_copy(update={"preemptible": False}) for rj in pin]
    return cluster.release(*(rj.job for rj in pin)).with_allocations(fixed)


def place_with_reservations(
    jobs: Sequence[Job | ReadResult],
    cluster: Cluster,
    policy: Policy,
    *,
    now: datetime,
    queues: Mapping[str, QueueConfig] | None,
    reservations: Sequence[Reservation],
) -> Decision:
    """The decision for ``jobs`` with ``reservations`` held (see the module docstring); raises
    :class:`~placer.solver.jobs.errors.JobValidationError` for a reservation naming a node the cluster
    lacks."""

    check_against(reservations, cluster)
    t0 = time.perf_counter()
    by_id = {r.id: r for r in reservations}
    members: dict[str, list[Job]] = {}
    others: list[Job | ReadResult] = []
    for item in jobs:
        job = item.job if isinstance(item, ReadResult) else item
        if job is not None and job.reservation is not None and job.reservation.id in by_id:
            members.setdefault(job.reservation.id, []).append(job)
        else:
            others.append(item)

    out = Decision()
    view_b_jobs: list[RunningJob] = []
    phase_stats: list[Stats] = []
    # Held or not is judged on the cluster as given: a member running in it now keeps it held.
    states = {r.id: r.state(now, running_members(r, cluster)) for r in reservations}
    pin_b: set[str] = set()  # nodes whose running jobs non-members may not evict (module docstring)
    n_phases = 1 + sum(1 for rid in members if states[rid] == "active")
    for r in reservations:
        state = states[r.id]
        if state != "active":
            for job in members.get(r.id, []):
                out.pending.append(PendingJob(job=job.id, reasons=[_inactive(r, state)]))
            continue
        hold = _held_gpus(cluster, r)
        here = cluster  # the cluster after this reservation's members' evictions
        used: dict[str, set[int]] = {}
        fitting = _within_window(members.get(r.id, []), r, now, out)
        if fitting:
            # Phase A: members see only the reserved capacity.
            outside = {
                n: [g for g in cluster.free_gpus(n) if g not in hold.get(n, [])]
                for n in r.node_names
                if cluster.has_node(n)
            }
            blocker = (
                None if r.nodes else _blocker(f"reservation-outside:{r.id}", cluster, outside, whole=False)
            )
            view_a = cluster if r.nodes else _pinned(cluster, r.node_names)
            view_a = view_a.with_allocations([blocker]) if blocker else view_a
            confined = [_confine(j, r) for j in fitting]
            budget = max(0.05, (policy.time_limit_s - (time.perf_counter() - t0)) / n_phases)
            n_phases -= 1
            da = decide(
                confined,
                view_a,
                policy.model_copy(update={"time_limit_s": budget}),
                now=now,
                queues=queues,
                reserved_ok=frozenset({r.id}),
            )
            phase_stats.append(da.stats)
            # Too small is judged on what the reservation declares, not on what is free now: a member
            # that fits once the members running in it end waits (INSUFFICIENT_CAPACITY).
            size = _declared_gpus(cluster, r)
            for job in fitting:
                if job.total_gpus > size:
                    da.pending = [p for p in da.pending if p.job != job.id]
                    out.rejected.append(
                        _cannot_hold(job, r, f"it needs {job.total_gpus} GPUs; the reservation holds {size}")
                    )
            for p in list(da.pending):
                if p.reasons and p.reasons[0].code == "UNSATISFIABLE":
                    da.pending.remove(p)
                    out.rejected.append(
                        RejectedJob(
                            job=p.job,
                            errors=[
                                {
                                    "code": "reservation",
                                    "path": "reservation.id",
                                    "message": f"reservation {r.id!r} cannot hold it: {p.reasons[0].message}",
                                }
                            ],
                        )
                    )
            out.placements.extend(da.placements)
            out.pending.extend(da.pending)
            out.rejected.extend(da.rejected)
            out.preemptions.extend(da.preemptions)
            evicted = sorted({e.job for e in da.preemptions})
            if evicted:  # only whole-node members evict (GPU-count views are pinned): the node stays held
                here = cluster.release(*evicted)
                hold = _held_gpus(here, r)
            for placed in da.placements:
                job = next(j for j in fitting if j.id == placed.job)
                reps = [rep for rep in placed.replicas if rep.tpu_pod is None]
                if reps:
                    view_b_jobs.append(
                        as_running(
                            placed.job,
                            reps,
                            queue=job.queue,
                            tenant=job.tenant,
                            priority_class=job.priority_class.value,
                            reservation=r.id,
                            throttle_group=None if job.throttle is None else job.throttle.group,
                            limit_groups=[lim.group for lim in job.limits],
                            licenses=dict(job.licenses),
                        )
                    )
                for rep in placed.replicas:
                    used.setdefault(rep.node, set()).update(rep.gpus)
        out.reservations.append(
            Hold(
                kind="reservation",
                reservation=r.id,
                start=r.start,
                end=r.end,
                replicas=[ReplicaPlacement(node=n, gpus=g) for n, g in sorted(hold.items())],
            )
        )
        if r.nodes:
            pin_b.update(r.node_names)
        else:
            pin_b.update(n for n, gs in hold.items() if len(gs) < r.gpus[n])
        rest = {n: [g for g in gs if g not in used.get(n, set())] for n, gs in hold.items()}
        # A whole-node hold takes the CPU and memory its members left, not what was free before them.
        members_here = [j for j in view_b_jobs if j.reservation == r.id]
        basis = here.with_allocations(members_here) if r.nodes and members_here else here
        blocker = _blocker(f"reservation:{r.id}", basis, rest, whole=bool(r.nodes))
        if blocker is not None:
            view_b_jobs.append(blocker)

    # Phase B: everyone else, with the reservations held and their members' placements running; running
    # jobs on held capacity pinned where an eviction would free reserved capacity for them.
    base = cluster.release(*sorted({e.job for e in out.preemptions})) if out.preemptions else cluster
    base = _pinned(base, sorted(pin_b)) if pin_b else base
    view_b = base.with_allocations(view_b_jobs) if view_b_jobs else base
    budget = max(0.05, policy.time_limit_s - (time.perf_counter() - t0))
    db = decide(others, view_b, policy.model_copy(update={"time_limit_s": budget}), now=now, queues=queues)
    _name_holds(db, out.reservations)
    out.placements.extend(db.placements)
    out.pending.extend(db.pending)
    out.rejected.extend(db.rejected)
    out.preemptions.extend(e for e in db.preemptions if not e.job.startswith("reservation"))
    out.placements.sort(key=lambda p: p.job)
    out.pending.sort(key=lambda p: p.job)
    out.rejected.sort(key=lambda r: r.job)
    out.preemptions.sort(key=lambda e: e.job)
    out.stats = _merge_stats([*phase_stats, db.stats], time.perf_counter() - t0)
    return out


def _within_window(members: Sequence[Job], r: Reservation, now: datetime, out: Decision) -> list[Job]:
    """The members whose known duration fits what is left of the reservation's window. The others are
    answered in ``out``: rejected when the duration exceeds the whole window (the reservation can never
    hold it), pending ``RESERVATION_ENDS`` when only the time left is too short (the capacity is
    guaranteed until ``end``; the operator may extend it)."""
    fitting: list[Job] = []
    for job in members:
        d = job.duration_s
        if r.end is None or d is None:
            fitting.append(job)
        elif r.start is not None and d > (r.end - r.start).total_seconds():
            window = int((r.end - r.start).total_seconds())
            out.rejected.append(
                _cannot_hold(job, r, f"it runs {d:g} s; the reservation's window is {window} s")
            )
        elif now + timedelta(seconds=d) > r.end:
            left = max(0, int((r.end - now).total_seconds()))
            out.pending.append(
                PendingJob(
                    job=job.id,
                    reasons=[
                        Reason(
                            code="RESERVATION_ENDS",
                            message=f"it runs {d:g} s, and its reservation {r.id!r} ends at "
                            f"{r.end.isoformat()}, {left} s from now: started now it would outlive the "
                            "reserved capacity",
                            details={"reservation": r.id, "end": r.end.isoformat(), "duration_s": d},
                        )
                    ],
                )
            )
        else:
            fitting.append(job)
    return fitting


def _name_holds(d: Decision, holds: Sequence[Hold]) -> None:
    """Say in phase B's capacity reasons that reservations hold capacity now: it was closed to these jobs,
    which "no free room" alone does not say. The first reason is extended (message, ``details.
    reservations`` and ``details.reserved_nodes``) rather than followed by a reason of its own, so that
    the job stays plannable (planning reads reason codes)."""
    if not holds:
        return
    ids = [h.reservation for h in holds]
    nodes = sorted({rep.node for h in holds for rep in h.replicas})
    note = (
        f"; capacity held for reservation {', '.join(repr(i) for i in ids)} (on {', '.join(nodes)}) is "
        "closed to jobs that do not name it, and evictions do not free it for them (OJS ML §8.3)"
    )
    for p in d.pending:
        first = p.reasons[0] if p.reasons else None
        if first is not None and first.code in CAPACITY_CODES:
            details = {**first.details, "reservations": ids, "reserved_nodes": nodes}
            p.reasons[0] = first.model_copy(update={"message": first.message + note, "details": details})


def _declared_gpus(cluster: Cluster, r: Reservation) -> int:
    """GPUs the reservation holds when nothing runs in it: its counts, or its whole nodes' GPUs."""
    if r.gpus:
        return sum(r.gpus.values())
    return sum(cluster.node(n).gpu_count for n in r.node_names if cluster.has_node(n))


def _confine(job: Job, r: Reservation) -> Job:
    rule = LabelRule(key="hostname", operator="In", values=r.node_names)
    placement = job.placement.model_copy(update={"required": [*job.placement.required, rule]})
    return job.model_copy(update={"placement": placement})


def _inactive(r: Reservation, state: str) -> Reason:
    words = {
        "not_started": f"starts at {r.start.isoformat() if r.start else '?'}",
        "ended": f"ended at {r.end.isoformat() if r.end else '?'}",
        "released": f"was released: nothing ran in it for {r.timeout_s} s after its start",
    }
    return Reason(
        code="RESERVATION_INACTIVE",
        message=f"its reservation {r.id!r} is not held now: it {words.get(state, state)}",
        details={"reservation": r.id, "state": state},
    )


def _cannot_hold(job: Job, r: Reservation, why: str) -> RejectedJob:
    return RejectedJob(
        job=job.id,
        errors=[
            {
                "code": "reservation",
                "path": "reservation.id",
                "message": f"reservation {r.id!r} cannot hold it: {why}",
            }
        ],
    )


def _merge_stats(parts: list[Stats], wall: float) -> Stats:
    last = parts[-1]
    objective = sum(s.objective or 0.0 for s in parts)
    bound = sum((s.bound if s.bound is not None else (s.objective or 0.0)) for s in parts)
    return last.model_copy(
        update={
            "objective": objective,
            "bound": bound,
            "gap": 0.0 if bound == 0 else (bound - objective) / bound,
            "greedy_objective": sum(s.greedy_objective or 0.0 for s in parts),
            "build_s": round(sum(s.build_s for s in parts), 6),
            "solve_s": round(sum(s.solve_s for s in parts), 6),
            "wall_s": round(wall, 6),
        }
    )
