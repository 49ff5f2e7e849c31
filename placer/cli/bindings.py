"""A decision as Kubernetes ``v1.Binding`` objects, for ``placer place --output bindings``: what a small
scheduler extender or controller posts to bind pending pods to the nodes placer chose.

Why only pods: a Binding names an existing pod (``POST /api/v1/namespaces/{ns}/pods/{name}/binding``,
what kube-scheduler itself does). Jobs read from pods (``kubernetes-pod``) get one each; a Job, JobSet or
Kueue Workload has no pods yet — its controller creates them after Kueue admits it — so placer names it in
``skipped`` (printed to stderr) instead of inventing pod names. Jobs from other formats (OJS, Flux, SSS)
have no pods at all. A pod gated by placer's own scheduling gate (:data:`GATE`) gets no Binding (a gated
pod cannot be bound): the note gives the ``kubectl patch`` that pins it to the node and lifts the gate
(:func:`gate_patch`); a pod held by other gates is not placed (``SCHEDULING_GATED``) and gets nothing.

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

import json
import shlex
from collections.abc import Iterable
from typing import Any

from placer.solver.decision import Decision
from placer.solver.jobs.formats.kubernetes_pods import PLACER_GATE
from placer.solver.jobs.model import Job
from placer.topology.importers._common import child_list, child_map

__all__ = ["GATE", "bindings", "gate_patch"]


#: The scheduling gate placer lifts (a pod created with it waits for placer: ``spec.schedulingGates:
#: [{name: placer.io/place}]``). Other gates are left to whoever owns them: a pod that has one is not placed
#: at all (``SCHEDULING_GATED``, :func:`placer.solver.jobs.formats.kubernetes_pods.scheduling_gates`).
GATE = PLACER_GATE


def gate_patch(pod: dict[str, Any], node: str) -> list[dict[str, Any]] | None:
    """The JSON Patch (RFC 6902) that pins a pod gated by :data:`GATE` to ``node`` and lifts the gate,
    for ``kubectl patch --type=json``; None when the pod does not carry the gate.

    Why a patch and not a Binding: a pod with scheduling gates cannot be bound until they are gone, and
    Kubernetes lets a gated pod's ``nodeSelector`` gain entries (1.27+, "mutable scheduling directives").
    Adding ``kubernetes.io/hostname`` and lifting the gate in one patch leaves kube-scheduler one node to
    choose; the ``test`` op makes the patch fail rather than lift another gate if the list changed.

    >>> pod = {"spec": {"nodeSelector": {"pool": "a3"}, "schedulingGates": [{"name": "x"}, {"name": GATE}]}}
    >>> [op["op"] + " " + op["path"] for op in gate_patch(pod, "gpu-1")]
    ['test /spec/schedulingGates/1/name', 'add /spec/nodeSelector', 'remove /spec/schedulingGates/1']
    >>> gate_patch(pod, "gpu-1")[1]["value"]
    {'pool': 'a3', 'kubernetes.io/hostname': 'gpu-1'}
    """
    spec = child_map(pod, "spec")
    gates = child_list(spec, "schedulingGates")
    index = next((i for i, g in enumerate(gates) if isinstance(g, dict) and g.get("name") == GATE), None)
    if index is None:
        return None
    selector = dict(spec.get("nodeSelector") or {})
    selector["kubernetes.io/hostname"] = node
    return [
        {"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": GATE},
        {"op": "add", "path": "/spec/nodeSelector", "value": selector},
        {"op": "remove", "path": f"/spec/schedulingGates/{index}"},
    ]


def bindings(decision: Decision, jobs: Iterable[Job]) -> tuple[dict[str, Any], list[str]]:
    """``(List of Bindings, notes)`` for ``decision`` (module docstring): a note names each placed job
    that gets no Binding, and for a pod gated by :data:`GATE` gives the ``kubectl patch`` command that
    pins it and lifts the gate instead."""
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
        pod = job.envelope if isinstance(job.envelope, dict) else {}
        gates = (pod.get("spec") or {}).get("schedulingGates") if isinstance(pod.get("spec"), dict) else None
        if gates:
            patch = gate_patch(pod, replica.node)
            if patch is None:
                skipped.append(
                    f"{p.job}: placed on {replica.node}, but gated by others' scheduling gates (not {GATE}); "
                    "no Binding until they are lifted"
                )
            else:
                command = shlex.join(
                    ["kubectl", "patch", "pod", name, "-n", namespace, "--type=json", "-p", json.dumps(patch)]
                )
                skipped.append(f"{p.job}: gated; pin it and lift {GATE} with: {command}")
            continue
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": replica.node},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}, skipped
