"""What a node has of a resource beyond cores, GPUs, memory, storage and shm: a Kubernetes extended
resource (``vpc.amazonaws.com/efa``, ``rdma/hca``, a MIG slice ``nvidia.com/mig-1g.10gb``, ``hugepages-2Mi``
in bytes), a Flux resource type (``ib10g``, ``ssd``), an SSS consumable (``Resource name="License"``,
``Swap``, ``Network``).

Why: a job may ask for such a resource per replica, and a node runs only as many such replicas as it has
of it. A Kubernetes node says it in ``status.allocatable`` (``NodeSpec.extra``); a Flux resource graph as
vertices of that type inside the node (their sizes summed); any other source as a numeric node label,
``resource.<name>`` (``:`` as ``.``: ``resource.License.MATLAB``, the key SSS node properties test) or, for
SSS ``Swap`` and ``Network``, ``swap_gb`` and ``network``. The replicas on a node count it down, as
kube-scheduler counts extended resources and Flux allocates the vertices (``docs/placement-rules.md``,
rule 21).

>>> from placer.topology import InnerVertex, NodeSpec, cluster_of
>>> from placer.topology.inventory import Inventory
>>> ib = NodeSpec(name="a", cpu_cores=8, inner=[InnerVertex(type="ib10g", size=2)])
>>> lic = NodeSpec(name="b", cpu_cores=8, labels={"resource.License.MATLAB": "4"})
>>> efa = NodeSpec(name="c", cpu_cores=8, extra={"vpc.amazonaws.com/efa": 32})
>>> a, b, c = cluster_of(Inventory(nodes=[ib, lic, efa])).nodes
>>> advertised(a, "ib10g"), advertised(b, "ib10g"), advertised(b, "License:MATLAB")
(2.0, 0.0, 4.0)
>>> advertised(c, "vpc.amazonaws.com/efa")
32.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from placer.topology.inventory import InnerVertex
from placer.topology.model import Node

__all__ = [
    "LABELS",
    "OWN_FIELDS",
    "POD_SLOTS",
    "UNLIMITED_UNLESS_STATED",
    "advertised",
    "is_kubernetes_extra",
    "label_key",
]

#: Resources whose node label is not ``resource.<name>``: SSS ``Swap`` and ``Network`` (the keys SSS node
#: properties test).
LABELS = {"swap_gb": "swap_gb", "network": "network"}


#: A Kubernetes node's ``pods``: the most pods its kubelet runs (``status.allocatable.pods``, 110 by
#: default, fewer on EKS where the network interfaces set it). Every pod takes one, as kube-scheduler's
#: ``NodeResourcesFit`` counts them.
POD_SLOTS = "pods"

#: Resources a node has without limit unless its inventory entry states an amount: only a Kubernetes
#: node says how many pods it runs, and a node from any other source is not limited by it.
UNLIMITED_UNLESS_STATED = frozenset({POD_SLOTS})

#: Kubernetes resources placer holds in fields of their own, never in ``extra`` (``pods`` is the node's
#: pod slots, :data:`POD_SLOTS`, which a pod never asks for in its containers).
OWN_FIELDS = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "storage",
        "pods",
        "nvidia.com/gpu",
        "amd.com/gpu",
        "google.com/tpu",
    }
)


def is_kubernetes_extra(name: str) -> bool:
    """Whether a Kubernetes resource name is counted in ``extra``: an extended resource (a
    domain-qualified name outside ``kubernetes.io``, as kube-scheduler's ``IsExtendedResourceName`` says)
    other than GPUs and TPU chips, or ``hugepages-<size>`` (in bytes).

    >>> [is_kubernetes_extra(n) for n in ("vpc.amazonaws.com/efa", "nvidia.com/mig-1g.10gb", "hugepages-2Mi")]
    [True, True, True]
    >>> [is_kubernetes_extra(n) for n in ("cpu", "nvidia.com/gpu", "pods", "attachable-volumes-aws-ebs")]
    [False, False, False, False]
    """
    if name in OWN_FIELDS:
        return False
    if name.startswith("hugepages-"):
        return True
    domain, slash, rest = name.partition("/")
    if not slash or not domain or not rest or name.startswith("requests."):
        return False
    return domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def label_key(resource: str) -> str:
    """The node label that advertises ``resource``.

    >>> label_key("License:MATLAB"), label_key("ib10g"), label_key("swap_gb")
    ('resource.License.MATLAB', 'resource.ib10g', 'swap_gb')
    """
    return LABELS.get(resource) or "resource." + resource.replace(":", ".")


def advertised(node: Node, resource: str) -> float:
    """How much of ``resource`` ``node`` has in all: its ``extra`` amount, else (for ``pods``) no limit,
    else the sizes of its inner vertices of that type, else its label (:func:`label_key`) read as a
    number, else 0."""
    amount = node.spec.extra.get(resource)
    if amount is not None:
        return float(amount)
    if resource in UNLIMITED_UNLESS_STATED:
        return math.inf
    found = _sizes(node.spec.inner, resource)
    if found is not None:
        return found
    try:
        return max(0.0, float(node.labels.get(label_key(resource), "0")))
    except ValueError:
        return 0.0


def _sizes(inner: Iterable[InnerVertex], kind: str) -> float | None:
    total: float | None = None
    stack = list(inner)
    while stack:
        v = stack.pop()
        if v.type == kind:
            total = (total or 0.0) + v.size
        stack.extend(v.children)
    return total
