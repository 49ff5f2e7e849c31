"""Symmetry classes: nodes that are interchangeable for every unit of the batch, with a count.

Why: the model's size must follow the number of distinct situations, not the number of nodes. Two nodes
are in one class when they are in the same static group (same facts and same values of every label key
the batch mentions), have the same free amounts, the same emptiness, the same values of every gang scope
the batch uses (rack, block, zone, NVLink domain), the same answer to every job's anti-affinity, and the
same price for any replica (price per hour, GPU count, cores), and — when the batch has Flux shapes
(sockets...) — the same inner tree with the same GPUs free. Then any unit that may use one may use the
other, a packing that fits one fits the other, and costs the same there.

Free amounts are compared exactly. When that gives more than :data:`MAX_CLASSES` classes (busy clusters
with diverse usage), CPU and memory are rounded down to ``policy.cpu_quantum`` / ``memory_quantum_gb``
(doubled until the classes are few) and a class's capacity is its smallest member's: still valid,
slightly conservative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from placer.solver.candidates import NodeArrays
from placer.solver.policy import Policy
from placer.solver.snapshot import scope_value
from placer.solver.structure import InnerTree

__all__ = ["MAX_CLASSES", "NodeClass", "build_classes"]

#: Beyond this many classes, free CPU/memory are rounded down (doubling the quantum, up to 64 cores) to
#: merge them: a target, not a cap (classes that differ in GPUs, labels or scopes stay apart).
MAX_CLASSES = 250


@dataclass
class NodeClass:
    """Interchangeable nodes: ``members`` (node indices, ascending) and the capacity of each."""

    idx: int
    members: list[int]
    gpus: int
    cpu: float
    mem: float
    storage: float
    shm: float
    milli: tuple[int, ...]  # free share per GPU that is partly used (sorted), for fractional packing
    cap_gpus: int
    scopes: dict[str, str | None]
    #: Free amount of each extended resource the batch asks for (equal on every member).
    extra: dict[str, float] = field(default_factory=dict)
    #: The members' inner tree and whole free GPUs, when the batch has Flux shapes to match on it.
    tree: InnerTree | None = None
    free_gpus: tuple[int, ...] = ()
    #: Whether a multiset of shaped item types fits the tree together (see ``patterns.shape_fits``).
    shape_memo: dict[tuple[tuple[int, int], ...], bool] = field(default_factory=dict, repr=False)
    #: Set when first-fit decreasing refused GPU shares that do fit these GPUs some other way (see
    #: ``patterns.fits``): the class's patterns then miss a packing, and the model is not exact.
    shares_missed: bool = field(default=False, repr=False)

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def rep(self) -> int:
        return self.members[0]


def build_classes(
    arrays: NodeArrays,
    relevant: np.ndarray,
    scopes: list[str],
    anti_masks: list[np.ndarray],
    policy: Policy,
    tick: Callable[[], None] = lambda: None,
    price_codes: np.ndarray | None = None,
    shape_codes: np.ndarray | None = None,
    pref_codes: np.ndarray | None = None,
    extra: tuple[str, ...] = (),
    flavor_codes: np.ndarray | None = None,
) -> tuple[list[NodeClass], np.ndarray, bool]:
    """Partition the ``relevant`` nodes into classes; returns the classes, a node -> class index map
    (-1 for nodes outside every class), and whether free amounts were compared exactly. ``price_codes``
    (per node, equal for equally priced nodes) keeps nodes of different prices apart; ``shape_codes``
    (equal for the same inner tree with the same GPUs free) nodes whose sockets differ, and gives each
    class its tree; ``pref_codes`` (equal where every unit of the batch has the same preference score)
    nodes the preference level tells apart — a node with the job's model loaded never merges with one
    without it, so the model scores what greedy scores. ``extra``: the extended resources the batch asks
    for; nodes with different free amounts of one never merge. ``flavor_codes`` (equal where every queue
    of the batch with per-flavor GPU quotas counts the node under the same flavor) keeps flavors apart."""
    snap = arrays.snap
    nodes = np.flatnonzero(relevant)
    partial = {int(n): _partial_shares(arrays, int(n)) for n in nodes}
    extra_free = [arrays.extra_free(name) for name in extra]

    def key(n: int, q_cpu: float, q_mem: float) -> tuple[object, ...]:
        cpu, mem = float(arrays.cpu[n]), float(arrays.mem[n])
        if q_cpu:
            cpu = float(np.floor(cpu / q_cpu))
            mem = float(np.floor(mem / q_mem))
        return (
            int(arrays.group[n]),
            int(arrays.gpus[n]),
            partial[n],
            cpu,
            mem,
            float(arrays.storage[n]),
            float(arrays.shm[n]),
            bool(arrays.empty[n]),
            tuple(scope_value(snap, n, s) for s in scopes),
            tuple(bool(m[n]) for m in anti_masks),
            -1 if price_codes is None else int(price_codes[n]),
            -1 if shape_codes is None else int(shape_codes[n]),
            -1 if pref_codes is None else int(pref_codes[n]),
            -1 if flavor_codes is None else int(flavor_codes[n]),
            # Extended resources (a Kubernetes node's free pod slots differ with every pod) merge in
            # buckets that double as CPU's quantum does; a class holds the least of its members.
            tuple(
                float(np.floor(f[n] / (q_cpu / policy.cpu_quantum))) if q_cpu else float(f[n])
                for f in extra_free
            )
            if extra_free
            else (),
        )

    q_cpu, q_mem = 0.0, 0.0
    while True:
        groups: dict[tuple[object, ...], list[int]] = {}
        for k, n in enumerate(nodes):
            if k % 1024 == 0:
                tick()
            groups.setdefault(key(int(n), q_cpu, q_mem), []).append(int(n))
        if len(groups) <= MAX_CLASSES or q_cpu >= 64:
            break
        q_cpu = q_cpu * 2 if q_cpu else policy.cpu_quantum
        q_mem = q_mem * 2 if q_mem else policy.memory_quantum_gb
    of = np.full(len(snap.nodes), -1, dtype=np.int64)
    classes: list[NodeClass] = []
    for members in sorted(groups.values(), key=lambda m: m[0]):
        idx = len(classes)
        m = np.asarray(members)
        of[m] = idx
        classes.append(
            NodeClass(
                idx=idx,
                members=members,
                gpus=int(arrays.gpus[m].min()),
                cpu=float(arrays.cpu[m].min()),
                mem=float(arrays.mem[m].min()),
                storage=float(arrays.storage[m].min()),
                shm=float(arrays.shm[m].min()),
                milli=partial[members[0]],
                cap_gpus=int(arrays.cap_gpus[members[0]]),
                scopes={s: scope_value(snap, members[0], s) for s in scopes},
                extra={name: float(f[m].min()) for name, f in zip(extra, extra_free, strict=True)},
                tree=None if shape_codes is None or shape_codes[members[0]] < 0 else snap.tree(members[0]),
                free_gpus=snap.nodes[members[0]].free_gpus,
            )
        )
    return classes, of, q_cpu == 0


def _partial_shares(arrays: NodeArrays, n: int) -> tuple[int, ...]:
    """Free milli of each partly used GPU (whole free GPUs are counted in ``gpus``), sorted."""
    v = arrays.snap.nodes[n]
    return tuple(sorted(m for m in v.milli_free if 0 < m < 1000))
