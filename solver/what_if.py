"""What would change the outcome: "fits if these running jobs were preemptible".

A pending job's reason says why it waits; a backend (or the person reading it) also wants to know the
smallest change that would let it run now. Three are cheap to compute, each in the module that knows it:

* "fits if queue Q's budget allowed 8 more GPUs" — :func:`placer.solver.explain.queue_budget`;
* "fits after job X ends at T" — the plan's ``PLANNED_START`` reason
  (:func:`placer.solver.backfill.planned_reason`);
* "fits if 2 running jobs of lower priority were preemptible" — here: the job is placed (greedy, one job)
  on the cluster as this decision leaves it, minus the running jobs of lower priority that nothing may
  evict today (their ``preemptible`` flag is false, or they are ``on-demand`` without one; ``reserved``
  jobs are never candidates, OJS ML §8.2). When it fits, the reason names the jobs under its placement.

Only under a policy that preempts (``Policy.preemption``), only the highest-priority waiting jobs (at
most :data:`MAX_JOBS`), and only in the time the decision has left: the hint is a courtesy, never a cause
of a missed deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime

from placer.solver.cancel import cancelled
from placer.solver.core import probe_fit
from placer.solver.decision import Decision, Reason, as_running
from placer.solver.explain import CAPACITY_CODES, few
from placer.solver.jobs.model import Job
from placer.solver.policy import Policy
from placer.solver.preempt import evict_rank, job_rank
from placer.solver.shielded import Shielded
from placer.topology import Cluster, RunningJob

__all__ = ["MAX_JOBS", "PROBE_PER_NODE_S", "add_preemptible_hints"]

#: Pending jobs examined per decision, highest priority first.
MAX_JOBS = 8
#: A probe places one job on a copy of the whole cluster (snapshot, candidates), so it costs time in
#: proportion to the nodes: ~20 us a node on scenario M, ~28 us on L (0.3 s a probe there). A probe is
#: started only when the larger of this estimate and the slowest probe so far still ends before the
#: deadline: checking only that the deadline had not passed let the last probe overrun it by 0.3 s.
PROBE_PER_NODE_S = 0.00004


def add_preemptible_hints(
    decision: Decision,
    jobs: Mapping[str, Job],
    cluster: Cluster,
    policy: Policy,
    *,
    now: datetime,
    deadline: float,
    shielded: Callable[[], Shielded] | None = None,
) -> bool:
    """Append a ``FITS_IF_PREEMPTIBLE`` reason to waiting jobs that would fit if some running jobs of
    lower priority were preemptible (see the module docstring). Stops at ``deadline``
    (``time.perf_counter()``); returns whether it did (then which jobs got a hint depends on the machine).
    With ``policy.reproducible`` the expected probe time is the fixed model (``PROBE_PER_NODE_S`` per
    node), never a measured one. ``shielded``: how to get the pool of ``cluster`` a session keeps (read
    only when a waiting job is examined and the decision evicts nothing). With ``policy.preemption`` off
    nothing is examined: no running job would be evicted for a waiting one however preemptible it were,
    so the hint would name a change that changes nothing."""
    if not policy.preemption:
        return False

    evicted = {e.job for e in decision.preemptions}
    waiting = [
        p
        for p in decision.pending
        if p.job in jobs
        and p.reasons
        and p.reasons[0].code in CAPACITY_CODES
        and jobs[p.job].reservation is None
    ]
    waiting.sort(key=lambda p: (-job_rank(jobs[p.job]), p.job))
    base: Cluster | None = None
    pool: Shielded | None = None
    probe_s = PROBE_PER_NODE_S * len(cluster.nodes)
    for p in waiting[:MAX_JOBS]:
        started = time.perf_counter()
        if started + probe_s > deadline - 0.02 or cancelled():
            return True
        job = jobs[p.job]
        pool = pool or (shielded() if shielded is not None and not evicted else Shielded(cluster, evicted))
        candidates = pool.below(evict_rank(job))
        if not candidates:
            continue
        if base is None:  # the cluster as the decision leaves it: evictions gone, placements running
            after = cluster.release(*sorted(evicted)) if evicted else cluster
            placed = [as_running(f"placed:{q.job}", q.replicas) for q in decision.placements]
            base = after.with_allocations(placed) if placed else after
        view = base.release(*[rj.job for rj in candidates])
        probe = job.model_copy(update={"dependencies": [], "not_before": None})
        fit = probe_fit(probe, view, policy, now, deadline - time.perf_counter())
        if not policy.reproducible:
            probe_s = max(probe_s, time.perf_counter() - started)
        if fit is None:
            continue
        needed = sorted(rj.job for rj in candidates if _under(rj, fit.replicas))
        if needed:
            p.reasons.append(_reason(needed))
    return False


def _under(rj: RunningJob, replicas: list) -> bool:
    """Whether the running job holds something the placement uses: a GPU or TPU chip, or (CPU work)
    a node it shares."""
    for mine in rj.replicas:
        for r in replicas:
            if r.tpu_pod is not None:
                same = r.tpu_pod == mine.tpu_pod
                if same and {tuple(c) for c in r.tpu_chips} & {tuple(c) for c in mine.tpu_chips}:
                    return True
                continue
            shares = not r.gpus or not mine.gpus or bool(set(r.gpus) & set(mine.gpus))
            if r.node == mine.node and shares:
                return True
    return False


def _reason(needed: list[str]) -> Reason:
    names = few(needed, 5)
    n = len(needed)
    return Reason(
        code="FITS_IF_PREEMPTIBLE",
        message=(
            f"fits now if {n} running job{'s' if n > 1 else ''} of lower priority "
            f"{'were' if n > 1 else 'was'} preemptible: {names}"
        ),
        details={"jobs": needed},
    )
