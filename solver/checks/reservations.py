"""Rule 15b, reservation isolation (OJS ML resources §8.3), for declared reservations
(:class:`solver.reservations.Reservation`, an input type): a job naming a reservation runs only on its
nodes and, for a GPU-count reservation, on at most that many GPUs of each node; other jobs never use a
whole-node reservation's nodes, and leave a GPU-count reservation's GPUs free (on each such node they take
at most the free GPUs minus the reserved count).

>>> from solver.decision import Decision
>>> from topology import cluster_of, cpu_nodes
>>> from datetime import UTC, datetime
>>> list(check_reservations(Decision(), {}, cluster_of(cpu_nodes(1)), [], datetime.now(UTC)))
[]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from solver.checks.violation import Violation
from solver.decision import Decision
from solver.jobs.model import Job
from topology import Cluster


def _held(r: Any, now: datetime) -> bool:
    """Whether a reservation holds its capacity at ``now`` (re-derived here: started, not ended, not
    released by ``timeout_s`` after its start)."""
    if r.start is not None and now < r.start:
        return False
    if r.end is not None and now >= r.end:
        return False
    return not (r.timeout_s is not None and (now - (r.start or now)).total_seconds() > r.timeout_s)


def check_reservations(
    decision: Decision, jobs: Mapping[str, Job], cluster: Cluster, reservations: Sequence[Any], now: datetime
) -> Iterator[Violation]:
    """``reservation`` violations; ``cluster`` is the cluster after the decision's evictions. Members of a
    reservation that is not held may not be placed at all; only held reservations keep others out."""
    declared = {r.id: r for r in reservations if hasattr(r, "node_names") and _held(r, now)}
    for p in decision.placements:
        job = jobs.get(p.job)
        rid = job.reservation.id if job is not None and job.reservation is not None else None
        r = next((x for x in reservations if getattr(x, "id", None) == rid), None) if rid else None
        if r is not None and hasattr(r, "node_names") and r.id not in declared:
            yield Violation("reservation", p.job, f"its reservation {r.id!r} is not held now")
    if not declared:
        return
    member_gpus: dict[tuple[str, str], int] = {}
    other_gpus: dict[str, int] = {}
    for p in decision.placements:
        job = jobs.get(p.job)
        rid = job.reservation.id if job is not None and job.reservation is not None else None
        r = declared.get(rid) if rid else None
        for rep in p.replicas:
            if rep.tpu_pod is not None:
                continue
            n = len(rep.gpus)
            if r is not None:
                if rep.node not in r.node_names:
                    yield Violation(
                        "reservation", p.job, f"it runs outside its reservation {r.id!r}", rep.node
                    )
                member_gpus[(r.id, rep.node)] = member_gpus.get((r.id, rep.node), 0) + n
            else:
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
