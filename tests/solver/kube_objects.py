"""Kubernetes objects as ``kubectl get ... -o json`` writes them, for the tests that read them.

>>> p = pod("w0", {"requests": {"cpu": "1"}}, node="n1", priority=5)
>>> p["spec"]["nodeName"], p["spec"]["priority"], p["status"]["phase"]
('n1', 5, 'Running')
"""

from __future__ import annotations

from typing import Any

__all__ = ["kueue_queue", "pod"]


def pod(
    name: str,
    resources: dict[str, Any],
    *,
    node: str | None = None,
    namespace: str = "ml",
    image: str = "nvcr.io/nvidia/pytorch:24.05-py3",
    **spec: Any,
) -> dict[str, Any]:
    """A pod of one container asking ``resources`` (its ``requests``/``limits``), with further ``spec``
    fields (``priority``, ``priorityClassName``...); bound to ``node`` and Running when given, else
    Pending."""
    body: dict[str, Any] = {"containers": [{"name": "c", "image": image, "resources": resources}], **spec}
    if node is not None:
        body["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
        "status": {"phase": "Running" if node else "Pending"},
    }


def kueue_queue(
    spec: dict[str, Any], *, local: tuple[str, str] = ("team", "lq"), flavors: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What ``kubectl get clusterqueues,localqueues,resourceflavors -A -o json`` prints for one ClusterQueue
    ``cq`` of ``spec``, its LocalQueue ``local`` (namespace, name), and ResourceFlavors ``flavors`` (name
    -> spec).

    >>> [i["kind"] for i in kueue_queue({}, flavors={"h100": {}})["items"]]
    ['ResourceFlavor', 'ClusterQueue', 'LocalQueue']
    """
    kueue = "kueue.x-k8s.io/v1beta1"
    items: list[dict[str, Any]] = [
        {"apiVersion": kueue, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": fspec}
        for name, fspec in (flavors or {}).items()
    ]
    items.append({"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})
    items.append(
        {
            "apiVersion": kueue,
            "kind": "LocalQueue",
            "metadata": {"namespace": local[0], "name": local[1]},
            "spec": {"clusterQueue": "cq"},
        }
    )
    return {"apiVersion": "v1", "kind": "List", "items": items}
