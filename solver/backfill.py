"""Phase 9: planned starts for jobs that cannot start now, and the conservative-backfill rule.

Why: a big gang that waits for GPUs to free up would otherwise wait forever behind a stream of small jobs
that keep taking whatever frees up first. Slurm and Flux answer this with *conservative backfill*, and so
does placer: every job that cannot start now gets a planned start time and the exact resources held for
it then (a :class:`~placer.solver.decision.Hold` of kind ``plan``, or ``workflow`` when it waits for a
workflow
step), computed in priority order on the cluster's timeline; work of lower priority may start now only
where it does not delay any of those planned starts.

The timeline knows when things end: running jobs at their ``expected_end``, jobs placed now and planned
jobs after their expected duration (``ext_ml_timeout_seconds``, Flux ``duration``, SSS ``WallDuration``).
Without one, a job is assumed to run forever (it never frees anything, and a plan without a duration
holds its resources for good).

How (decide first, act second):

1. :func:`plan_holds` takes the jobs left pending for lack of capacity (or waiting on a workflow step or
   ``not_before``), highest priority first, and finds for each the earliest time ``T > now`` when it fits
   for its whole duration: on the cluster as it will be at ``T`` (running jobs that have ended by then
   released; jobs placed now of at least its priority, and earlier plans alive in the window, held).
   The fit test is the engine itself (greedy, one job), so every placement rule holds for plans too.
   Jobs placed now of *lower* priority are ignored: a plan is where the job would go if they had not
   been started, which is what "do not delay" means.
2. :func:`settle` walks the plans in time order and, at each planned start, adds everything alive then
   (running jobs, placements, plans) by priority; a placement of lower priority that no longer fits is a
   *conflict*: it would delay the plan.
3. The caller (:func:`placer.solver.engine.place`) decides once more with conflicting jobs kept off held
nodes,
   re-plans, and finally moves any remaining conflict to pending with ``BACKFILL_WOULD_DELAY``.

>>> from placer.solver.jobs.model import Job
>>> rank_of(Job(id="a", priority=5)) > rank_of(Job(id="b"))
True
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from placer.solver.budgets import group_limits, job_groups, replica_gpus, running_gpus, running_groups
from placer.solver.cancel import cancelled
from placer.solver.decision import Decision, Hold, JobPlacement, Reason, ReplicaPlacement, as_running
from placer.solver.explain import CAPACITY_CODES, few
from placer.solver.jobs.model import DependencyCondition, Job, LabelRule
from placer.solver.preempt import job_rank
from placer.topology import Cluster, RunningJob, TopologyError

__all__ = [
    "MAX_TIMES",
    "PLANNABLE",
    "Busy",
    "Closed",
    "Fit",
    "Plans",
    "Rank",
    "Throttles",
    "Timeline",
    "backfill_reason",
    "dependency_floor",
    "earliest_start",
    "ends",
    "hold_of",
    "not_on",
    "plan_holds",
    "planned_reason",
    "rank_of",
    "settle",
]

#: Pending reasons that planning answers: the job is waiting for capacity, a workflow step or a time.
PLANNABLE = CAPACITY_CODES | {
    "DEPENDENCY_UNMET",
    "NOT_BEFORE",
    "BACKFILL_WOULD_DELAY",
    "THROTTLE",
    "LICENSES",
}
#: Candidate start times tried one by one per job, from the first at which it could fit at all (found by
#: binary search over every time something ends): bounds the cost on a long timeline.
MAX_TIMES = 64

Rank = int


def rank_of(job: Job) -> Rank:
    """Priority as conservative backfill compares it: class (OJS ML §8.1), then numeric priority — the
    same order as preemption's (:func:`placer.solver.preempt.job_rank`)."""
    return job_rank(job)


def ends(start: datetime, duration_s: float | None) -> datetime | None:
    """When a job started at ``start`` is expected to end (None: never, as far as placer knows)."""
    return None if duration_s is None else start + timedelta(seconds=duration_s)


@dataclass(eq=False)
class Busy:
    """Something that holds capacity over ``[start, end)``: a placement made now or a plan.

    ``alloc`` (the replicas as a running job the topology accounts) is built on first use: most of the
    thousands of placements of a big decision are never looked at by planning."""

    job: str
    replicas: list[ReplicaPlacement]
    start: datetime
    end: datetime | None
    rank: Rank
    kind: str  # "placed" or "hold"
    #: Seats of cluster-wide licences it holds (``Job.licenses``), by licence.
    seats: Mapping[str, int] = field(default_factory=dict)
    _alloc: RunningJob | None = field(default=None, repr=False)

    @property
    def alloc(self) -> RunningJob:
        if self._alloc is None:
            self._alloc = as_running(f"{self.kind}:{self.job}", self.replicas)
        return self._alloc

    @property
    def locations(self) -> set[str]:
        """Nodes and TPU pods it touches (what "the same place" means for a conflict)."""
        return {f"pod:{r.tpu_pod}" if r.tpu_pod else r.node for r in self.replicas}

    def alive(self, t0: datetime, t1: datetime | None) -> bool:
        """Whether it holds anything during ``[t0, t1)`` (``t1`` None: forever)."""
        return (t1 is None or self.start < t1) and (self.end is None or self.end > t0)


@dataclass
class Timeline:
    """The cluster over time: running jobs until their expected end, placements and plans as :class:`Busy`."""

    cluster: Cluster  # running jobs not evicted by the decision
    now: datetime
    busy: list[Busy] = field(default_factory=list)
    #: Placements :func:`settle` found taking licence seats a plan needs: the plan's job and the licences.
    seat_blame: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    _released: dict[datetime, Cluster] = field(default_factory=dict)
    _seats: list[tuple[datetime | None, Mapping[str, int]]] | None = None

    def running_end(self, job: str) -> datetime | None:
        return self.cluster.running_job(job).expected_end

    def running_seats(self) -> list[tuple[datetime | None, Mapping[str, int]]]:
        """The running jobs that hold licence seats: (expected end, seats by licence), read once."""
        if self._seats is None:
            self._seats = [(r.expected_end, r.licenses) for r in self.cluster.running_jobs() if r.licenses]
        return self._seats

    def base_at(self, t: datetime) -> Cluster:
        """The cluster at ``t`` with only the running jobs still running then."""
        if t not in self._released:
            gone = [
                r.job
                for r in self.cluster.running_jobs()
                if r.expected_end is not None and r.expected_end <= t
            ]
            self._released[t] = self.cluster.release(*gone) if gone else self.cluster
        return self._released[t]

    def view(
        self, t0: datetime, t1: datetime | None, *, at_least: Rank | None = None, plans: bool = True
    ) -> Cluster:
        """The cluster a job running over ``[t0, t1)`` sees: running jobs alive at ``t0`` (those alive
        later are alive at ``t0`` too, nothing running starts later), and every placement or plan alive
        in the window (placements of rank below ``at_least`` left out; plans left out without ``plans``:
        then free capacity only grows with ``t0``)."""
        alive = [
            b
            for b in self.busy
            if b.alive(t0, t1)
            and (plans or b.kind != "hold")
            and (at_least is None or b.kind == "hold" or b.rank >= at_least)
        ]
        base = self.base_at(t0)
        if not alive:
            return base
        try:
            return base.with_allocations([b.alloc for b in alive])
        except TopologyError:
            pass
        # Some placement runs into a plan (the settle step will make it wait): the plans hold, and each
        # placement sharing a node with one is added only where it still fits.
        holds = [b for b in alive if b.kind == "hold"]
        taken = {loc for b in holds for loc in b.locations}
        calm = [b for b in alive if b.kind != "hold" and not (b.locations & taken)]
        view = base.with_allocations([b.alloc for b in holds + calm])
        for b in sorted(
            (b for b in alive if b.kind != "hold" and b.locations & taken), key=lambda b: -b.rank
        ):
            with contextlib.suppress(TopologyError):
                view = view.with_allocations([b.alloc])
        return view

    def event_times(self, after: datetime) -> list[datetime]:
        """Times after ``after`` when something is expected to end (where a fit can first appear)."""
        out = {r.expected_end for r in self.cluster.running_jobs() if r.expected_end is not None}
        out |= {b.end for b in self.busy if b.end is not None}
        return sorted(t for t in out if t > after)

    def ending_at(self, t: datetime) -> list[str]:
        """Ids of running jobs and placements expected to end exactly at ``t`` (what a plan waits for)."""
        out = [r.job for r in self.cluster.running_jobs() if r.expected_end == t]
        out += [b.job for b in self.busy if b.end == t and b.kind == "placed"]
        return sorted(out)


Fit = Callable[[Job, Cluster, datetime], JobPlacement | None]


#: Nodes closed to a job over a window ``[t0, t1)`` (``t1`` None: forever).
Closed = Callable[[datetime, datetime | None], list[str]]


def earliest_start(
    job: Job,
    not_before: datetime,
    line: Timeline,
    fit: Fit,
    deadline: float = float("inf"),
    closed: Closed | None = None,
) -> tuple[datetime, JobPlacement] | None:
    """The earliest ``T >= not_before``, ``T > now``, at which ``job`` fits for its whole duration, and
    where; None when no candidate time works (or the job's duration is unknown and nothing ever frees).
    ``closed(T, end)``: nodes the job may not use over its window from ``T`` (reservations it would
    overlap). Asked per candidate time, because a reservation that starts later or ends leaves the node
    open to a job that ends before it or starts after it."""
    times = (
        sorted({not_before} | set(line.event_times(not_before)))
        if not_before > line.now
        else line.event_times(line.now)
    )
    rank = rank_of(job)
    first = _first_possible(job, times, line, fit, rank, deadline)
    for t in times[first : first + MAX_TIMES]:
        if time.perf_counter() > deadline or cancelled():
            return None
        end = ends(t, job.duration_s)
        try:
            view = line.view(t, end, at_least=rank)
        except TopologyError:
            continue  # the timeline itself does not fit at t (cannot happen for a settled timeline)
        # Closed nodes only remove options, so the search above (without them) still bounds from below.
        shut = closed(t, end) if closed is not None else []
        probe = not_on(job, shut) if shut else job
        where = fit(probe, view, t)
        if where is None:
            continue
        # It fits at t if lower-priority work started now made way. Where it fits beside that work too,
        # take that placement: the same start, and nothing started now has to wait for it.
        if _lower_placed(line, rank, t, end):
            # (TopologyError: earlier plans already displace some of that work: keep the first placement.)
            with contextlib.suppress(TopologyError):
                where = fit(probe, line.view(t, end), t) or where
        return t, where
    return None


def not_on(job: Job, nodes: list[str]) -> Job:
    """The job with a required ``hostname NotIn nodes`` rule (the fit test honours rules, not windows)."""
    rule = LabelRule(key="hostname", operator="NotIn", values=nodes)
    placement = job.placement.model_copy(update={"required": [*job.placement.required, rule]})
    return job.model_copy(update={"placement": placement})


def _first_possible(
    job: Job, times: list[datetime], line: Timeline, fit: Fit, rank: Rank, deadline: float
) -> int:
    """Index of the first time at which the job fits when plans are left out: a binary search, since
    without plans free capacity only grows with time (running jobs and placements end, nothing starts).
    No plan can make an earlier time possible, so the scan with plans starts there: ~6 fits, not 64."""

    def fits(t: datetime) -> bool:
        try:
            return fit(job, line.view(t, ends(t, job.duration_s), at_least=rank, plans=False), t) is not None
        except TopologyError:
            return False

    if not times or not fits(times[-1]):
        return len(times)  # not even when everything with an end has ended: one fit, not ten
    lo, hi = 0, len(times) - 1
    while lo < hi and time.perf_counter() <= deadline:
        mid = (lo + hi) // 2
        if fits(times[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _lower_placed(line: Timeline, rank: Rank, t0: datetime, t1: datetime | None) -> bool:
    return any(b.kind == "placed" and b.rank < rank and b.alive(t0, t1) for b in line.busy)


def dependency_floor(
    job: Job, line: Timeline, holds: Mapping[str, Busy], placed: Mapping[str, Busy], batch: Iterable[str]
) -> tuple[datetime, bool] | None:
    """The earliest time the job's dependencies allow, and whether any dependency set it (a workflow
    step); None when a dependency's time is unknown (it has no plan yet, or no expected end)."""
    floor = max(line.now, job.not_before or line.now)
    workflow = False
    in_batch = set(batch)
    running = {r.job for r in line.cluster.running_jobs()}
    for dep in job.dependencies:
        if dep.condition is DependencyCondition.FAILURE:
            return None  # whether the other job fails cannot be planned
        if dep.job in running:
            if dep.condition is DependencyCondition.START:
                continue
            t = line.running_end(dep.job)
        elif dep.job in placed or dep.job in holds:
            b = placed.get(dep.job) or holds[dep.job]
            t = b.start if dep.condition is DependencyCondition.START else b.end
        elif dep.job in in_batch:
            return None  # waits for a job without a plan
        else:
            continue  # not running and not pending: it already ran
        if t is None:
            return None
        workflow = True
        floor = max(floor, t)
    return floor, workflow


@dataclass
class Throttles:
    """The batch's groups (``Job.throttle``, ``Job.limits``) as planning counts them: per group its jobs of
    the batch, the smallest job and GPU limits they state, and its running jobs' expected ends (None: no
    end known) with the GPUs each holds, read once per planning pass (a 1,000-task array would otherwise
    rescan the batch and the running jobs at every candidate start)."""

    members: dict[str, set[str]] = field(default_factory=dict)
    limit: dict[str, int] = field(default_factory=dict)
    gpu_limit: dict[str, float] = field(default_factory=dict)
    running_ends: dict[str, list[tuple[datetime | None, float]]] = field(default_factory=dict)
    #: Licences (``Job.licenses``): the cluster's seats of those the batch asks for (what holds them —
    #: running jobs, placements, plans — the timeline says: :meth:`Timeline.running_seats`, ``Busy.seats``).
    seat_pool: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def of(jobs: Mapping[str, Job], line: Timeline) -> Throttles:
        most_jobs, most_gpus = group_limits(jobs.values())
        out = Throttles(limit=most_jobs, gpu_limit=most_gpus)
        pool = line.cluster.licenses
        out.seat_pool = {n: pool.get(n, 0) for j in jobs.values() for n in j.licenses}
        for j in jobs.values():
            for g, _, _ in job_groups(j):
                out.members.setdefault(g, set()).add(j.id)
        if out.limit or out.gpu_limit:
            for r in line.cluster.running_jobs():
                for g in running_groups(r):
                    if g in out.limit or g in out.gpu_limit:
                        out.running_ends.setdefault(g, []).append((r.expected_end, running_gpus(r)))
        return out

    def open(self, job: Job, t: datetime, line: Timeline) -> bool:
        """Whether ``job`` may start at ``t``: in each of its groups, the running jobs until their expected
        end and the placements and plans alive at ``t`` (``line.busy``) are fewer than the group's job
        limit, and hold few enough GPUs that the job's fit under its GPU limit; and the seats of each
        licence it asks for held then (running jobs, placements, plans) leave room for its own."""
        if job.licenses and not self._seats_open(job, t, line):
            return False
        for g, _, _ in job_groups(job):
            members = self.members[g]
            alive = [gpus for end, gpus in self.running_ends.get(g, []) if end is None or end > t]
            alive += [
                replica_gpus(b.replicas)
                for b in line.busy
                if b.job in members and b.job != job.id and b.start <= t and b.alive(t, None)
            ]
            if g in self.limit and len(alive) >= self.limit[g]:
                return False
            if g in self.gpu_limit and sum(alive) + job.total_gpu_milli / 1000 > self.gpu_limit[g] + 1e-9:
                return False
        return True

    def _seats_open(self, job: Job, t: datetime, line: Timeline) -> bool:
        """Seats as node capacity counts them for a plan: work placed now of lower priority is not there
        (it must not delay the plan; :func:`settle` takes it back if it would)."""
        mine = rank_of(job)
        for name, need in job.licenses.items():
            held = sum(s.get(name, 0) for end, s in line.running_seats() if end is None or end > t)
            held += sum(
                b.seats.get(name, 0)
                for b in line.busy
                if b.seats
                and b.job != job.id
                and not (b.kind == "placed" and b.rank < mine)
                and b.start <= t
                and b.alive(t, None)
            )
            if held + need > self.seat_pool.get(name, 0):
                return False
        return True

    def next_end(self, job: Job, after: datetime, line: Timeline) -> datetime | None:
        """The first time after ``after`` at which a job of one of ``job``'s groups, or one holding a
        licence it asks for, is expected to end (when a group or a licence may have room again); None when
        none of them ends."""
        times: list[datetime] = []
        if job.licenses:
            names = set(job.licenses)
            times += [e for e, s in line.running_seats() if e is not None and e > after and names & set(s)]
            times += [
                b.end for b in line.busy if names & set(b.seats) and b.end is not None and b.end > after
            ]
        for g, _, _ in job_groups(job):
            members = self.members[g]
            times += [e for e, _ in self.running_ends.get(g, []) if e is not None and e > after]
            times += [b.end for b in line.busy if b.job in members and b.end is not None and b.end > after]
        return min(times, default=None)


@dataclass
class Plans:
    """What planning found: holds per job id and the reason text to add to each planned job."""

    holds: dict[str, Busy] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    after: dict[str, list[str]] = field(default_factory=dict)
    placements: dict[str, JobPlacement] = field(default_factory=dict)
    #: Declared reservations that start later, held from their start (``reservation:<id>``).
    future: dict[str, Busy] = field(default_factory=dict)
    #: Placements that would hold licence seats a plan needs (:attr:`Timeline.seat_blame`).
    seat_blame: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def blocking(self) -> list[Busy]:
        """Everything work started now must not run into: plans and reservations to come."""
        return [*self.holds.values(), *self.future.values()]


def plan_holds(
    decision: Decision,
    jobs: Mapping[str, Job],
    line: Timeline,
    fit: Fit,
    *,
    deadline: float,
    closed_nodes: Callable[[Job, datetime, datetime | None], list[str]] = lambda j, a, b: [],
    batch_ids: Iterable[str] = (),
    prior: Plans | None = None,
    grouped: Mapping[str, Job] | None = None,
) -> Plans:
    """Plans for the decision's plannable pending jobs, highest priority first (ties: submit time, id),
    until ``deadline`` (``time.perf_counter()``); a job whose dependency has no plan yet waits for the
    next sweep. ``closed_nodes(job, t0, t1)``: nodes the job may not use in a window (reservations), asked
    for each candidate start with the job's window.
    ``batch_ids``: every job of the batch: a dependency on one that has no plan (it cannot run, or
    waits for something else) leaves the dependent without a plan too. ``prior``: plans made for an
    earlier decision of the same batch, kept where they still hold (no new fit needed), so that a second
    decision does not cost the planning time over again. ``grouped``: every job of the batch, whose groups
    (throttles, group limits) count what it holds — placements made now included, not only the jobs to
    plan (default: ``jobs``)."""
    out = Plans()
    placed = {b.job: b for b in line.busy if b.kind == "placed"}
    throttles = Throttles.of(jobs if grouped is None else grouped, line)
    waiting = [
        jobs[p.job]
        for p in decision.pending
        if p.job in jobs and p.reasons and all(r.code in PLANNABLE for r in p.reasons)
    ]
    waiting.sort(key=lambda j: (-rank_of(j), j.submit_time or line.now, j.id))
    batch = set(batch_ids) | {j.id for j in waiting}
    for _ in range(3 if prior else 0):  # earlier plans whose dependencies still allow their start
        for job in waiting:
            earlier = prior.holds.get(job.id) if prior else None
            if earlier is None or job.id in out.holds:
                continue
            floor = dependency_floor(job, line, out.holds, placed, batch)
            if floor is not None and floor[0] <= earlier.start and throttles.open(job, earlier.start, line):
                kept = Busy(
                    job.id, earlier.replicas, earlier.start, earlier.end, earlier.rank, "hold", job.licenses
                )
                line.busy.append(kept)
                out.holds[job.id] = kept
                out.kinds[job.id] = prior.kinds[job.id]  # type: ignore[union-attr]
                out.after[job.id] = line.ending_at(earlier.start)
                out.placements[job.id] = prior.placements[job.id]  # type: ignore[union-attr]
    for _ in range(3):  # sweeps: a workflow step is planned once the step it waits for has a plan
        progress = False
        for job in waiting:
            if job.id in out.holds or time.perf_counter() > deadline or cancelled():
                continue
            floor = dependency_floor(job, line, out.holds, placed, batch)
            if floor is None:
                continue
            t_min, workflow = floor
            probe = job.model_copy(
                update={
                    "dependencies": [],
                    "not_before": None,
                    "throttle": None,
                    "limits": [],
                    "licenses": {},
                }
            )
            found = _earliest_within_throttle(
                job,
                probe,
                t_min,
                line,
                fit,
                deadline,
                throttles,
                partial(closed_nodes, job),
            )
            if found is None:
                continue
            t, where = found
            busy = Busy(
                job.id,
                list(where.replicas),
                t,
                ends(t, job.duration_s),
                rank_of(job),
                "hold",
                job.licenses,
            )
            line.busy.append(busy)
            out.holds[job.id] = busy
            out.kinds[job.id] = "workflow" if workflow else "plan"
            out.after[job.id] = line.ending_at(t)
            out.placements[job.id] = where
            progress = True
        if not progress:
            break
    return out


def _earliest_within_throttle(
    job: Job,
    probe: Job,
    t_min: datetime,
    line: Timeline,
    fit: Fit,
    deadline: float,
    throttles: Throttles,
    closed: Closed,
) -> tuple[datetime, JobPlacement] | None:
    """:func:`earliest_start` of ``probe`` (the job without its dependencies, start floor and throttle)
    at a time its throttle group has room (:meth:`Throttles.open`): from ``t_min``, each time the group
    is full the search moves on to the next end of one of its jobs."""
    floor: datetime | None = t_min
    for _ in range(MAX_TIMES):
        if floor is None:
            return None
        if not throttles.open(job, floor, line):
            floor = throttles.next_end(job, floor, line)
            continue
        found = earliest_start(probe, floor, line, fit, deadline, closed)
        if found is None or throttles.open(job, found[0], line):
            return found
        floor = throttles.next_end(job, found[0], line)
    return None


def settle(line: Timeline) -> tuple[set[str], set[str]]:
    """Walk the planned starts in time order, adding everything alive at each by priority; return the
    placements that do not fit (conflicts: they would delay a plan) and the plans that do not (dropped).

    Why only at planned starts: jobs start only now (where the decision is already feasible) or at a
    planned start, so capacity use peaks there. Removing items never breaks an earlier point, so one pass
    in time order settles the whole timeline.
    """
    conflicts: set[str] = set()
    dropped: set[str] = set()
    for t in sorted({b.start for b in line.busy if b.kind == "hold"}):
        out = conflicts | dropped
        alive = [b for b in line.busy if b.alive(t, None) and b.start <= t and b.job not in out]
        # Only what shares a node or TPU pod with a plan alive at t can conflict: placements alone were
        # feasible together now, and fewer jobs run at t than now. Those are added in one step.
        held = {loc for b in alive if b.kind == "hold" for loc in b.locations}
        calm = [b.alloc for b in alive if b.kind == "placed" and not (b.locations & held)]
        view = line.base_at(t)
        view = view.with_allocations(calm) if calm else view
        # The rest by priority; at equal priority a placement (already running) before a plan.
        contested = [b for b in alive if b.kind == "hold" or b.locations & held]
        contested.sort(key=lambda b: (-b.rank, b.kind != "placed", b.job))
        for b in contested:
            try:
                view = view.with_allocations([b.alloc])
            except TopologyError:
                (conflicts if b.kind == "placed" else dropped).add(b.job)
        _settle_seats(line, t, conflicts, dropped)
    line.busy = [b for b in line.busy if b.job not in conflicts | dropped]
    return conflicts, dropped


def _settle_seats(line: Timeline, t: datetime, conflicts: set[str], dropped: set[str]) -> None:
    """Licence seats at planned start ``t``, as :func:`settle` counts nodes: the running jobs still
    holding seats then, and the placements and plans alive then by priority (at equal priority a placement
    first); one that takes a licence over its pool is a conflict (a placement: it would delay the plan) or
    dropped (a plan). Only a plan starting by ``t`` can take seats over the pool: placements alone fitted
    now, and no running job starts later. As Slurm's backfill with ``SchedulerParameters=bf_licenses``
    (without it, Slurm holds no seats for a job that waits on licences)."""
    out = conflicts | dropped
    alive = [b for b in line.busy if b.seats and b.start <= t and b.alive(t, None) and b.job not in out]
    if not any(b.kind == "hold" for b in alive):
        return
    pool = line.cluster.licenses
    held: dict[str, int] = {}
    for end, seats in line.running_seats():
        if end is None or end > t:
            for name, n in seats.items():
                held[name] = held.get(name, 0) + n
    starting = [b for b in alive if b.kind == "hold" and b.start == t]
    for b in sorted(alive, key=lambda b: (-b.rank, b.kind != "placed", b.job)):
        over = sorted(name for name, n in b.seats.items() if held.get(name, 0) + n > pool.get(name, 0))
        if over:
            (conflicts if b.kind == "placed" else dropped).add(b.job)
            plan = next((h for h in starting if h.rank > b.rank and set(h.seats) & set(over)), None)
            if b.kind == "placed" and plan is not None:
                line.seat_blame[b.job] = (plan.job, sorted(set(plan.seats) & set(over)))
            continue
        for name, n in b.seats.items():
            held[name] = held.get(name, 0) + n


def planned_reason(job: str, busy: Busy, after: Sequence[str]) -> Reason:
    """What would change the outcome: the job fits at its planned start, after these jobs end."""
    nodes = sorted({r.tpu_pod or r.node for r in busy.replicas})
    when = busy.start.isoformat()
    said = busy.start.isoformat(timespec="seconds")  # the message reads to the second; details keep it all
    if after:
        names = few(after, 5)
        message = (
            f"fits after {names} end{'s' if len(after) == 1 else ''} at {said}; capacity is held for it then"
        )
    else:
        message = f"planned to start at {said}; capacity is held for it then"
    return Reason(
        code="PLANNED_START",
        message=message,
        details={"start": when, "after": list(after), "nodes": nodes},
    )


def _holder(name: str) -> str:
    if name.startswith("reservation:"):
        return f"reservation {name.removeprefix('reservation:')!r}"
    return f"job {name!r}"


def backfill_reason(job: str, hold_job: str, hold: Busy, licenses: Sequence[str] = ()) -> Reason:
    """A job that fits now only where a job of higher priority is planned, and would still run then; or,
    with ``licenses``, that would still hold seats of those licences the planned job needs then."""
    if licenses:
        names = ", ".join(repr(n) for n in licenses)
        return Reason(
            code="BACKFILL_WOULD_DELAY",
            message=(
                f"would still hold seats of licence {names} at {hold.start.isoformat()}, when "
                f"{_holder(hold_job)} is planned to start with them (conservative backfill: lower-priority "
                "work must not delay a planned start)"
            ),
            details={"job": hold_job, "start": hold.start.isoformat(), "licenses": list(licenses)},
        )
    return Reason(
        code="BACKFILL_WOULD_DELAY",
        message=(
            f"fits now only on capacity held for {_holder(hold_job)} from {hold.start.isoformat()}, and "
            "would still be running then (conservative backfill: lower-priority work must not delay a "
            "planned start)"
        ),
        details=(
            {"reservation": hold_job.removeprefix("reservation:"), "start": hold.start.isoformat()}
            if hold_job.startswith("reservation:")
            else {"job": hold_job, "start": hold.start.isoformat()}
        ),
    )


def hold_of(job: str, busy: Busy, kind: str, placement: JobPlacement) -> Hold:
    return Hold(job=job, start=busy.start, end=busy.end, replicas=list(placement.replicas), kind=kind)
