"""Matching a Flux resource request against a node's inner containment tree (RFC 14).

Why: a Flux jobspec can ask for shape, not just amounts — "one slot of 2 sockets with 4 cores each" — and
a node with 8 cores on one socket has the amounts but not the shape. Nodes described with their inner tree
(Flux JGF, Slurm sockets) are checked here; nodes without one are judged by their totals (the candidates'
capacity checks), as nothing more is known.

Semantics: each request vertex needs ``count.min`` distinct vertices of its type among the nearest
descendants of the current level (levels in between, such as NUMA domains, are looked through), each of
them able to hold the request's own ``with`` children; a leaf request counts pooled amounts (a core vertex
of size 16 is 16 cores). ``slot`` and ``node`` request vertices stand for the replica and its node, so
their children are matched against the node's tree itself. A resource type the tree does not describe
at all is left to the totals.

>>> from solver.jobs.model import CountRange, FluxResource
>>> from topology import InnerVertex
>>> socket = lambda n: InnerVertex(type="socket", children=[InnerVertex(type="core") for _ in range(n)])
>>> two_by_four = [FluxResource(type="socket", count=CountRange(min=2), with_=[
...     FluxResource(type="core", count=CountRange(min=4))])]
>>> fits_structure([socket(4), socket(4)], two_by_four), fits_structure([socket(8)], two_by_four)
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence

from solver.jobs.model import FluxResource
from topology import InnerVertex

#: Request vertex types that stand for the replica or its node rather than for parts of it.
TRANSPARENT = frozenset({"slot", "node"})


def _nearest(vertices: Sequence[InnerVertex], kind: str) -> list[InnerVertex]:
    out: list[InnerVertex] = []
    stack = list(vertices)
    while stack:
        v = stack.pop()
        if v.type == kind:
            out.append(v)
        else:
            stack.extend(v.children)
    return out


def _describes(vertices: Sequence[InnerVertex], kind: str) -> bool:
    stack = list(vertices)
    while stack:
        v = stack.pop()
        if v.type == kind:
            return True
        stack.extend(v.children)
    return False


def fits_structure(inner: Sequence[InnerVertex], request: Sequence[FluxResource]) -> bool:
    """Whether a node whose inner tree is ``inner`` can hold one replica asking for ``request``."""
    if not inner:
        return True
    for r in request:
        if r.type in TRANSPARENT:
            if not fits_structure(inner, r.with_):
                return False
            continue
        if not _describes(inner, r.type):
            continue
        found = _nearest(inner, r.type)
        if r.with_:
            usable = sum(1 for v in found if fits_structure(v.children, r.with_))
        else:
            usable = sum(v.size for v in found)
        if usable < r.count.min:
            return False
    return True
