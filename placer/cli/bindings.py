"""A decision as Kubernetes ``v1.Binding`` objects, for ``placer place --output bindings``: what a small
scheduler extender or controller posts to bind pending pods to the nodes placer chose.

Why only pods: a Binding names an existing pod (``POST /api/v1/namespaces/{ns}/pods/{name}/binding``,
what kube-scheduler itself does). Jobs read from pods (``kubernetes-pod``) get one each; a Job, JobSet or
Kueue Workload has no pods yet — its controller creates them after Kueue admits it — so placer names it in
``skipped`` (printed to stderr) instead of inventing pod names. Jobs from other formats (OJS, Flux, SSS)
have no pods at all. A pod with ``schedulingGates`` must have them removed before it can be bound; the
binding for it is still printed, and so is a note.

The output is a ``v1`` ``List``; ``kubectl create -f -`` creates each Binding (``docs/kubernetes.md``).

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import Job
>>> job = Job(id="ml/train", source_format="kubernetes-pod", metadata={"kubernetes": {"namespace": "ml"}},
...           name="train")
>>> d = Decision(placements=[JobPlacement(job="ml/train", replicas=[ReplicaPlacement(node="gpu-1")])])
>>> doc, skipped = bindings(d, [job])
>>> doc["items"][0]["metadata"], doc["items"][0]["target"], skipped
({'name': 'train', 'namespace': 'ml'}, {'apiVersion': 'v1', 'kind': 'Node', 'name': 'gpu-1'}, [])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from placer.solver.decision import Decision
from placer.solver.jobs.model import Job

__all__ = ["bindings"]


def bindings(decision: Decision, jobs: Iterable[Job]) -> tuple[dict[str, Any], list[str]]:
    """``(List of Bindings, notes on what got none)`` for ``decision`` (module docstring)."""
    by_id = {j.id: j for j in jobs}
    items: list[dict[str, Any]] = []
    skipped: list[str] = []
    for p in decision.placements:
        job = by_id.get(p.job)
        if job is None or job.source_format != "kubernetes-pod":
            what = "no job" if job is None else job.source_format
            skipped.append(f"{p.job}: placed, but it is not a pending pod ({what}); no Binding")
            continue
        namespace = str((job.metadata.get("kubernetes") or {}).get("namespace") or "default")
        name = job.name or p.job.rsplit("/", 1)[-1]
        [replica] = p.replicas  # a pod is one replica on one node
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": replica.node},
            }
        )
        gates = (
            (job.envelope or {}).get("spec", {}).get("schedulingGates")
            if isinstance(job.envelope, dict)
            else None
        )
        if gates:
            skipped.append(f"{p.job}: has scheduling gates; remove them before posting its Binding")
    return {"apiVersion": "v1", "kind": "List", "items": items}, skipped
