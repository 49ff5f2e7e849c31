"""Kubernetes objects as ``kubectl get ... -o json`` writes them, for the tests that read them.

>>> p = pod("w0", {"requests": {"cpu": "1"}}, node="n1", priority=5)
>>> p["spec"]["nodeName"], p["spec"]["priority"], p["status"]["phase"]
('n1', 5, 'Running')
"""

from __future__ import annotations

from typing import Any

__all__ = ["pod"]


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
