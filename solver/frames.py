"""A decision as pandas tables: one row per replica placed, one per job left pending, for notebooks and
cost studies (``Decision.to_frame()``, ``Decision.pending_frame()``, and the HTML table a notebook shows).

Why tables: a decision of thousands of replicas reads better filtered and grouped than as JSON, and a
notebook user's next step (GPUs per rack, cost per queue) is a ``groupby``.

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> d = Decision(placements=[JobPlacement(job="a", replicas=[ReplicaPlacement(node="n1", gpus=[0, 1]),
...                                                        ReplicaPlacement(node="n2", gpus=[0])])])
>>> replica_frame(d)[["node", "gpus", "gpu_count"]].values.tolist()
[['n1', '0,1', 2], ['n2', '0', 1]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from placer.solver.decision import Decision
    from placer.topology import Cluster

__all__ = ["REPLICA_COLUMNS", "TOPOLOGY_COLUMNS", "decision_html", "pending_frame", "replica_frame"]

#: Columns of :func:`replica_frame`, in order.
REPLICA_COLUMNS = (
    "job",
    "task_group",
    "node",
    "gpus",
    "gpu_count",
    "gpu_milli",
    "tpu_pod",
    "tpu_chips",
    "cpu_cores",
    "memory_gb",
    "priority_class",
    "job_cost_per_hour",
)


#: Columns added when the cluster is given: where each replica sits in the topology.
TOPOLOGY_COLUMNS = ("zone", "block", "rack", "nvlink_domain")


def replica_frame(decision: Decision, cluster: Cluster | None = None) -> pd.DataFrame:
    """One row per replica placed (:data:`REPLICA_COLUMNS`); GPU indices as ``"0,1"``. With ``cluster``
    (the one decided on), also each replica's zone, block, rack and NVLink domain
    (:data:`TOPOLOGY_COLUMNS`): a decision names nodes, the cluster knows where they are.

    >>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
    >>> from placer.topology import cluster_of, dgx_h100
    >>> d = Decision(placements=[JobPlacement(job="a", replicas=[ReplicaPlacement(node="dgx-h100-r2-1")])])
    >>> replica_frame(d, cluster_of(dgx_h100(8, nodes_per_rack=4)))[["node", "rack"]].values.tolist()
    [['dgx-h100-r2-1', 'dgx-h100-rack-2']]
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for p in decision.placements:
        for r in p.replicas:
            rows.append(
                {
                    "job": p.job,
                    "task_group": r.task_group,
                    "node": r.node,
                    "gpus": ",".join(str(g) for g in r.gpus),
                    "gpu_count": len(r.gpus),
                    "gpu_milli": r.gpu_milli,
                    "tpu_pod": r.tpu_pod,
                    "tpu_chips": len(r.tpu_chips),
                    "cpu_cores": r.cpu_cores,
                    "memory_gb": r.memory_gb,
                    "priority_class": p.priority_class,
                    "job_cost_per_hour": p.cost_per_hour,
                }
            )
    frame = pd.DataFrame(rows, columns=list(REPLICA_COLUMNS))
    if cluster is not None:
        where = {n.name: n for n in cluster.nodes}
        for col in TOPOLOGY_COLUMNS:
            frame[col] = [getattr(where[n], col, None) if n in where else None for n in frame["node"]]
    return frame


def pending_frame(decision: Decision) -> pd.DataFrame:
    """One row per pending job: its first reason's code and message, and how many reasons it has."""
    import pandas as pd

    rows = [
        {
            "job": p.job,
            "code": p.reasons[0].code if p.reasons else None,
            "message": p.reasons[0].message if p.reasons else None,
            "reasons": len(p.reasons),
        }
        for p in decision.pending
    ]
    return pd.DataFrame(rows, columns=["job", "code", "message", "reasons"])


def decision_html(decision: Decision) -> str:
    """What a notebook shows for a Decision: the stats line, the replicas, the pending jobs."""
    s = decision.stats
    head = (
        f"<p><b>{len(decision.placements)} placed, {len(decision.pending)} pending, "
        f"{len(decision.rejected)} rejected</b> — engine {s.engine}, status {s.status}</p>"
    )
    return head + replica_frame(decision).to_html(index=False) + pending_frame(decision).to_html(index=False)
