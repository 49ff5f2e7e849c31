"""What a node advertises of a resource placer does not count itself: a Flux resource type beyond cores,
GPUs, memory and storage (``ib10g``, ``ssd``), an SSS consumable (``Resource name="License"``,
``Swap``, ``Network``).

Why: a job may ask for such a resource per task, and a node that has none of it cannot run the task. A
Flux resource graph describes it as vertices of that type inside the node (their sizes summed); any
other source as a numeric node label, ``resource.<name>`` (``:`` as ``.``: ``resource.License.MATLAB``,
the key SSS node properties test) or, for SSS ``Swap`` and ``Network``, ``swap_gb`` and ``network``.
What a node advertises is compared with one replica's amount; it is not counted down by the jobs placed
there (``docs/placement-rules.md``).

>>> from placer.topology import InnerVertex, NodeSpec, cluster_of
>>> from placer.topology.inventory import Inventory
>>> ib = NodeSpec(name="a", cpu_cores=8, inner=[InnerVertex(type="ib10g", size=2)])
>>> lic = NodeSpec(name="b", cpu_cores=8, labels={"resource.License.MATLAB": "4"})
>>> a, b = cluster_of(Inventory(nodes=[ib, lic])).nodes
>>> advertised(a, "ib10g"), advertised(b, "ib10g"), advertised(b, "License:MATLAB")
(2.0, 0.0, 4.0)
"""

from __future__ import annotations

from collections.abc import Iterable

from placer.topology.inventory import InnerVertex
from placer.topology.model import Node

__all__ = ["LABELS", "advertised", "label_key"]

#: Resources whose node label is not ``resource.<name>``: SSS ``Swap`` and ``Network`` (the keys SSS node
#: properties test).
LABELS = {"swap_gb": "swap_gb", "network": "network"}


def label_key(resource: str) -> str:
    """The node label that advertises ``resource``.

    >>> label_key("License:MATLAB"), label_key("ib10g"), label_key("swap_gb")
    ('resource.License.MATLAB', 'resource.ib10g', 'swap_gb')
    """
    return LABELS.get(resource) or "resource." + resource.replace(":", ".")


def advertised(node: Node, resource: str) -> float:
    """How much of ``resource`` ``node`` has: the sizes of its inner vertices of that type, else its label
    (:func:`label_key`) read as a number, else 0."""
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
