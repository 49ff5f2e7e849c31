"""The discrete-event loop: arrivals, ``placer.solver.place()`` at every scheduling interval, starts,
completions, evictions with grace periods, checkpoint-and-resume, node failures, reservations.

Why the same ``place()`` and nothing else: a what-if study must measure the engine that runs in
production, with its preemption, planning, reservations and escalation — so the simulator only keeps
time and books; every decision is ``place()``'s, and with ``verify`` every one is re-checked by the
independent checker (``placer.solver.checks.check``) before it is applied.

Semantics (``docs/simulator.md``):

* At each interval ``t`` the queue (submitted, not running, dependencies known to be met) is placed on
  the ledger (:mod:`placer.scenarios.sim.ledger`) at ``now = t``; each job carries its original
  ``submit_time`` (so OJS §8.4 escalation applies) and its *remaining* work as ``duration_s`` (so time
  planning sees how long it will hold what it gets). Running jobs carry ``started_at``,
  ``expected_end`` and ``last_checkpoint_at`` (their last periodic checkpoint).
* An eviction signals its job at ``t``: useful work stops, the work since its last checkpoint is lost
  (none with checkpoint-on-preempt: it saves during the grace period, :mod:`placer.scenarios.sim.work`), it
  keeps
  its resources until ``t + grace_period_s`` and is then requeued with the remaining work.
* A placement starts at ``t`` — or, when it uses a node (or TPU chip) that an evicted job still holds
  during its grace period, when the last such grace period ends (the ledger already gave it those
  resources, so nobody else gets them in between).
* A node failure stops its jobs at once (work since their last periodic checkpoint is lost, no grace),
  requeues them, and takes the node out until it is repaired.
* Reservations are given to every ``place()`` call, which holds, expires and releases them; their
  starts, ends and timeouts are recorded as events.
* Autoscaled node groups (:mod:`placer.scenarios.sim.autoscaler`): after each decision the autoscaler
  requests nodes for the jobs left waiting for capacity, which join ``provision`` later; at every
  interval the group nodes idle for ``scale_down_after`` leave.

Deterministic for a seed: events at one instant are handled in a fixed order
(:mod:`placer.scenarios.sim.clock`)
and the queue is handed over in a fixed order; CP-SAT runs with ``Policy.reproducible`` unless the
scenario turns it off.

>>> from placer.scenarios.load import load_scenario_text
>>> from placer.scenarios.inputs import prepare
>>> spec = load_scenario_text('''
... name: doc
... horizon: 1h
... interval: 5m
... cluster: {builders: [{dgx_h100: {count: 1}}]}
... workload: {jobs: [{id: a, ext_ml_gpu_count: 8, ext_ml_timeout_seconds: 1200}]}
... ''')
>>> r = simulate(prepare(spec, base=None))
>>> r.jobs[["job", "state", "wait_s", "completion_s"]].to_dict("records")
[{'job': 'a', 'state': 'done', 'wait_s': 0.0, 'completion_s': 1200.0}]
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime

from placer.scenarios.inputs import SimInputs
from placer.scenarios.sim.allocation import Key, chips_of, footprint, gpus_of, nodes_text, running_of
from placer.scenarios.sim.autoscaler import Autoscaler, ScaleUp
from placer.scenarios.sim.clock import Clock, Event, EventQueue, Kind
from placer.scenarios.sim.fragmentation import fragmentation
from placer.scenarios.sim.ledger import Ledger
from placer.scenarios.sim.progress import bar
from placer.scenarios.sim.record import Recorder, SimResult
from placer.scenarios.sim.state import Attempt, SimJob
from placer.scenarios.sim.work import last_checkpoint, saved_at_stop
from placer.solver.decision import Decision, Eviction
from placer.solver.jobs.model import Job, PriorityClass, TaskGroup
from placer.solver.preempt import escalated, held_units
from placer.solver.prices import UNITS_PER_DOLLAR, running_units
from placer.solver.session import Session
from placer.topology import Cluster, RunningJob, TopologyError

__all__ = ["DecisionHook", "SimulationError", "Simulator", "simulate"]

#: ``on_decision(t, decision, batch, cluster)``: called with every decision before it is applied.
DecisionHook = Callable[[float, Decision, list[Job], Cluster], None]


class SimulationError(RuntimeError):
    """A decision the simulator cannot apply (the checker found violations, or it conflicts with the
    ledger): a solver bug, reported with the interval and the decision's problems."""


class Simulator:
    """One run of :class:`~placer.scenarios.inputs.SimInputs`; :meth:`run` returns the tables."""

    def __init__(
        self,
        inputs: SimInputs,
        *,
        verify: bool = False,
        progress: bool = False,
        on_decision: DecisionHook | None = None,
        skip_unchanged: bool = True,
    ):
        self.inp = inputs
        self.clock = Clock(inputs.start, (inputs.end - inputs.start).total_seconds())
        self.queue = EventQueue()
        # One session for the run (place() on state kept between intervals), deciding exactly as place()
        # alone would (learn=False: the study measures the engine a stateless caller gets).
        session = Session(
            inputs.cluster,
            inputs.policy,
            reservations=inputs.reservations or None,
            prices=inputs.prices,
            learn=False,
        )
        self.ledger = Ledger(inputs.cluster, session)
        self.autoscaler = Autoscaler(inputs.node_groups, inputs.policy, inputs.prices, seed=inputs.seed)
        self.rec = Recorder(self.clock)
        self.verify = verify
        self.progress = progress
        self.on_decision = on_decision
        self.skip_unchanged = skip_unchanged
        self._dirty = True
        self._last_decided: float | None = None
        self._last_reasons: dict[str, int] = {}
        self.jobs: dict[str, SimJob] = {}
        self.pending: dict[str, SimJob] = {}
        self.draining: dict[str, tuple[float, set[Key]]] = {}
        self.holding: dict[str, SimJob] = {}  # jobs with an allocation: starting, running, draining
        self.done = 0
        self.down_count: Counter[str] = Counter()
        self.decisions = 0
        self.verified = 0
        self.solver_s = 0.0

    # -- set-up ------------------------------------------------------------------------------------

    def _schedule_inputs(self) -> None:
        H = self.clock.horizon_s
        for job in self.inp.jobs:
            t = self.clock.seconds(job.submit_time) if job.submit_time else 0.0
            if t < H:
                self.jobs[job.id] = SimJob(job, submit_s=max(0.0, t))
                self.queue.push(max(0.0, t), Kind.ARRIVAL, job=job.id)
        for rj in self.inp.background:
            self._adopt(rj)
        for f in self.inp.failures:
            self.queue.push(self.clock.seconds(f.down), Kind.NODE_DOWN, data=f.node)
            if f.up is not None:
                self.queue.push(self.clock.seconds(f.up), Kind.NODE_UP, data=f.node)
        for r in self.inp.reservations:
            marks = [("reservation_start", r.start), ("reservation_end", r.end)]
            if r.timeout_s is not None:
                base = self.clock.seconds(r.start) if r.start else 0.0
                marks.append(("reservation_timeout", self.clock.at(base + r.timeout_s)))
            for what, when in marks:
                if when is not None and 0 <= self.clock.seconds(when) < H:
                    self.queue.push(self.clock.seconds(when), Kind.RESERVATION, data=(what, r.id))
        for up in self.autoscaler.initial():
            self._requested(0.0, up)
        self.queue.push(0.0, Kind.TICK)

    def _adopt(self, rj: RunningJob) -> None:
        """A job running before the start (``cluster.running: keep``): held until its expected end."""
        job = Job(
            id=rj.job,
            priority_class=PriorityClass(rj.priority_class),
            priority=rj.priority,
            tasks=[TaskGroup()],
            metadata={"class": "background"},
        )
        sj = SimJob(job, submit_s=0.0, background=True, phase="running", units=held_units(rj))
        rj = rj.model_copy(update={"started_at": rj.started_at or self.clock.start})
        self.ledger.allocate([rj])
        self._hold(sj, rj)
        sj.first_start_s = 0.0
        sj.attempts.append(Attempt(1, 0.0, 0.0, sj.units, self._price(rj), rj.priority_class, nodes_text(rj)))
        self.jobs[rj.job] = sj
        if rj.expected_end is not None:
            self.queue.push(max(0.0, self.clock.seconds(rj.expected_end)), Kind.FINISH, job=rj.job, attempt=1)

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> SimResult:
        self._schedule_inputs()
        H = self.clock.horizon_s
        ticks = math.ceil(H / self.inp.interval_s)
        handlers = {
            Kind.NODE_UP: self._node_up,
            Kind.NODE_ADD: self._node_add,
            Kind.FINISH: self._finish,
            Kind.RELEASE: self._release_event,
            Kind.NODE_DOWN: self._node_down,
            Kind.NODE_RECLAIM: self._node_reclaim,
            Kind.START: self._start_event,
            Kind.ARRIVAL: self._arrival,
            Kind.RESERVATION: self._reservation,
        }
        with bar(ticks, enabled=self.progress, desc=self.inp.name) as progress:
            while self.queue:
                ev = self.queue.peek()
                assert ev is not None
                if ev.time >= H:
                    break
                ev = self.queue.pop()
                if ev.kind is Kind.TICK:
                    self._tick(ev.time)
                    progress.update(1)
                    nxt = ev.time + self.inp.interval_s
                    if nxt < H:
                        self.queue.push(nxt, Kind.TICK)
                else:
                    handlers[ev.kind](ev)
                    self._dirty = True
        self._close(H)
        return self.rec.result(
            list(self.jobs.values()), self._meta(), self.autoscaler.nodes(self.clock.horizon_s)
        )

    # -- events ------------------------------------------------------------------------------------

    def _arrival(self, ev: Event) -> None:
        sj = self.jobs[ev.job or ""]
        sj.phase = "pending"
        self.pending[sj.id] = sj
        self.rec.event(ev.time, "submit", sj.id, f"{sj.units:g} units, {sj.remaining_s:g} s of work")

    def _current(self, ev: Event, phase: str) -> SimJob | None:
        """The job of ``ev`` if the event belongs to its current run and it is in ``phase``."""
        sj = self.jobs.get(ev.job or "")
        if sj is None or sj.phase != phase or not sj.attempts or sj.attempts[-1].n != ev.attempt:
            return None
        return sj

    def _start_event(self, ev: Event) -> None:
        sj = self._current(ev, "starting")
        if sj is not None:
            self._begin(ev.time, sj)

    def _begin(self, t: float, sj: SimJob) -> None:
        att = sj.attempts[-1]
        sj.phase = "running"
        if sj.first_start_s is None:
            sj.first_start_s = t
        self.rec.event(t, "start", sj.id, f"attempt {att.n} on {att.nodes}")
        if math.isfinite(sj.remaining_s):
            self.queue.push(t + sj.remaining_s, Kind.FINISH, job=sj.id, attempt=att.n)

    def _finish(self, ev: Event) -> None:
        sj = self._current(ev, "running")
        if sj is None:
            return
        t = ev.time
        att = sj.attempts[-1]
        att.stop_s = att.release_s = t
        att.outcome = "done"
        att.useful_s = t - att.start_s
        sj.done_s = sj.work_s if not sj.background else sj.done_s
        sj.phase = "done"
        sj.end_s = t
        self.done += 1
        self.ledger.release([sj.id])
        self._drop(sj)
        self.rec.event(t, "finish", sj.id, f"attempt {att.n}")

    def _release_event(self, ev: Event) -> None:
        sj = self._current(ev, "draining")
        if sj is not None:
            self._release(ev.time, sj)

    def _release(self, t: float, sj: SimJob) -> None:
        """An evicted job's grace period is over: its resources are free, it waits again."""
        att = sj.attempts[-1]
        att.release_s = t
        att.grace_s = t - (att.stop_s if att.stop_s is not None else t)
        self.draining.pop(sj.id, None)
        self._drop(sj)
        self.rec.event(t, "release", sj.id, f"after {att.grace_s:g} s of grace")
        if sj.background:
            sj.phase = "evicted"
            return
        self._requeue(t, sj)

    def _requeue(self, t: float, sj: SimJob) -> None:
        sj.phase = "pending"
        self.pending[sj.id] = sj
        self.rec.event(t, "requeue", sj.id, f"{sj.remaining_s:g} s of work left")

    def _node_down(self, ev: Event) -> None:
        t, node = ev.time, str(ev.data)
        self.down_count[node] += 1
        self._stop_on(t, node, "failed")
        self.ledger.set_down(node, True)
        self.rec.event(t, "node_down", None, node)

    def _node_reclaim(self, ev: Event) -> None:
        """The provider takes an autoscaled node back: its jobs fail as on a node failure, and it leaves."""
        t, node = ev.time, str(ev.data)
        if not self.autoscaler.present(node):  # it left idle before its reclaim came
            return
        self._stop_on(t, node, "was reclaimed")
        self.ledger.remove_nodes([node])
        self.autoscaler.left(t, [node], reclaimed=True)
        self.rec.event(t, "node_reclaimed", None, node)

    def _stop_on(self, t: float, node: str, what: str) -> None:
        """Every job on ``node`` stops at once (no grace): work since its last checkpoint is lost, it is
        requeued; a job about to start there loses its placement; jobs draining there are released."""
        hit = sorted(j for j, rj in self.ledger.jobs.items() if any(r.node == node for r in rj.replicas))
        for job_id in hit:
            sj = self.jobs[job_id]
            if sj.phase == "starting":
                self._cancel(t, sj, "fail", f"node {node} {what} before it started")
                continue
            att = sj.attempts[-1]
            saved = saved_at_stop(att.start_s, t, sj.checkpoint_interval, on_preempt=False)
            att.stop_s = att.release_s = t
            att.outcome = "failed"
            att.useful_s, att.lost_s = saved, (t - att.start_s) - saved
            sj.done_s += saved
            sj.failures += 1
            self._drop(sj)
            self.ledger.release([job_id])
            self.rec.event(t, "fail", job_id, f"node {node} {what}; {att.lost_s:g} s of work lost")
            if sj.background:
                sj.phase = "failed"
            else:
                self._requeue(t, sj)
        for job_id, (_, fp) in sorted(self.draining.items()):
            if ("node", node) in fp:
                self._release(t, self.jobs[job_id])

    def _node_up(self, ev: Event) -> None:
        node = str(ev.data)
        self.down_count[node] -= 1
        if self.down_count[node] <= 0:
            del self.down_count[node]
            self.ledger.set_down(node, False)
            self.rec.event(ev.time, "node_up", None, node)

    def _node_add(self, ev: Event) -> None:
        node = str(ev.data)
        group = self.autoscaler.group_of(node)
        assert group is not None
        self.ledger.add_nodes(group.inventory([node]))
        reclaim = self.autoscaler.joined(ev.time, node)
        if reclaim is not None:
            self.queue.push(reclaim, Kind.NODE_RECLAIM, data=node)
        self.rec.event(ev.time, "node_added", None, node)

    def _requested(self, t: float, up: ScaleUp) -> None:
        """Nodes the autoscaler requested: booked, and each joins at ``up.ready_s``."""
        jobs = f" for {', '.join(up.jobs[:10])}{' ...' if len(up.jobs) > 10 else ''}" if up.jobs else ""
        self.rec.event(
            t, "scale_up", None, f"{up.group}: {', '.join(up.nodes)}{jobs}; ready at t={up.ready_s:g} s"
        )
        for node in up.nodes:
            self.queue.push(up.ready_s, Kind.NODE_ADD, data=node)

    def _scale_down(self, t: float) -> None:
        """Group nodes idle long enough leave (the autoscaler decides which)."""
        busy = {r.node for rj in self.ledger.jobs.values() for r in rj.replicas if r.node is not None}
        busy |= {k[1] for _, fp in self.draining.values() for k in fp if k[0] == "node"}
        for down in self.autoscaler.scale_down(t, busy):
            self.ledger.remove_nodes(down.nodes)
            self.autoscaler.left(t, down.nodes)
            for node in down.nodes:
                self.rec.event(t, "node_removed", None, node)
            self._dirty = True

    def _reservation(self, ev: Event) -> None:
        what, rid = ev.data
        self.rec.event(ev.time, what, None, rid)

    def _hold(self, sj: SimJob, rj: RunningJob) -> None:
        sj.allocation = rj
        self.holding[sj.id] = sj

    def _drop(self, sj: SimJob) -> None:
        sj.allocation = None
        self.holding.pop(sj.id, None)

    def _cancel(self, t: float, sj: SimJob, event: str, why: str) -> None:
        """A placed job that has not started yet loses its placement (nothing ran, nothing is lost)."""
        att = sj.attempts[-1]
        att.start_s = att.stop_s = att.release_s = t
        att.outcome = "cancelled"
        self._drop(sj)
        self.ledger.release([sj.id])
        self.rec.event(t, event, sj.id, why)
        self._requeue(t, sj)

    # -- scheduling ----------------------------------------------------------------------------------

    def _batch(self) -> list[Job]:
        out = []
        for sj in self.pending.values():
            if not self._deps_known_met(sj.job):
                sj.pending_reason = "DEPENDENCY_UNMET"
                continue
            job = sj.job
            if math.isfinite(sj.remaining_s) and job.duration_s != sj.remaining_s:
                job = job.model_copy(update={"duration_s": sj.remaining_s})
            out.append(job)
        return out

    def _deps_known_met(self, job: Job) -> bool:
        """False when a dependency is a job of the scenario that is neither done, queued nor running
        (not submitted yet, or draining): ``place()`` would take its absence for completion."""
        for dep in job.dependencies:
            other = self.jobs.get(dep.job)
            if other is not None and other.phase in ("waiting", "draining"):
                return False
        return True

    def _refresh_checkpoints(self, t: float) -> None:
        """Running allocations carry their last periodic checkpoint, so that ``place()`` charges an
        eviction the work it really loses."""
        changed = []
        for sj in self.holding.values():
            if sj.phase != "running" or sj.allocation is None or sj.background:
                continue
            att = sj.attempts[-1]
            cp = last_checkpoint(att.start_s, t, sj.checkpoint_interval)
            when = None if cp is None else self.clock.at(cp)
            if when != sj.allocation.last_checkpoint_at:
                sj.allocation = sj.allocation.model_copy(update={"last_checkpoint_at": when})
                changed.append(sj.allocation)
        self.ledger.replace(changed)

    def _tick(self, t: float) -> None:
        now = self.clock.at(t)
        self._refresh_checkpoints(t)
        batch = self._batch()
        decision = None
        if batch and (not self.skip_unchanged or self._changed(t, batch)):
            cluster = self.ledger.cluster
            decision = self._place(batch, cluster, now)
            if self.verify:
                self._check(t, decision, batch, cluster, now)
            if self.on_decision is not None:
                self.on_decision(t, decision, batch, cluster)
            self._apply(t, decision)
            self._dirty = bool(
                decision.placements
                or decision.preemptions
                or decision.rejected
                or any(r.code == "NOT_CONSIDERED" for p in decision.pending for r in p.reasons)
            )
            self._last_decided = t
            if self.autoscaler:
                for up in self.autoscaler.scale_up(t, decision, batch, now):
                    self._requested(t, up)
        elif batch:
            self.rec.reason_counts(t, self._last_reasons)
        if self.autoscaler:
            self._scale_down(t)
        self._sample(t, decision)

    def _changed(self, t: float, batch: list[Job]) -> bool:
        """Whether ``place()`` could answer differently than at the last decision, which placed,
        evicted and rejected nothing: something happened since (an arrival, an end, a release, a node
        or reservation event), or time alone changed a job — its escalation (OJS ML §8.4) or its
        ``not_before`` came due. Otherwise the same queue on the same ledger gets the same empty answer,
        and the interval is recorded without calling the solver (``decided`` false)."""
        if self._dirty or self._last_decided is None:
            return True
        before, now = self.clock.at(self._last_decided), self.clock.at(t)
        for job in batch:
            if (
                job.escalation.enabled
                and escalated(job, now).priority_class != escalated(job, before).priority_class
            ):
                return True
            if job.not_before is not None and before < job.not_before <= now:
                return True
        return False

    def _place(self, batch: list[Job], cluster: Cluster, now: datetime) -> Decision:
        t0 = time.perf_counter()
        assert self.ledger.cluster is cluster
        decision = self.ledger.session.decide(batch, now=now)  # place(batch, cluster, ...), state kept
        self.solver_s += time.perf_counter() - t0
        self.decisions += 1
        return decision

    def _check(self, t: float, decision: Decision, batch: list[Job], cluster: Cluster, now: datetime) -> None:
        from placer.solver.checks import check

        violations = check(
            decision, batch, cluster, now=now, reservations=self.inp.reservations, prices=self.inp.prices
        )
        self.verified += 1
        if violations:
            lines = "\n".join(str(v) for v in violations[:20])
            raise SimulationError(f"the decision at {now.isoformat()} breaks placement rules:\n{lines}")

    def _apply(self, t: float, d: Decision) -> None:
        for r in d.rejected:
            sj = self.pending.pop(r.job, None)
            if sj is not None:
                sj.phase = "rejected"
                msg = r.errors[0].get("message", "") if r.errors else ""
                self.rec.event(t, "reject", sj.id, str(msg))
        for e in d.preemptions:
            self._evict(t, e)
        self._start_placements(t, d)
        counts: Counter[str] = Counter()
        for p in d.pending:
            code = p.reasons[0].code if p.reasons else "UNKNOWN"
            counts[code] += 1
            if p.job in self.jobs:
                self.jobs[p.job].pending_reason = code
        counts["DEPENDENCY_UNMET"] += sum(
            1 for sj in self.pending.values() if not self._deps_known_met(sj.job)
        )
        self._last_reasons = {k: v for k, v in counts.items() if v}
        self.rec.reason_counts(t, self._last_reasons)

    def _evict(self, t: float, e: Eviction) -> None:
        sj = self.jobs.get(e.job)
        if sj is None:
            raise SimulationError(
                f"the decision at t={t:g} s evicts {e.job!r}, which the simulator does not know"
            )
        sj.preemptions += 1
        if sj.phase == "starting":
            self._cancel(t, sj, "evict", f"evicted for {', '.join(e.for_)} before it started")
            return
        att = sj.attempts[-1]
        on_preempt = sj.job.preemption.checkpoint_on_preempt and not sj.background
        saved = 0.0 if sj.background else saved_at_stop(att.start_s, t, sj.checkpoint_interval, on_preempt)
        att.stop_s = t
        att.outcome = "evicted"
        att.useful_s, att.lost_s = saved, (t - att.start_s) - saved
        sj.done_s += saved
        sj.phase = "draining"
        assert sj.allocation is not None
        self.draining[sj.id] = (t + e.grace_period_s, footprint(sj.allocation))
        self.ledger.release([sj.id])
        self.rec.event(
            t,
            "evict",
            sj.id,
            f"for {', '.join(e.for_)}; {att.lost_s:g} s of work lost, grace {e.grace_period_s} s",
        )
        if e.grace_period_s <= 0:
            self._release(t, sj)
        else:
            self.queue.push(t + e.grace_period_s, Kind.RELEASE, job=sj.id, attempt=att.n)

    def _start_placements(self, t: float, d: Decision) -> None:
        now = self.clock.at(t)
        planned: list[tuple[SimJob, RunningJob, float]] = []
        for p in d.placements:
            sj = self.pending.get(p.job)
            if sj is None:
                raise SimulationError(f"the decision at t={t:g} s places {p.job!r}, which is not waiting")
            fp = footprint(p)
            start = max([t] + [rel for rel, other in self.draining.values() if fp & other])
            left = sj.remaining_s if math.isfinite(sj.remaining_s) else None
            rj = running_of(sj.job, p, start=self.clock.at(start), remaining_s=left, now=now)
            planned.append((sj, rj, start))
        try:
            self.ledger.allocate(rj for _, rj, _ in planned)
        except TopologyError as e:
            raise SimulationError(f"the decision at t={t:g} s does not fit the cluster: {e}") from None
        for sj, rj, start in planned:
            del self.pending[sj.id]
            self._hold(sj, rj)
            sj.pending_reason = None
            sj.escalated = sj.escalated or escalated(sj.job, now).priority_class != sj.job.priority_class
            att = Attempt(
                len(sj.attempts) + 1, t, start, sj.units, self._price(rj), rj.priority_class, nodes_text(rj)
            )
            sj.attempts.append(att)
            if start <= t:
                self._begin(t, sj)
            else:
                sj.phase = "starting"
                self.rec.event(t, "place", sj.id, f"starts at t={start:g} s, when evicted jobs have left")
                self.queue.push(start, Kind.START, job=sj.id, attempt=att.n)

    def _price(self, rj: RunningJob) -> float:
        return running_units(self.ledger.cluster, rj, self.inp.prices) / UNITS_PER_DOLLAR

    # -- measurements --------------------------------------------------------------------------------

    def _sample(self, t: float, d: Decision | None) -> None:
        cluster = self.ledger.cluster
        by_phase: Counter[str] = Counter(sj.phase for sj in self.holding.values())
        total = down = 0
        for n in cluster.nodes:
            if n.gpu_count:
                if n.usable:
                    total += n.gpu_count
                else:
                    down += n.gpu_count
        busy = draining = starting = overlap = cost = 0.0
        chips_busy = 0
        for sj in self.holding.values():
            if sj.allocation is None:
                continue
            g = gpus_of(sj.allocation)
            if sj.phase == "running":
                busy += g
                chips_busy += chips_of(sj.allocation)
                cost += sj.attempts[-1].cost_per_hour
            elif sj.phase == "starting":
                starting += g
            elif sj.phase == "draining":
                draining += g
                overlap += _promised(cluster, sj.allocation)
                cost += sj.attempts[-1].cost_per_hour
        waiting = [sj.job for sj in self.pending.values()]
        frag = fragmentation(cluster, waiting)
        chips_total = sum(p.chips for p in cluster.tpu_pods() if p.usable)
        row = {
            "time": self.clock.at(t),
            "t_s": t,
            "pending": len(self.pending),
            "starting": by_phase["starting"],
            "running": by_phase["running"],
            "draining": by_phase["draining"],
            "done": self.done,
            "gpus_total": total,
            "gpus_down": down,
            "gpus_busy": busy,
            "gpus_starting": starting,
            "gpus_draining": draining,
            "gpus_allocated": busy + starting + draining - overlap,
            "pending_gpus": sum(j.total_gpu_milli for j in waiting) / 1000,
            "tpu_chips_total": chips_total,
            "tpu_chips_busy": chips_busy,
            "pending_tpu_chips": sum(j.total_tpu_chips for j in waiting),
            "cost_per_hour": cost,
            **frag.as_dict(),
            "placed": len(d.placements) if d else 0,
            "evicted": len(d.preemptions) if d else 0,
            "rejected": len(d.rejected) if d else 0,
            "decided": d is not None,
            "engine": d.stats.engine if d else None,
            "status": d.stats.status if d else None,
            "solver_wall_s": d.stats.wall_s if d else 0.0,
        }
        self.rec.interval(row)

    def _close(self, H: float) -> None:
        """Book every run still open at the horizon up to the horizon (work so far counts as useful)."""
        for sj in self.jobs.values():
            att = sj.current
            if att is None:
                continue
            if sj.phase == "starting":
                att.start_s = att.stop_s = att.release_s = max(att.placed_s, min(att.start_s, H))
                att.outcome = "horizon"
            elif sj.phase == "running":
                att.stop_s = att.release_s = H
                att.outcome = "horizon"
                att.useful_s = H - att.start_s
            elif sj.phase == "draining":
                att.release_s = min(H, self.draining[sj.id][0])
                att.grace_s = att.release_s - (att.stop_s or att.release_s)

    def _meta(self) -> dict[str, object]:
        c = self.inp.cluster
        prices = self.inp.prices
        fleet = sum(prices.node_hour(n) for n in c.nodes) + sum(prices.pod_hour(p) for p in c.tpu_pods())
        return {
            "name": self.inp.name,
            "seed": self.inp.seed,
            "start": self.inp.start.isoformat(),
            "horizon_s": self.clock.horizon_s,
            "interval_s": self.inp.interval_s,
            "nodes": len(c.nodes),
            "gpus": sum(n.gpu_count for n in c.nodes),
            "tpu_chips": sum(p.chips for p in c.tpu_pods()),
            "fleet_cost_per_hour": fleet,
            "engine": self.inp.policy.engine_name,
            "time_limit_s": self.inp.policy.time_limit_s,
            "node_failures": sum(1 for e in self.rec.events if e["event"] == "node_down"),
            **self._autoscaling(),
            "decisions": self.decisions,
            "verified": self.verified,
            "solver_s": self.solver_s,
        }

    def _autoscaling(self) -> dict[str, object]:
        """The autoscaled groups' report (none without groups), and their GPU-hours and dollars in all."""
        if not self.autoscaler:
            return {}
        groups = self.autoscaler.report(self.clock.horizon_s)
        return {
            "autoscaling": groups,
            "autoscaled_gpu_h": sum(g["ready_gpu_h"] for g in groups.values()),
            "autoscaled_cost_usd": sum(g["cost_usd"] for g in groups.values()),
        }


def _promised(cluster: Cluster, rj: RunningJob) -> float:
    """GPUs of a draining job that the ledger already promised to a job waiting to start on them."""
    out = 0.0
    for r in rj.replicas:
        if r.node is None or not r.gpus:
            continue
        held = cluster.state.nodes.get(r.node)
        if held is not None:
            out += sum(1 for g in r.gpus if held.gpus.get(g))
    return out


def simulate(
    inputs: SimInputs, *, verify: bool = False, progress: bool = False, skip_unchanged: bool = True
) -> SimResult:
    """Run ``inputs`` to the horizon and return the tables (see :class:`Simulator`)."""
    return Simulator(inputs, verify=verify, progress=progress, skip_unchanged=skip_unchanged).run()
