"""Small builders for hand-made decisions in the checker tests (not a test module itself)."""

from __future__ import annotations

from typing import Any

from placer.solver.checks import Violation
from placer.solver.decision import Decision, JobPlacement, PendingJob, Reason, ReplicaPlacement


def rep(node: str, gpus: list[int] | None = None, **kw: Any) -> ReplicaPlacement:
    """A replica on ``node`` holding ``gpus``."""
    return ReplicaPlacement(node=node, gpus=gpus or [], **kw)


def place(job: str, *replicas: ReplicaPlacement) -> JobPlacement:
    return JobPlacement(job=job, replicas=list(replicas))


def decision(*placements: JobPlacement, pending: tuple[str, ...] = ()) -> Decision:
    """A decision placing ``placements`` and leaving ``pending`` jobs pending."""
    return Decision(
        placements=list(placements),
        pending=[PendingJob(job=j, reasons=[Reason(code="CAPACITY", message="full")]) for j in pending],
    )


def rules(violations: list[Violation]) -> list[tuple[str, str, str | None]]:
    """(rule, job, node) of each violation, for compact assertions."""
    return [(v.rule, v.job, v.node) for v in violations]
