"""Resource-aware FETCH (OJS ML resources v0.1.0 §6, v0.3.0 §11): which pending jobs one worker may run.

Why through the engine: §6.2 says the backend "MUST only return jobs whose requirements are satisfiable by
the worker's capabilities" and "MUST check all required affinity rules"; §11 lists the hard constraints
(GPU type, count, memory, compute capability, TPU type, node selector). The engine already decides all of
these, with one set of rules shared by greedy, CP-SAT and the explanations. So the worker is imported as
a one-node cluster (:func:`placer.topology.importers.parse_ojs_workers`, the same reader as ``placer
cluster``)
and each job is placed on it alone by the engine's core (:func:`placer.solver.core.decide`, greedy, no
preemption, no planning): a job matches exactly when the engine would place it there. Nothing about
matching is written twice; a job that does not match carries the engine's own reasons
(``UNSATISFIABLE`` with ``details.eliminated``, ``INSUFFICIENT_CAPACITY``, ...).

Order (§6.2 SHOULDs, §11 soft constraints): best first by the engine's preference score of the job on
this worker (:func:`placer.solver.objective.preferences.preference_scores`: preferred affinity weights, model
locality — the
worker has the job's model loaded —, data locality, spot preference), then priority class, numeric
priority, submit time and id.

``worker.queues`` (the FETCH request's queues) keeps jobs of other queues out (``OTHER_QUEUE``; a job
without a queue is in OJS's ``default``). ``worker.count``: ``dispatch`` lists the best jobs, at most
``count``, that fit on the worker *together* (each placed on what the previous ones left, ``replicas``
saying where), which is what a FETCH returns; ``matches`` lists every job the idle worker could run
alone, each with where it would run then.

>>> from placer.solver.jobs import read_object
>>> worker = {"worker_id": "w1", "count": 1, "labels": ["gpu:nvidia-a100", "gpu_count:4", "region:us-east-1"]}
>>> jobs = read_object([
...     {"id": "small", "ext_ml_gpu_count": 1},
...     {"id": "near", "ext_ml_gpu_count": 2, "meta": {"affinity": {"preferred": [
...         {"key": "region", "operator": "In", "values": ["us-east-1"]}]}}},
...     {"id": "big", "ext_ml_gpu_count": 8}])
>>> out = match(worker, jobs)
>>> [[e["job"] for e in out[key]] for key in ("matches", "dispatch", "unmatched")]
[['near', 'small'], ['near'], ['big']]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from placer.service.errors import issues_of_topology, unprocessable
from placer.solver.decision import as_running
from placer.solver.jobs.model import Job, ReadResult
from placer.solver.jobs.queues import QueueConfig
from placer.solver.policy import Policy
from placer.topology import Cluster, TopologyError

__all__ = ["DEFAULT_QUEUE", "MATCH_POLICY", "fetch_fields", "match", "preference", "worker_cluster"]

#: OJS's queue for a job that names none.
DEFAULT_QUEUE = "default"
#: The engine settings of one match: greedy alone answers in milliseconds and is what decides
#: feasibility; nothing runs on the worker, so nothing is evicted, and a FETCH is about now.
MATCH_POLICY = Policy(engine="greedy", preemption=False, plan=False, verify=False, time_limit_s=5.0)


def worker_cluster(worker: Mapping[str, Any]) -> Cluster:
    """The worker as a one-node cluster (or one TPU slice); 422 ``invalid_worker`` naming the problem."""
    from placer.topology.build import build_cluster
    from placer.topology.importers import parse_ojs_workers

    if "worker_id" not in worker:
        raise unprocessable(
            "invalid_worker",
            "the worker needs a worker_id",
            [{"code": "required", "path": "worker.worker_id", "message": "a FETCH names its worker"}],
        )
    try:
        return build_cluster(parse_ojs_workers(dict(worker), source="worker"), source="worker")
    except TopologyError as e:
        raise unprocessable("invalid_worker", "the worker cannot be read", issues_of_topology(e)) from None


def fetch_fields(worker: Mapping[str, Any]) -> tuple[list[str] | None, int | None]:
    """The FETCH request's ``queues`` and ``count`` (v0.1.0 §6.1), checked; 422 naming the field."""
    queues, count = worker.get("queues"), worker.get("count")
    problems = []
    if queues is not None and not (
        isinstance(queues, list) and queues and all(isinstance(q, str) and q for q in queues)
    ):
        problems.append(
            {"code": "type", "path": "worker.queues", "message": "a non-empty list of queue names"}
        )
    if count is not None and not (isinstance(count, int) and not isinstance(count, bool) and count >= 1):
        problems.append({"code": "range", "path": "worker.count", "message": "an integer >= 1"})
    if problems:
        raise unprocessable("invalid_worker", "the FETCH fields are invalid", problems)
    return queues, count


def preference(job: Job, cluster: Cluster) -> int:
    """The engine's level-2 score of the job on the worker (0 for a TPU slice: no node to score)."""
    from placer.solver.candidates import NodeArrays, batch_keys
    from placer.solver.demand import expand
    from placer.solver.objective.preferences import preference_scores
    from placer.solver.snapshot import Snapshot

    snap = Snapshot.of(cluster)
    if not snap.nodes:
        return 0
    plan = expand(job, 0, max_node_gpus=max(1, max(n.gpu_count for n in cluster.nodes)))
    arrays = NodeArrays.of(snap, batch_keys(plan.units, [plan.scope]))
    return int(sum(int(preference_scores(plan, u, arrays, MATCH_POLICY)[0]) * u.replicas for u in plan.units))


def _rank_key(entry: tuple[Job, int]) -> tuple[object, ...]:
    job, score = entry
    submit = job.submit_time.timestamp() if job.submit_time else 0.0
    return (-score, -job.priority_class.rank, -job.priority, submit, job.id)


def match(
    worker: Mapping[str, Any],
    jobs: Sequence[ReadResult],
    *,
    queues: Mapping[str, QueueConfig] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The FETCH answer for ``worker`` over ``jobs`` (read results): ``matches``, ``dispatch``,
    ``unmatched`` and ``rejected`` (see the module docstring)."""
    from placer.solver.core import decide

    fetch_queues, count = fetch_fields(worker)
    cluster = worker_cluster(worker)
    now = now or datetime.now(UTC)
    rejected = [{"job": r.id, "errors": [e.model_dump() for e in r.errors]} for r in jobs if not r.ok]
    unmatched: list[dict[str, Any]] = []
    runnable: list[tuple[Job, int]] = []
    replicas: dict[str, list[dict[str, Any]]] = {}
    for r in jobs:
        job = r.job
        if not r.ok or job is None:
            continue
        queue = job.queue or DEFAULT_QUEUE
        if fetch_queues is not None and queue not in fetch_queues:
            reason = {
                "code": "OTHER_QUEUE",
                "message": f"job is in queue {queue!r}; the worker fetches from {', '.join(fetch_queues)}",
                "details": {"queue": queue},
            }
            unmatched.append({"job": job.id, "reasons": [reason]})
            continue
        d = decide([job], cluster, MATCH_POLICY, now=now, queues=queues)
        if d.placements:
            runnable.append((job, preference(job, cluster)))
            replicas[job.id] = [rep.model_dump(mode="json") for rep in d.placements[0].replicas]
        elif d.rejected and d.rejected[0].errors[0].get("code") == "tpu_topology":
            # One worker that cannot provide the slice is one worker: the job waits for another.
            error = d.rejected[0].errors[0]
            reason = {"code": "UNSATISFIABLE", "message": str(error["message"]), "details": {}}
            unmatched.append({"job": job.id, "reasons": [reason]})
        elif d.rejected:
            rejected.append({"job": job.id, "errors": d.rejected[0].errors})
        else:
            unmatched.append(
                {"job": job.id, "reasons": [x.model_dump(mode="json") for x in d.pending[0].reasons]}
            )
    runnable.sort(key=_rank_key)
    matches = [
        {
            "job": job.id,
            "rank": k + 1,
            "preference": score,
            "priority_class": job.priority_class.value,
            "priority": job.priority,
            "queue": job.queue or DEFAULT_QUEUE,
            "replicas": replicas[job.id],
        }
        for k, (job, score) in enumerate(runnable)
    ]
    dispatch = None if count is None else _together([job for job, _ in runnable], cluster, count, now, queues)
    return {
        "worker_id": worker["worker_id"],
        "matches": matches,
        "dispatch": dispatch,
        "unmatched": sorted(unmatched, key=lambda u: u["job"]),
        "rejected": rejected,
    }


def _together(
    ranked: Sequence[Job],
    cluster: Cluster,
    count: int,
    now: datetime,
    queues: Mapping[str, QueueConfig] | None,
) -> list[dict[str, Any]]:
    """The best jobs, at most ``count``, that fit on the worker together (best first, each placed by the
    engine on what the ones before it left), each with its replicas."""
    from placer.solver.core import decide

    out: list[dict[str, Any]] = []
    for job in ranked:
        if len(out) == count:
            break
        d = decide([job], cluster, MATCH_POLICY, now=now, queues=queues)
        if d.placements:
            replicas = d.placements[0].replicas
            cluster = cluster.allocate(as_running(job.id, replicas))
            out.append({"job": job.id, "replicas": [r.model_dump(mode="json") for r in replicas]})
    return out
