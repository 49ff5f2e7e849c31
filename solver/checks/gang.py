"""Rule 2, gang completeness: each task group of a placed job is placed whole, and only its groups.

Why: a gang (OJS distributed job, Flux slots, SSS task groups) runs all its replicas or none; a decision
that places 7 of 8 workers starts a job that hangs at its first collective. Per group ``g``, with ``R``
the replicas naming ``g`` in ``task_group``:

* **normal** — ``len(R) == g.count`` (or a value of ``g.count_range``), each with ``g.gpu.count`` GPUs;
* **split** — ``job.may_span_nodes()``, ``g.count == 1``, ``g.gpu`` set (whole GPUs) and no ``g.slices``
  (a replica in Kueue slices is a pod, on one node): the one replica's GPUs may be split into pieces on
  pairwise distinct nodes, each piece at least one GPU, summing to ``g.gpu.count``;
* **multi-node replicas** — ``g.nodes_per_replica == k > 1`` (Flux ``slot > node: k``): each logical
  replica is ``k`` entries, so ``len(R) == n * k`` for an admissible ``n``, with ``n * g.gpu.count``
  GPUs in all (``g.gpu.count / k`` per entry when that divides);
* **fractional** — ``g.gpu.share_milli``: one GPU index per replica and ``gpu_milli == share_milli``;
  a whole-GPU group's replicas carry no ``gpu_milli``;
* **resources** — the group's replicas sum to at least ``n`` times the per-replica cpu, memory, storage and
  shm (tolerance 1e-6), which accepts any proportional split.

TPU chip counts and positions are rule 13's (:mod:`placer.solver.checks.tpu`).

>>> from placer.solver.decision import JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> job = Job(id="j", tasks=[TaskGroup(count=2, gpu=GpuDemand(count=4))])
>>> p = JobPlacement(job="j", replicas=[ReplicaPlacement(node="n1", gpus=[0, 1, 2, 3])])
>>> [v.message for v in check_gang(job, p)][0]
'task group default has 1 replica placed; it needs 2'
"""

from __future__ import annotations

from collections.abc import Iterator

from placer.solver.checks.context import EPS
from placer.solver.checks.violation import Violation
from placer.solver.decision import JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import Job, TaskGroup

__all__ = ["check_gang", "is_split"]


def _admissible(g: TaskGroup, n: int) -> bool:
    if g.count_range is None:
        return n == g.count
    return n in g.count_range.values(n)


def _wanted(g: TaskGroup) -> str:
    if g.count_range is None:
        return str(g.count)
    r = g.count_range
    hi = "unbounded" if r.max is None else str(r.max)
    return f"a count of the range min {r.min}, max {hi} ({r.operator}{r.operand})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def is_split(job: Job, g: TaskGroup) -> bool:
    """Whether the group's one replica may be split over several nodes (contract rule 2, split case).

    >>> from placer.solver.jobs.model import GpuDemand
    >>> is_split(Job(id="j", distributed_strategy="fsdp"), TaskGroup(gpu=GpuDemand(count=16)))
    True
    """
    return (
        job.may_span_nodes()
        and g.count == 1
        and g.count_range is None
        and g.gpu is not None
        and g.gpu.share_milli is None
        and g.gpu.count > 0
        and g.tpu is None
        and g.slices is None  # a replica in Kueue slices is a pod: it runs on one node
    )


def check_gang(job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Every violation of rule 2 for one placed job."""
    names = {g.name for g in job.tasks}
    by_group: dict[str, list[ReplicaPlacement]] = {}
    for rep in placement.replicas:
        if rep.task_group not in names:
            yield Violation(
                "gang",
                job.id,
                f"a replica names task group {rep.task_group!r}, which the job does not have "
                f"(groups: {', '.join(sorted(names))})",
                rep.node,
            )
            continue
        by_group.setdefault(rep.task_group, []).append(rep)
    for g in job.tasks:
        yield from _check_group(job, g, by_group.get(g.name, []))


def _check_group(job: Job, g: TaskGroup, reps: list[ReplicaPlacement]) -> Iterator[Violation]:
    per = g.gpus_per_replica
    if is_split(job, g) and len(reps) > 1:
        yield from _check_split(job, g, reps)
        logical = 1
    elif g.nodes_per_replica > 1:
        k = g.nodes_per_replica
        logical = len(reps) // k
        if len(reps) % k or not _admissible(g, logical):
            yield Violation(
                "gang",
                job.id,
                f"task group {g.name} has {_plural(len(reps), 'node entry')}; each replica spans {k} nodes "
                f"and it needs {_wanted(g)} replicas",
            )
        total = sum(len(r.gpus) for r in reps)
        if total != logical * per:
            yield Violation(
                "gang", job.id, f"task group {g.name} holds {total} GPUs; its replicas need {logical * per}"
            )
        elif per % k == 0:
            for r in reps:
                if len(r.gpus) != per // k:
                    yield Violation(
                        "gang",
                        job.id,
                        f"a node entry of task group {g.name} has {len(r.gpus)} GPUs; each of the {k} nodes "
                        f"of a replica holds {per // k}",
                        r.node,
                    )
    else:
        logical = len(reps)
        if not _admissible(g, len(reps)):
            yield Violation(
                "gang",
                job.id,
                f"task group {g.name} has {_plural(len(reps), 'replica')} placed; it needs {_wanted(g)}",
            )
        if g.gpu is None or g.gpu.share_milli is None:
            for r in reps:
                if r.tpu_pod is None and len(r.gpus) != per:
                    yield Violation(
                        "gang",
                        job.id,
                        f"a replica of task group {g.name} holds {len(r.gpus)} GPUs; it needs {per}",
                        r.node,
                    )
    yield from _check_shares(job, g, reps)
    yield from _check_resources(job, g, reps, logical)


def _check_split(job: Job, g: TaskGroup, reps: list[ReplicaPlacement]) -> Iterator[Violation]:
    want = g.gpus_per_replica
    total = sum(len(r.gpus) for r in reps)
    if total != want:
        yield Violation(
            "gang",
            job.id,
            f"the {len(reps)} pieces of task group {g.name} hold {total} GPUs in all; "
            f"the replica needs {want}",
        )
    seen: set[str] = set()
    for r in reps:
        if r.tpu_pod is not None:
            yield Violation("gang", job.id, f"a piece of task group {g.name} sits on a TPU pod", r.node)
        if not r.gpus:
            yield Violation("gang", job.id, f"a piece of task group {g.name} holds no GPU", r.node)
        if r.node in seen:
            yield Violation(
                "gang",
                job.id,
                f"task group {g.name} is split into two pieces on the same node; pieces of one replica "
                "go on distinct nodes",
                r.node,
            )
        seen.add(r.node)


def _check_shares(job: Job, g: TaskGroup, reps: list[ReplicaPlacement]) -> Iterator[Violation]:
    share = None if g.gpu is None else g.gpu.share_milli
    for r in reps:
        if share is not None:
            if len(r.gpus) != 1 or r.gpu_milli != share:
                yield Violation(
                    "gang",
                    job.id,
                    f"a replica of task group {g.name} needs a {share}-milli share of exactly one GPU; "
                    f"it holds {r.gpu_milli or 1000} milli of GPUs {r.gpus}",
                    r.node,
                )
        elif r.gpu_milli is not None:
            yield Violation(
                "gang",
                job.id,
                f"a replica of task group {g.name} holds a {r.gpu_milli}-milli share; the group asks for "
                "whole GPUs",
                r.node,
            )


def _check_resources(job: Job, g: TaskGroup, reps: list[ReplicaPlacement], n: int) -> Iterator[Violation]:
    for what, label, unit in (
        ("cpu_cores", "cpu", "cores"),
        ("memory_gb", "memory", "GB"),
        ("storage_gb", "storage", "GB"),
        ("shm_gb", "shm", "GB"),
    ):
        need = n * getattr(g, what)
        got = sum(getattr(r, what) for r in reps)
        if got + EPS < need:
            yield Violation(
                "gang",
                job.id,
                f"task group {g.name} is given {got:g} {unit} of {label} in all"
                f"; its {_plural(n, 'replica')} need {need:g}",
            )
