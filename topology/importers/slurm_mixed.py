"""A Slurm node with several GPU types, as one placer node per type (its *parts*).

Why parts: a placer node holds one GPU type (the engines, the checker and every constraint on
``gpu_type`` read it so), and a Slurm node may list several (``Gres=gpu:a100:2,gpu:t4:2``). Such a node
becomes one node per GPU type, named ``<node>:<type>`` (``gpu05:a100``, ``gpu05:t4``; ``gpu`` for GPUs
listed without a type), each with its GPUs and a share of the node's cores, memory and disk:

* **Shares in proportion to the GPUs** — cores by largest remainders, so they add up to the node's;
  memory and disk exactly. Conservative: placer never puts more on the Slurm node than it has, but a job
  that needs more than one part's cores next to that part's GPUs is not placed there although Slurm
  might place it (``docs/slurm.md``).
* **What runs there is split the same way.** A job's (or the node's anonymous allocation's) GPUs go to the
  part that has them, by Slurm's GPU index: a node's GPUs are numbered in the order its ``Gres`` lists
  them, so ``gpu:a100:2,gpu:t4:2`` has a100 0-1 and t4 2-3, which are the parts' 0-1. Its cores and
  memory are spread over the parts in proportion to the parts' shares, so every part's running work stays
  within the part whatever the jobs are (their sum is within the node's).
* **Labels tie a part to its node:** ``slurm_node`` (the Slurm node), ``slurm_gres_type`` (the type as
  Slurm names it, what ``--output slurm`` asks for), ``slurm_gpus`` (the node's GPU indices the part's
  0, 1, ... stand for). A part's ``hostname`` label is its node's, so a job's ``-w``/``-x`` hostlists
  (and anti-affinity by host) see the parts as the one host; ``topology.conf`` places them in its node's
  switch or block.

>>> p = parts_of("gpu05", [("a100", 2), ("t4", 2)], cores=16, memory_gb=64.0, storage_gb=0.0)
>>> [(x.name, x.cores, x.memory_gb, x.gpus) for x in p]
[('gpu05:a100', 8, 32.0, (0, 1)), ('gpu05:t4', 8, 32.0, (2, 3))]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from placer.topology.labels import HOST_LABEL

__all__ = [
    "GPUS_LABEL",
    "NODE_LABEL",
    "TYPE_LABEL",
    "NodeFacts",
    "Part",
    "largest_remainders",
    "part_name",
    "parts_in",
    "parts_of",
    "slurm_node_of",
    "split_replica",
]

#: Labels of a part: its Slurm node (the topology's host label: the part's ``hostname`` is the node's), its
#: GPU type as Slurm names it, the node's GPU indices it holds.
NODE_LABEL = HOST_LABEL
TYPE_LABEL = "slurm_gres_type"
GPUS_LABEL = "slurm_gpus"
#: The name of GPUs a ``Gres`` lists without a type (``gpu:2``), in a part's name.
UNTYPED = "gpu"


@dataclass(frozen=True)
class Part:
    """One GPU type's share of a Slurm node."""

    name: str
    node: str
    gres_type: str
    cores: int
    memory_gb: float
    storage_gb: float
    #: The node's GPU indices (Slurm's) the part's 0, 1, ... stand for.
    gpus: tuple[int, ...]
    #: The part's share of the node's cores (of its GPUs when the node counts no cores) and of its memory
    #: (of its GPUs): what it takes of every replica's cores and memory on the node.
    cpu_share: float
    mem_share: float

    @property
    def labels(self) -> dict[str, str]:
        return {
            NODE_LABEL: self.node,
            TYPE_LABEL: self.gres_type,
            GPUS_LABEL: ",".join(map(str, self.gpus)),
        }


def part_name(node: str, gres_type: str | None) -> str:
    """``gpu05:a100``; ``gpu05:gpu`` for GPUs listed without a type."""
    return f"{node}:{gres_type or UNTYPED}"


def largest_remainders(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``weights``, in whole units that add up to ``total`` (the largest
    remainders get the units left; ties to the first).

    >>> largest_remainders(10, [1, 1, 1]), largest_remainders(16, [4, 2]), largest_remainders(0, [2, 2])
    ([4, 3, 3], [11, 5], [0, 0])
    """
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    out = [math.floor(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def parts_of(
    node: str, types: Sequence[tuple[str | None, int]], *, cores: int, memory_gb: float, storage_gb: float
) -> list[Part]:
    """The parts of ``node`` whose ``Gres`` lists ``types`` (``(type, count)`` in its order; a type listed
    twice is one part holding both runs of indices)."""
    counts: dict[str | None, list[int]] = {}
    index = 0
    for typ, count in types:
        counts.setdefault(typ, []).extend(range(index, index + count))
        index += count
    gpus = [len(v) for v in counts.values()]
    split = largest_remainders(cores, gpus)
    total = sum(gpus)
    out = []
    for (typ, idx), c, g in zip(counts.items(), split, gpus, strict=True):
        part = Part(
            name=part_name(node, typ),
            node=node,
            gres_type=typ or UNTYPED,
            cores=c,
            memory_gb=memory_gb * g / total,
            storage_gb=storage_gb * g / total,
            gpus=tuple(idx),
            cpu_share=(c / cores) if cores else g / total,
            mem_share=g / total,
        )
        out.append(part)
    return out


class NodeFacts(Protocol):
    """What :func:`parts_in` reads of a node (a cluster's nodes have it)."""

    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def cpu_cores(self) -> float: ...
    @property
    def memory_gb(self) -> float: ...


def parts_in(nodes: Iterable[NodeFacts]) -> dict[str, list[Part]]:
    """The parts among a cluster's nodes, by Slurm node (nodes that are not parts left out): what a running
    job's replica on a Slurm node is split over, and what ``--output slurm`` pins a job's GPU type to."""
    by: dict[str, list[NodeFacts]] = {}
    for n in nodes:
        if NODE_LABEL in n.labels and GPUS_LABEL in n.labels:
            by.setdefault(n.labels[NODE_LABEL], []).append(n)
    out: dict[str, list[Part]] = {}
    for node, members in by.items():
        cores = sum(m.cpu_cores for m in members)
        memory = sum(m.memory_gb for m in members)
        gpus = [tuple(int(i) for i in m.labels[GPUS_LABEL].split(",") if i) for m in members]
        total = sum(len(g) for g in gpus) or 1
        out[node] = [
            Part(
                name=m.name,
                node=node,
                gres_type=m.labels.get(TYPE_LABEL, UNTYPED),
                cores=int(m.cpu_cores),
                memory_gb=m.memory_gb,
                storage_gb=0.0,
                gpus=g,
                cpu_share=m.cpu_cores / cores if cores else len(g) / total,
                mem_share=m.memory_gb / memory if memory else len(g) / total,
            )
            for m, g in zip(members, gpus, strict=True)
        ]
    return out


def slurm_node_of(labels: Mapping[str, str], name: str) -> str:
    """The Slurm node a placer node stands for: its ``slurm_node`` label (a part), else its name."""
    return labels.get(NODE_LABEL, name)


def split_replica(
    gpus: Sequence[int], cpu_cores: float, memory_gb: float, parts: Sequence[Part]
) -> list[tuple[str, list[int], float, float]] | int:
    """One replica on a Slurm node, as replicas on its ``parts``: ``(part, the part's GPU indices, cores,
    memory)`` for each part, its GPUs by Slurm's index and its cores and memory by the parts' shares (see
    the module docstring); parts left with nothing are left out. A GPU index no part holds is returned
    instead (the caller names it).

    >>> p = parts_of("n", [("a100", 2), ("t4", 2)], cores=8, memory_gb=16.0, storage_gb=0.0)
    >>> split_replica([1, 2], 4.0, 8.0, p)
    [('n:a100', [1], 2.0, 4.0), ('n:t4', [0], 2.0, 4.0)]
    >>> split_replica([7], 1.0, 1.0, p)
    7
    """
    where = {g: (part.name, k) for part in parts for k, g in enumerate(part.gpus)}
    for g in gpus:
        if g not in where:
            return g
    out = []
    for part in parts:
        mine = sorted(where[g][1] for g in gpus if where[g][0] == part.name)
        cores, memory = cpu_cores * part.cpu_share, memory_gb * part.mem_share
        if mine or cores > 1e-9 or memory > 1e-9:
            out.append((part.name, mine, cores, memory))
    return out
