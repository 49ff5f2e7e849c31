"""Phase 3: hard constraints — where each unit could ever run, where it fits now, and why not elsewhere.

Why this shape: a 10,000-node cluster is a few node *shapes* with different labels and free amounts. Static
constraints (accelerator, GPU type, VRAM, compute capability, taints, availability, node selector, required
affinity, spot) depend only on a node's static facts and the label keys the batch mentions, so they are
evaluated once per **static group** of nodes and cached per distinct constraint set. Fit ("is there room
now") is a comparison of numbers, done with numpy over all nodes at once. Both record *which* constraint
removed how many nodes, so a pending job's explanation comes from the same place as the decision.

The elimination order (the first failing check is blamed) is :data:`STATIC_CHECKS`, then
:data:`DYNAMIC_CHECKS`.

>>> from placer.topology import cluster_of, dgx_h100, pcie_inference
>>> from placer.solver.jobs.model import Job, TaskGroup, GpuDemand
>>> from placer.solver.demand import expand
>>> snap = Snapshot.of(cluster_of(dgx_h100(2), pcie_inference(3, gpu="nvidia-l4", gpus_per_node=4)))
>>> arrays = NodeArrays.of(snap, keys=set())
>>> job = Job(id="j", tasks=[TaskGroup(gpu=GpuDemand(count=8, types=["nvidia-h100"]))])
>>> unit = expand(job, 0, max_node_gpus=8).units[0]
>>> c = unit_candidates(unit, arrays, nvlink=True, spot_ok=True)
>>> int(c.now.sum()), c.eliminated
(2, {'gpu_type': 3})
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

import numpy as np
from numba import njit

from placer.solver.demand import Need, Unit, tolerated
from placer.solver.jobs.flavors import FLAVOR_LEVEL, level_flavor, level_flavors
from placer.solver.jobs.model import AffinityOperator, FluxResource, LabelRule, Rule
from placer.solver.rules import all_hold, holds, rule_keys, running_label
from placer.solver.snapshot import HARD_TAINT_EFFECTS, SCOPE_ATTRS, NodeView, Snapshot, scope_value
from placer.solver.structure import TRANSPARENT, compile_shape, fits_empty, match, request_text, shaped
from placer.topology import TpuPod, canonical_gpu_type
from placer.topology.extended import advertised
from placer.topology.inventory import LoadedModel

__all__ = [
    "DYNAMIC_CHECKS",
    "MAX_STATIC_ANSWERS",
    "STATIC_CHECKS",
    "Answers",
    "Clock",
    "FreeAmounts",
    "NodeArrays",
    "UnitCandidates",
    "anti_affinity_mask",
    "batch_keys",
    "mark_running",
    "pod_admits",
    "same_domain",
    "unit_candidates",
    "version_available",
]

#: Static checks in the order they are blamed, with the words a user reads.
STATIC_CHECKS: dict[str, str] = {
    "unavailable": "node is cordoned or not ready",
    "taint": "node has a NoSchedule/NoExecute taint the job does not tolerate",
    "accelerator": "node has no GPU",
    "gpu_type": "GPU type not among those requested",
    "gpu_memory": "GPU memory below the requested minimum",
    "compute_capability": "GPU compute capability below the requested minimum",
    "nvlink": "GPUs not on NVLink (PCIe-only node)",
    "spot": "spot capacity, and the job asks for on-demand only",
    "rules": "node selector or required affinity not satisfied",
    "structure": "the node's sockets/cores cannot hold the Flux request's shape",
    "extended": "the node advertises less of an extended resource the job asks for (a Flux resource type, "
    "an SSS Resource) than one replica needs",
    "model_version": "the node has the job's model loaded at another version only (OJS ML §4)",
    "too_small": "node too small for one replica even when empty",
}
#: Checks against the current state, blamed after the static ones.
DYNAMIC_CHECKS: dict[str, str] = {
    "exclusive": "job needs whole nodes and something already runs there",
    "anti_affinity": "anti-affinity with a running job there (the job's rules or the running job's; for "
    "a running job's term on a zone or rack, anywhere in it)",
    "pod_affinity": "required pod affinity: no running job it must join in the node's domain (or, first "
    "of its group, the node lacks a key of its terms)",
    "busy": "not enough free capacity now",
    "sockets": "the node's sockets, with what runs there now, cannot hold the Flux request's shape",
}


def _cc(text: str | None) -> tuple[int, int]:
    if not text:
        return (0, 0)
    major, _, minor = text.partition(".")
    return (int(major), int(minor or 0))


class FreeAmounts(TypedDict):
    """The free amounts that placing work changes, per node (:meth:`NodeArrays.free_copies`)."""

    gpus: np.ndarray
    milli: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    storage: np.ndarray
    shm: np.ndarray
    empty: np.ndarray


@dataclass
class NodeArrays:
    """Node facts and free amounts as numpy arrays indexed like ``Snapshot.nodes``."""

    snap: Snapshot
    gpus: np.ndarray  # whole free GPUs
    milli: np.ndarray  # largest free share on one GPU (1000 when a whole GPU is free)
    cpu: np.ndarray
    mem: np.ndarray
    storage: np.ndarray
    shm: np.ndarray
    cap_gpus: np.ndarray
    cap_cpu: np.ndarray
    cap_mem: np.ndarray
    cap_storage: np.ndarray
    cap_shm: np.ndarray
    empty: np.ndarray
    #: Free milli of each node's partly used GPUs, in GPUs (whole free GPUs are ``gpus``).
    partial: np.ndarray
    #: Schedulable and ready (static).
    usable: np.ndarray
    group: np.ndarray  # static group id per node
    group_members: list[np.ndarray]  # node indices per static group
    keys: frozenset[str]
    #: Per node, a stamp of its free state: unique over every state of the arrays refreshed from one
    #: another (``clock`` is shared by them), so an answer computed for a node at one stamp is valid exactly
    #: while the node has that stamp, in this call or a later one (FGD's measure is cached that way).
    stamp: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    clock: Clock = field(default_factory=lambda: Clock(), repr=False)
    _static_cache: Answers = field(default_factory=lambda: Answers(), repr=False)

    @staticmethod
    def of(snap: Snapshot, keys: Iterable[str]) -> NodeArrays:
        """Build the arrays; ``keys`` are the label keys any rule of the batch reads."""
        keys = frozenset(keys)
        group, members = _groups(snap.nodes, sorted(keys), {})
        return NodeArrays(
            snap=snap,
            **_rows(snap.nodes),
            group=group,
            group_members=members,
            keys=keys,
            stamp=(clock := Clock()).ticks(len(snap.nodes)),
            clock=clock,
        )

    def joined(self, snap: Snapshot) -> NodeArrays:
        """These arrays for ``snap``, this one's view with nodes appended (nothing else changed: the same
        running jobs, the same nodes before them): the rows of the new nodes made and appended, the new
        nodes put in the static group of their signature (a new one after the others when none has it),
        as :meth:`of` numbers groups. Every cached answer is left behind (each is indexed by node or by
        group); the clock goes on, so a stamp stays unique over every state of these arrays."""
        n0 = len(self.gpus)
        new = snap.nodes[n0:]
        ordered = sorted(self.keys)
        known = {
            _static_signature(snap.nodes[int(m[0])], ordered): g for g, m in enumerate(self.group_members)
        }
        group, members = _groups(new, ordered, known, first=n0)
        old = {k: getattr(self, k) for k in _ROWS}
        rows = cast(Rows, {k: np.concatenate([old[k], v]) for k, v in _rows(new).items()})
        have = self.group_members
        merged = [np.concatenate([was, m]) if m.size else was for was, m in zip(have, members, strict=False)]
        merged += members[len(have) :]  # the new groups
        return NodeArrays(
            snap=snap,
            **rows,
            group=np.concatenate([self.group, group]),
            group_members=merged,
            keys=self.keys,
            stamp=np.concatenate([self.stamp, self.clock.ticks(len(new))]),
            clock=self.clock,
        )

    def left(self, snap: Snapshot, kept: np.ndarray, changed: Iterable[int]) -> NodeArrays:
        """These arrays for ``snap``, this one's view with nodes removed: ``kept`` are the old indices of
        the nodes that stay, in order, and ``changed`` the new indices of those whose free amounts changed
        (jobs released with the removed nodes). Rows of the others are kept, static groups renumbered in
        order of first appearance as :meth:`of` numbers them (a group left empty goes). Every cached
        answer is left behind (each is indexed by node or by group); the stamps go on, the changed
        nodes' fresh."""
        kept_rows = {k: getattr(self, k)[kept] for k in _ROWS}
        idx = np.fromiter(changed, dtype=np.int64)
        if idx.size:
            for k, v in _rows([snap.nodes[i] for i in idx.tolist()]).items():
                kept_rows[k][idx] = v
        rows = cast(Rows, kept_rows)
        old = self.group[kept]
        present, first = np.unique(old, return_index=True)
        order = present[np.argsort(first)]
        renumber = np.full(len(self.group_members), -1, dtype=np.int64)
        renumber[order] = np.arange(order.size)
        group = renumber[old]
        stamp = self.stamp[kept]
        stamp[idx] = self.clock.ticks(idx.size)
        return NodeArrays(
            snap=snap,
            **rows,
            group=group,
            group_members=[np.flatnonzero(group == g) for g in range(order.size)],
            keys=self.keys,
            stamp=stamp,
            clock=self.clock,
        )

    def refreshed(
        self,
        snap: Snapshot,
        changed: Iterable[int],
        *,
        rules_moved: bool = True,
        flips: bool = True,
        own: bool = False,
    ) -> NodeArrays:
        """These arrays for ``snap``, a view that differs from ``self.snap`` only in the free amounts and
        running jobs of the nodes ``changed`` (:func:`placer.solver.snapshot.updated`): the static parts
        (capacities, static groups, candidate masks, preference scores) are shared, the free amounts are
        copied and those rows written again, and every cached answer that reads free amounts or running
        jobs is dropped. Time: the changed rows plus a copy of nine arrays and the free-milli matrix (the
        static answers are one shared dict, not copied: :class:`Answers`).

        Some of the changed nodes may have gone down or come up as well (``flips``; False when the caller
        knows none did: only jobs started or ended). Static groups do not split on it, so they stand;
        ``usable`` is copied with those rows written again, and the candidate masks — the one static
        answer that reads it — are left behind (the other static answers are kept, in a dict of their
        own, so the arrays of the cluster before are not changed).

        ``rules_moved``: False when no job that started or ended on the changed nodes has anti-affinity
        (the caller knows them: :meth:`Prepared.advanced`): the table of running jobs' anti-affinity then
        stands as it is, without a look at every job on those nodes.

        ``own``: these arrays are the caller's alone and are not read again as they were (a
        :class:`~placer.solver.session.Session` moving its own state forward): they are moved forward in
        place and returned, nothing copied. Why: the copies were a third of a committed one-pod decision
        on the 1,213-node openb cluster, for a state no one reads again."""
        idx = np.fromiter(changed, dtype=np.int64)
        flipped = [i for i in idx.tolist() if snap.nodes[i].usable != self.usable[i]] if flips else []
        kept, before = self._static_cache, self.snap
        answers = kept.refreshed()
        usable = self.usable
        if flipped:
            answers = Answers({k: v for k, v in answers.static.items() if not _reads_availability(k)})
            usable = usable.copy()  # rare, and static answers may hold the array (never changed in place)
            usable[flipped] = [snap.nodes[i].usable for i in flipped]
        if own:
            out = self
            out.snap, out.usable, out._static_cache = snap, usable, answers
        else:
            out = NodeArrays(
                snap=snap,
                **self.free_copies(),
                cap_gpus=self.cap_gpus,
                cap_cpu=self.cap_cpu,
                cap_mem=self.cap_mem,
                cap_storage=self.cap_storage,
                cap_shm=self.cap_shm,
                partial=self.partial.copy(),
                usable=usable,
                group=self.group,
                group_members=self.group_members,
                keys=self.keys,
                stamp=self.stamp.copy(),
                clock=self.clock,
                _static_cache=answers,
            )
        out.stamp[idx] = self.clock.ticks(idx.size)
        for i in idx.tolist():
            v = snap.nodes[i]
            out.gpus[i] = len(v.free_gpus)
            out.milli[i] = max(v.milli_free, default=0)
            out.cpu[i], out.mem[i] = v.free_cpu, v.free_mem
            out.storage[i], out.shm[i] = v.free_storage, v.free_shm
            out.empty[i] = v.empty
            out.partial[i] = _partial(v)
        anti = kept.get("__running_anti__")
        # Whether a job with anti-affinity on a wider domain than its node runs (or ran: kept true once
        # seen, which only costs a rebuild): its rule binds nodes that did not change, so the rows of the
        # changed ones are not enough, and the table is made again when next read.
        domains = kept.get("__domain_anti__")
        if domains is None:
            domains = any(rj.anti_affinity_domains for rj in before.cluster.running_jobs())
        domains = bool(domains) or (rules_moved and _domain_rules(snap, idx))
        out._static_cache["__domain_anti__"] = domains
        if domains:
            anti = None
        if anti is not None and not rules_moved:
            out._static_cache["__running_anti__"] = anti
        elif anti is not None:  # required anti-affinity of running jobs, by node: the changed rows again
            rows = dict(anti)
            for i in idx.tolist():
                rules = tuple(r for j in snap.nodes[i].running for r in snap.running_anti(j))
                if rules:
                    rows[i] = rules
                else:
                    rows.pop(i, None)
            out._static_cache["__running_anti__"] = sorted(rows.items())
        matrix = kept.get("__milli_matrix__")
        if matrix is not None:  # free milli per GPU, moved forward by row (the fragmentation key reads it)
            matrix = matrix if own else matrix.copy()
            for i in idx.tolist():
                row = snap.nodes[i].milli_free
                matrix[i] = 0
                matrix[i, : len(row)] = row
            out._static_cache["__milli_matrix__"] = matrix
        return out

    def free_copies(self) -> FreeAmounts:
        """Copies of the free amounts that placing work changes, by name: what greedy's scratch state
        starts from, and what refreshed arrays write their changed rows into (``partial`` and ``stamp``
        aside, which greedy does not keep)."""
        return {
            "gpus": self.gpus.copy(),
            "milli": self.milli.copy(),
            "cpu": self.cpu.copy(),
            "mem": self.mem.copy(),
            "storage": self.storage.copy(),
            "shm": self.shm.copy(),
            "empty": self.empty.copy(),
        }

    def milli_matrix(self) -> np.ndarray:
        """Free milli of every GPU, ``[node, gpu]`` (0 for GPUs a node lacks); cached, and moved forward by
        :meth:`refreshed` (callers copy before changing it)."""
        hit = self._static_cache.get("__milli_matrix__")
        if hit is None:
            nodes = self.snap.nodes
            width = max(1, int(self.cap_gpus.max(initial=0)))
            hit = np.zeros((len(nodes), width), dtype=np.int64)
            for v in nodes:
                hit[v.idx, : len(v.milli_free)] = v.milli_free
            self._static_cache["__milli_matrix__"] = hit
        return hit

    def running_anti(self) -> list[tuple[int, tuple]]:
        """``(node index, required anti-affinity rules of the jobs running there)`` for nodes where a running
        job declares any (most have none; cached). A rule on a wider domain (``RunningJob.
        anti_affinity_domains``: a zone, a rack) binds every node of that domain of the job's nodes."""
        cached = self._static_cache.get("__running_anti__")
        if cached is None:
            snap = self.snap
            on: dict[int, list] = {}
            for rj in snap.cluster.running_jobs():
                if not rj.anti_affinity and not rj.anti_affinity_domains:
                    continue
                mine = sorted({snap.by_name[r.node] for r in rj.replicas if r.node in snap.by_name})
                if rj.anti_affinity:
                    rules = snap.running_anti(rj.job)
                    for i in mine:
                        on.setdefault(i, []).extend(rules)
                for key, rule in snap.running_anti_domains(rj.job):
                    for i in same_domain(snap, key, mine):
                        on.setdefault(i, []).append(rule)
            cached = [(i, tuple(rules)) for i, rules in sorted(on.items())]
            self._static_cache["__running_anti__"] = cached
        return cached

    def running_labels(self) -> list[tuple[int, tuple]]:
        """``(node index, labels of the jobs running there)`` for nodes where something runs."""
        cached = self._static_cache.get("__running_labels__")
        if cached is None:
            snap = self.snap
            cached = [
                (v.idx, tuple(snap.running_labels(j) for j in v.running)) for v in snap.nodes if v.running
            ]
            self._static_cache["__running_labels__"] = cached
        return cached

    def holding_groups(self, rule: Rule) -> np.ndarray:
        """Per static group, whether ``rule`` holds for its nodes' labels (cached per rule: a batch's
        units combine the same few rules in many ways, and each combination would otherwise test every
        group again)."""
        key = ("__holding__", rule.model_dump_json())
        hit = self._static_cache.get(key)
        if hit is None:
            nodes = self.snap.nodes
            hit = np.fromiter(
                (holds(rule, nodes[int(m[0])].node.labels) for m in self.group_members),
                dtype=bool,
                count=len(self.group_members),
            )
            self._static_cache[key] = hit
        return hit

    def running_values(self, key: str) -> dict[str, np.ndarray]:
        """Label ``key`` of the running jobs, as their anti-affinity readers see it
        (:func:`~placer.solver.rules.running_label`): value -> the nodes (indices, ascending) where a job
        with that value runs. One pass over the running jobs per key (cached), so that an ``In`` rule
        finds its nodes by lookup instead of testing every running job's labels."""
        ck = ("__running_values__", key)
        hit = self._static_cache.get(ck)
        if hit is None:
            snap = self.snap
            at: dict[str, list[int]] = {}
            for v in snap.nodes:
                for j in v.running:
                    value = running_label(snap.cluster.running_job(j), key)
                    if value is not None:
                        nodes = at.setdefault(value, [])
                        if not nodes or nodes[-1] != v.idx:
                            nodes.append(v.idx)
            hit = {value: np.array(nodes, dtype=np.int64) for value, nodes in at.items()}
            self._static_cache[ck] = hit
        return hit

    def fits(self, need: Need, *, free: bool = True) -> np.ndarray:
        """Boolean mask of nodes where one replica of ``need`` fits (now, or on the empty node); cached per
        distinct need, as batches repeat the same few shapes. Callers must not modify the mask."""
        key = ("__fits__", need, free)
        hit = self._static_cache.get(key)
        if hit is None:
            hit = self._fits(need, free)
            self._static_cache[key] = hit
        return hit

    def nvlink_nodes(self) -> np.ndarray:
        """1 for nodes whose GPUs sit in an NVLink domain, else 0 (int64; cached)."""
        hit = self._static_cache.get("__nvlink__")
        if hit is None:
            hit = np.fromiter(
                (1 if v.node.nvlink_domain is not None else 0 for v in self.snap.nodes),
                dtype=np.int64,
                count=len(self.snap.nodes),
            )
            self._static_cache["__nvlink__"] = hit
        return hit

    def scope_codes(self, scope: str) -> np.ndarray:
        """Per node, an integer code of its value of gang scope ``scope`` (-1 when none); cached."""
        key = ("__scope__", scope)
        cached = self._static_cache.get(key)
        if cached is None:
            # The values scope_value gives, read straight off the nodes, one list per attribute (10,000
            # nodes x a few scopes per batch: no function call or tuple per node when one attribute).
            attrs = [SCOPE_ATTRS.get(part) for part in scope.split("+")]
            nodes = [v.node for v in self.snap.nodes]
            if scope.startswith(FLAVOR_LEVEL):  # a node's Kueue flavor: codes in the flavors' order
                names = {name: i for i, (name, _) in enumerate(level_flavors(scope) or ())}
                flavor = [level_flavor(scope, n.labels) for n in nodes]
                cached = np.array([-1 if f is None else names[f] for f in flavor], dtype=np.int64)
                self._static_cache[key] = cached
                return cached
            if None in attrs:
                vals: list[object] = [None] * len(nodes)
            elif len(attrs) == 1:
                vals = [getattr(n, attrs[0]) for n in nodes]  # type: ignore[arg-type]
            else:
                cols = [[getattr(n, a) for n in nodes] for a in attrs]  # type: ignore[arg-type]
                vals = [None if None in x else x for x in zip(*cols, strict=True)]
            ids: dict[object, int] = {}
            cached = np.array(
                [-1 if x is None else ids.setdefault(x, len(ids)) for x in vals], dtype=np.int64
            )
            self._static_cache[key] = cached
        return cached

    def scope_ranks(self, scope: str) -> np.ndarray:
        """Per code of :meth:`scope_codes`, the rank of its domain's name (``scope_value``) among all the
        names: ties between domains go to names in order, as sorting the names breaks them, without
        comparing strings on every call; cached."""
        key = ("__scope_ranks__", scope)
        cached = self._static_cache.get(key)
        if cached is None:
            codes = self.scope_codes(scope)
            present, first = np.unique(codes, return_index=True)
            names = [""] * int(present.max(initial=-1) + 1)
            for code, node in zip(present.tolist(), first.tolist(), strict=True):
                if code >= 0:
                    names[code] = scope_value(self.snap, node, scope) or ""
            cached = np.empty(len(names), dtype=np.int64)
            cached[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
            self._static_cache[key] = cached
        return cached

    def _fits(self, need: Need, free: bool) -> np.ndarray:
        eps = 1e-9
        if free and not need.extra:  # the arrival's path: one compiled pass, the same comparisons
            ok = np.empty(len(self.gpus), dtype=bool)
            _fits_free(
                self.gpus, self.cpu, self.mem, self.storage, self.shm, self.milli,
                int(need.gpus), float(need.cpu - eps), float(need.mem - eps),
                float(need.storage - eps), float(need.shm - eps), int(need.milli), ok,
            )  # fmt: skip
            return ok
        if free:
            gpus, cpu, mem, sto, shm = self.gpus, self.cpu, self.mem, self.storage, self.shm
        else:
            gpus, cpu, mem, sto, shm = (
                self.cap_gpus,
                self.cap_cpu,
                self.cap_mem,
                self.cap_storage,
                self.cap_shm,
            )
        ok = (gpus >= need.gpus) & (cpu >= need.cpu - eps) & (mem >= need.mem - eps)
        ok &= (sto >= need.storage - eps) & (shm >= need.shm - eps)
        if need.milli:
            ok &= (self.milli if free else np.where(self.cap_gpus > 0, 1000, 0)) >= need.milli
        for name, amount in need.extra:
            ok &= (self.extra_free(name) if free else self.extra_cap(name)) >= amount - eps
        return ok

    def extra_cap(self, name: str) -> np.ndarray:
        """How much of extended resource ``name`` each node has in all (:func:`advertised`)."""
        key = ("__extra_cap__", name)
        cached = self._static_cache.get(key)
        if cached is None:
            nodes = self.snap.nodes
            cached = np.fromiter(
                (advertised(v.node, name) for v in nodes), dtype=np.float64, count=len(nodes)
            )
            self._static_cache[key] = cached
        return cached

    def extra_free(self, name: str) -> np.ndarray:
        """How much of extended resource ``name`` no running job holds, per node (made when a batch first
        asks for it, and again after the free amounts change: most batches ask for none)."""
        key = ("__extra_free__", name)
        cached = self._static_cache.get(key)
        if cached is None:
            nodes = self.snap.nodes
            held = np.fromiter(
                (v.held_extra.get(name, 0.0) for v in nodes), dtype=np.float64, count=len(nodes)
            )
            cached = self.extra_cap(name) - held
            self._static_cache[key] = cached
        return cached


#: Cache entries that read free amounts or running jobs (the rest read node facts only).
_DYNAMIC = frozenset(
    {
        "__running_labels__",
        "__running_values__",
        "__running_anti__",
        "__running_anti_keys__",
        "__domain_anti__",
        "__sockets__",
        "__anti__",
        "__beside__",
        "__milli_matrix__",
        "__extra_free__",
    }
)


class Clock:
    """A counter shared by arrays refreshed from one another: each tick is a stamp never given before.

    >>> c = Clock()
    >>> c.ticks(3).tolist(), c.tick()
    ([0, 1, 2], 3)
    """

    __slots__ = ("next",)

    def __init__(self) -> None:
        self.next = 0

    def tick(self) -> int:
        self.next += 1
        return self.next - 1

    def ticks(self, k: int) -> np.ndarray:
        out = np.arange(self.next, self.next + k, dtype=np.int64)
        self.next += k
        return out


_ABSENT = object()


#: Most static answers kept (a whole online fill of the openb trace keeps about 220): past it they are
#: dropped, so a long-lived session or stored cluster cannot grow without bound.
MAX_STATIC_ANSWERS = 10_000


class Answers(MutableMapping[object, Any]):
    """Cached answers of one :class:`NodeArrays`, in two dicts: those that read node facts only (shared,
    as one dict, by every refreshed copy: they stay true when work starts or ends) and those that read
    free amounts or running jobs (:func:`_dynamic`; dropped by :meth:`refreshed`).

    Why two dicts: a session refreshes the arrays once per committed decision, and copying hundreds of
    static answers each time cost more than deciding one job.

    >>> a = Answers()
    >>> a["__nvlink__"], a["__anti__"] = 1, 2
    >>> b = a.refreshed()
    >>> ("__nvlink__" in b, "__anti__" in b, b.static is a.static)
    (True, False, True)

    At most :data:`MAX_STATIC_ANSWERS` static answers are kept: the one past it drops them all first.
    """

    __slots__ = ("dynamic", "static")

    def __init__(self, static: dict[object, Any] | None = None) -> None:
        self.static: dict[object, Any] = {} if static is None else static
        self.dynamic: dict[object, Any] = {}

    def refreshed(self) -> Answers:
        """The answers that stay true when free amounts change (the same static dict)."""
        return Answers(self.static)

    def _of(self, key: object) -> dict[object, Any]:
        return self.dynamic if _dynamic(key) else self.static

    # Reads look in both dicts rather than classify the key (a key lives in one only, as written by
    # __setitem__): answers are read far more often than written, on greedy's and the problem's hot path.
    def __getitem__(self, key: object) -> Any:
        return self.static[key] if key in self.static else self.dynamic[key]

    def get(self, key: object, default: Any = None) -> Any:
        hit = self.static.get(key, _ABSENT)
        return self.dynamic.get(key, default) if hit is _ABSENT else hit

    def __contains__(self, key: object) -> bool:
        return key in self.static or key in self.dynamic

    def __setitem__(self, key: object, value: Any) -> None:
        target = self._of(key)
        if target is self.static and key not in target and len(target) >= MAX_STATIC_ANSWERS:
            # A long-lived holder (a service's stored cluster, a session) that sees ever new kinds of
            # jobs would keep every answer; past the cap they are all dropped and made again on demand.
            target.clear()
        target[key] = value

    def __delitem__(self, key: object) -> None:
        del self._of(key)[key]

    def __iter__(self) -> Iterator[object]:
        yield from self.static
        yield from self.dynamic

    def __len__(self) -> int:
        return len(self.static) + len(self.dynamic)


def _partial(v: NodeView) -> float:
    return sum(m for m in v.milli_free if 0 < m < 1000) / 1000


class Rows(FreeAmounts):
    """The per-node arrays of :class:`NodeArrays` that :func:`_rows` makes: the free amounts, and the
    capacities and the rest, which placing work does not change."""

    cap_gpus: np.ndarray
    cap_cpu: np.ndarray
    cap_mem: np.ndarray
    cap_storage: np.ndarray
    cap_shm: np.ndarray
    partial: np.ndarray
    usable: np.ndarray


#: Their names.
_ROWS = (
    "gpus", "milli", "cpu", "mem", "storage", "shm", "cap_gpus", "cap_cpu", "cap_mem", "cap_storage",
    "cap_shm", "empty", "partial", "usable",
)  # fmt: skip


@njit(cache=True, nogil=True)
def _fits_free(  # pragma: no cover
    gpus: np.ndarray,
    cpu: np.ndarray,
    mem: np.ndarray,
    sto: np.ndarray,
    shm: np.ndarray,
    milli: np.ndarray,
    n_gpus: int,
    n_cpu: float,
    n_mem: float,
    n_sto: float,
    n_shm: float,
    n_milli: int,
    out: np.ndarray,
) -> None:
    """``out[i]``: one replica of the need fits node ``i``'s free amounts (:meth:`NodeArrays._fits`, the
    same comparisons with the tolerances already subtracted). Why compiled: the numpy form is nine passes
    over the nodes, and an online arrival asks it once per decision (a twentieth of its time on the
    1,213-node openb cluster)."""
    for i in range(out.shape[0]):
        out[i] = (
            gpus[i] >= n_gpus
            and cpu[i] >= n_cpu
            and mem[i] >= n_mem
            and sto[i] >= n_sto
            and shm[i] >= n_shm
            and (n_milli == 0 or milli[i] >= n_milli)
        )


def _rows(nodes: Sequence[NodeView]) -> Rows:
    """The per-node arrays of ``nodes``, in their order."""
    f = np.fromiter
    n = len(nodes)
    return {
        "gpus": f((len(v.free_gpus) for v in nodes), dtype=np.int64, count=n),
        "milli": f((max(v.milli_free, default=0) for v in nodes), dtype=np.int64, count=n),
        "cpu": f((v.free_cpu for v in nodes), dtype=np.float64, count=n),
        "mem": f((v.free_mem for v in nodes), dtype=np.float64, count=n),
        "storage": f((v.free_storage for v in nodes), dtype=np.float64, count=n),
        "shm": f((v.free_shm for v in nodes), dtype=np.float64, count=n),
        "cap_gpus": f((v.node.gpu_count for v in nodes), dtype=np.int64, count=n),
        "cap_cpu": f((v.node.cpu_cores for v in nodes), dtype=np.float64, count=n),
        "cap_mem": f((v.node.memory_gb for v in nodes), dtype=np.float64, count=n),
        "cap_storage": f(
            (np.inf if v.node.storage_gb is None else v.node.storage_gb for v in nodes),
            dtype=np.float64,
            count=n,
        ),
        "cap_shm": f(
            (np.inf if v.node.shm_gb is None else v.node.shm_gb for v in nodes), dtype=np.float64, count=n
        ),
        "empty": f((v.empty for v in nodes), dtype=bool, count=n),
        "partial": f((_partial(v) for v in nodes), dtype=np.float64, count=n),
        "usable": f((v.usable for v in nodes), dtype=bool, count=n),
    }


def _groups(
    nodes: Sequence[NodeView], keys: list[str], known: dict[tuple[object, ...], int], first: int = 0
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The static group of each of ``nodes`` (which stand at ``first`` onwards): the group ``known``
    gives their signature, else a new one, numbered in order of first appearance after the known ones;
    and per group (known ones included) the members among ``nodes``, as indices of the whole view."""
    sig_ids = dict(known)
    group = np.empty(len(nodes), dtype=np.int64)
    for k, v in enumerate(nodes):
        group[k] = sig_ids.setdefault(_static_signature(v, keys), len(sig_ids))
    members = [np.flatnonzero(group == g) + first for g in range(len(sig_ids))] if len(nodes) else []
    return group, members


def _dynamic(key: object) -> bool:
    """Whether a cached answer depends on what runs where (dropped when that changes)."""
    if key in _DYNAMIC:
        return True
    if isinstance(key, tuple) and key and key[0] in _DYNAMIC:
        return True
    return isinstance(key, tuple) and len(key) == 3 and key[0] == "__fits__" and key[2] is True


def _reads_availability(key: object) -> bool:
    """Whether a static answer reads which nodes are up (the candidate masks: :func:`_static_mask`)."""
    return isinstance(key, tuple) and bool(key) and key[0] == "__static__"


def _static_signature(v: NodeView, keys: list[str]) -> tuple[object, ...]:
    """What tells node ``v`` apart from others for every static test (``keys``: the batch's label keys,
    sorted once by the caller — this runs once per node). Not whether it is up: a node going down or
    coming back then moves no node between groups, and every answer per group stands (``refreshed``)."""
    n = v.node
    labels = n.labels
    return (
        tuple((t.key, t.value, t.effect) for t in n.taints) if n.taints else (),
        n.gpu_type,
        n.gpu_memory_gb,
        n.compute_capability,
        n.gpu_interconnect,
        n.capacity_class,
        tuple([(k, labels.get(k)) for k in keys]) if keys else (),
    )


def batch_keys(units: Iterable[Unit], scopes: Iterable[str | None] = ()) -> set[str]:
    """Label keys the batch's rules and scopes read: only these split nodes into static groups."""
    keys: set[str] = set()
    for u in units:
        for r in u.rules:
            keys |= rule_keys(r)
        for p in u.preferred:
            keys.add(p.key)
    keys |= {p for s in scopes if s for p in s.split("+") if p not in ("node", "nvlink_domain")}
    return keys


@dataclass
class UnitCandidates:
    """Where one unit's replicas may go: ``static`` could ever run there, ``now`` fits now."""

    unit: Unit
    static: np.ndarray
    now: np.ndarray
    eliminated: dict[str, int]
    blocked: dict[str, int]

    @property
    def satisfiable(self) -> bool:
        return bool(self.static.any())


def _static_mask(
    unit: Unit, arrays: NodeArrays, nvlink: bool, spot_ok: bool, assume_up: bool = False
) -> tuple[np.ndarray, dict[str, int]]:
    """The nodes that pass every static check for ``unit``, and how many each check ruled out first.
    ``assume_up``: as if every node were up (whether a job waits for nodes to come back, or never runs)."""
    key = (
        "__static__",
        assume_up,
        unit.gpu.model_dump_json() if unit.gpu is not None else None,
        unit.tpu is not None,
        tuple(r.model_dump_json() for r in unit.rules),
        nvlink,
        spot_ok,
        tuple(s.model_dump_json() for s in unit.structure),
        unit.model_pin,
        tuple(t.model_dump_json() for t in unit.tolerations),
        unit.extra,
    )
    cached = arrays._static_cache.get(key)
    if cached is not None:
        return cached
    snap = arrays.snap
    mask = np.zeros(len(snap.nodes), dtype=bool)
    eliminated: dict[str, int] = {}
    want_types = {canonical_gpu_type(t) or t for t in unit.gpu.types} if unit.gpu is not None else set()
    wants_gpu = unit.gpu is not None and (unit.need.gpus > 0 or unit.need.milli > 0)
    ruled = np.ones(len(arrays.group_members), dtype=bool)
    for r in unit.rules:
        ruled &= arrays.holding_groups(r)
    usable = arrays.usable
    all_up = assume_up or bool(usable.all())
    for g, group in enumerate(arrays.group_members):
        # Nodes that are down are blamed first, as if the group were split on it; the rest of the group
        # answers as its first node does (the group's static facts are the same).
        if unit.tpu is not None or all_up:
            members = group
        else:
            members = group[usable[group]]
            if len(members) < len(group):
                eliminated["unavailable"] = eliminated.get("unavailable", 0) + len(group) - len(members)
            if not len(members):
                continue
        v = snap.nodes[int(group[0])]
        n = v.node
        reason = None
        if unit.tpu is not None:
            reason = "accelerator"  # TPU replicas go to TPU pods, never to nodes
        elif any(t.effect in HARD_TAINT_EFFECTS and not tolerated(t, unit.tolerations) for t in n.taints):
            reason = "taint"
        elif wants_gpu and n.gpu_count == 0:
            reason = "accelerator"
        elif wants_gpu and want_types and n.gpu_type not in want_types:
            reason = "gpu_type"
        elif (
            wants_gpu
            and unit.gpu is not None
            and unit.gpu.min_memory_gb is not None
            and (n.gpu_memory_gb or 0) < unit.gpu.min_memory_gb
        ):
            reason = "gpu_memory"
        elif (
            wants_gpu
            and unit.gpu is not None
            and unit.gpu.min_compute_capability
            and _cc(n.compute_capability) < _cc(unit.gpu.min_compute_capability)
        ):
            reason = "compute_capability"
        elif wants_gpu and nvlink and n.nvlink_domain is None:
            reason = "nvlink"
        elif not spot_ok and n.capacity_class == "spot":
            reason = "spot"
        elif not ruled[g]:
            reason = "rules"
        if reason is None:
            mask[members] = True
        else:
            eliminated[reason] = eliminated.get(reason, 0) + len(members)
    if unit.model_pin is not None:  # per node: models loaded do not split static groups
        for i in np.flatnonzero(mask):
            if not version_available(snap.nodes[int(i)].node.models_loaded, *unit.model_pin):
                mask[i] = False
                eliminated["model_version"] = eliminated.get("model_version", 0) + 1
    if unit.structure and any(t.type not in TRANSPARENT for s in unit.structure for t in _walk(s)):
        empty_fit: dict[tuple[object, ...], bool] = {}  # per tree shape: nodes alike answer alike
        for i in np.flatnonzero(mask):
            tree = snap.tree(int(i))
            if tree is None:
                continue
            ok = empty_fit.get(tree.signature)
            if ok is None:
                ok = empty_fit[tree.signature] = fits_empty(tree, unit.structure)
            if not ok:
                mask[i] = False
                eliminated["structure"] = eliminated.get("structure", 0) + 1
    if unit.extra:  # per node: inner trees and labels do not split static groups
        for i in np.flatnonzero(mask):
            node = snap.nodes[int(i)].node
            if any(advertised(node, name) < amount - 1e-9 for name, amount in unit.extra):
                mask[i] = False
                eliminated["extended"] = eliminated.get("extended", 0) + 1
    arrays._static_cache[key] = (mask, eliminated)
    return mask, eliminated


def version_available(loaded: Iterable[LoadedModel], model_id: str, version: str) -> bool:
    """Whether a node with ``loaded`` models may run a job pinned to ``model_id`` at ``version``: it has
    that version loaded, or does not advertise the model at all (then it is loaded from the registry, which
    holds every version). A node that advertises the model at other versions only has the wrong one.

    >>> from placer.topology.inventory import LoadedModel
    >>> m = [LoadedModel(model_id="llama", model_version="v2")]
    >>> [version_available(m, "llama", "v2"), version_available(m, "llama", "v1")]
    [True, False]
    >>> version_available([], "llama", "v1")  # not advertised: loaded from the registry
    True
    """
    versions = {m.model_version for m in loaded if m.model_id == model_id}
    return not versions or version in versions


def _walk(r: FluxResource) -> list[FluxResource]:
    out = [r]
    for c in r.with_:
        out.extend(_walk(c))
    return out


def unit_candidates(
    unit: Unit, arrays: NodeArrays, *, nvlink: bool, spot_ok: bool, assume_up: bool = False
) -> UnitCandidates:
    """Static and current candidates of one unit, with the node counts each check removed. ``assume_up``:
    as if the nodes that are down (cordoned, not ready) were up — only to tell a job that waits for them
    from one that could never run (``explain.unavailable``); never to place."""
    static, eliminated = _static_mask(unit, arrays, nvlink, spot_ok, assume_up)
    eliminated = dict(eliminated)
    big_enough = arrays.fits(unit.need, free=False)
    too_small = static & ~big_enough
    if too_small.any():
        eliminated["too_small"] = int(too_small.sum())
    static = static & big_enough
    blocked: dict[str, int] = {}
    now = static.copy()
    if unit.exclusive:
        bad = now & ~arrays.empty
        if bad.any():
            blocked["exclusive"] = int(bad.sum())
        now &= arrays.empty
    fits = arrays.fits(unit.need)
    bad = now & ~fits
    if bad.any():
        blocked["busy"] = int(bad.sum())
    now &= fits
    if shaped(unit.structure, unit.need.milli):
        bad = now & _socket_blocked(unit, arrays)
        if bad.any():
            blocked["sockets"] = int(bad.sum())
        now &= ~bad
    return UnitCandidates(unit=unit, static=static, now=now, eliminated=eliminated, blocked=blocked)


def _socket_blocked(unit: Unit, arrays: NodeArrays) -> np.ndarray:
    """Nodes whose inner tree cannot hold the unit's Flux shape beside the GPUs running jobs hold (their
    cores are not tied to sockets: the totals judge them). Cached per request; nodes of one tree shape
    with the same GPUs free answer alike and are matched once."""
    key = ("__sockets__", request_text(unit.structure))
    hit = arrays._static_cache.get(key)
    if hit is not None:
        return hit
    snap = arrays.snap
    out = np.zeros(len(snap.nodes), dtype=bool)
    seen: dict[tuple[object, ...], bool] = {}
    for v in snap.nodes:
        tree = snap.tree(v.idx)
        if tree is None:
            continue
        sig = (tree.signature, v.free_gpus)
        ok = seen.get(sig)
        if ok is None:
            shape = compile_shape(unit.structure, tree)
            ok = seen[sig] = not shape.groups or match(tree, [shape], v.free_gpus) is not None
        out[v.idx] = not ok
    arrays._static_cache[key] = out
    return out


def mark_running(rule: Rule, arrays: NodeArrays, out: np.ndarray) -> None:
    """Mark in ``out`` the nodes where a running job's labels match ``rule`` (as anti-affinity reads them).
    An ``In`` rule (the usual "not beside my own app") holds exactly where a running job has one of its
    values: looked up in the index of its key (:meth:`NodeArrays.running_values`). Other rules test every
    running job's labels."""
    if isinstance(rule, LabelRule) and rule.operator is AffinityOperator.IN:
        at = arrays.running_values(rule.key)
        for value in rule.values:
            nodes = at.get(value)
            if nodes is not None:
                out[nodes] = True
        return
    for idx, running in arrays.running_labels():
        if any(holds(rule, lab) for lab in running):
            out[idx] = True


def same_domain(snap: Snapshot, key: str, nodes: list[int]) -> list[int]:
    """The nodes whose label ``key`` has a value one of ``nodes`` has (nodes without it are in no domain):
    where a rule on jobs in a domain reaches (anti-affinity keeps out of it, affinity keeps within it)."""
    values = {v for i in nodes if (v := snap.nodes[i].node.labels.get(key)) is not None}
    if not values:
        return []
    return [v.idx for v in snap.nodes if v.node.labels.get(key) in values]


def _domain_rules(snap: Snapshot, changed: np.ndarray) -> bool:
    """Whether a job with anti-affinity on a wider domain than its node runs on one of the changed nodes."""
    return any(snap.running_anti_domains(j) for i in changed.tolist() for j in snap.nodes[i].running)


def anti_affinity_mask(
    anti: tuple,
    arrays: NodeArrays,
    labels: Mapping[str, str] | None = None,
    domains: tuple[tuple[str, Rule], ...] = (),
) -> np.ndarray:
    """Nodes the job may not use because of running jobs: their labels match one of the job's ``anti``
    rules, or — with the job's ``labels`` — the job matches a required anti-affinity rule of theirs (OJS ML
    §7.3 keeps the two apart either way; Kubernetes keeps an incoming pod off a node whose pods' required
    anti-affinity it matches); and, for each of the job's rules on a wider domain (``domains``: node label
    key, rule), every node in the domain of a node where a running job the rule matches runs."""
    theirs = arrays.running_anti() if labels is not None else []
    out = np.zeros(len(arrays.snap.nodes), dtype=bool)
    if not anti and not theirs and not domains:
        return out
    # The job's labels matter to the running jobs' rules only through the keys those rules read: jobs
    # whose labels agree there share the answer (a big batch's jobs each have labels of their own).
    read = _running_anti_keys(arrays, theirs) if theirs else frozenset()
    mine = tuple(sorted((k, v) for k, v in (labels or {}).items() if k in read))
    key = (
        "__anti__",
        *(r.model_dump_json() for r in anti),
        *(f"{k}={r.model_dump_json()}" for k, r in domains),
        mine,
    )
    cached = arrays._static_cache.get(key)
    if cached is not None:
        return cached
    arrays._static_cache[key] = out
    for r in anti:
        mark_running(r, arrays, out)
    for k, r in domains:
        beside = np.zeros(len(out), dtype=bool)
        mark_running(r, arrays, beside)
        out[same_domain(arrays.snap, k, np.flatnonzero(beside).tolist())] = True
    for idx, rules in theirs:
        if any(holds(r, labels or {}) for r in rules):
            out[idx] = True
    return out


def _running_anti_keys(arrays: NodeArrays, theirs: list[tuple[int, tuple]]) -> frozenset[str]:
    """The label keys the running jobs' required anti-affinity rules read (cached, and dropped with the
    rules when what runs changes)."""
    hit = arrays._static_cache.get("__running_anti_keys__")
    if hit is None:
        hit = frozenset(k for _, rules in theirs for r in rules for k in rule_keys(r))
        arrays._static_cache["__running_anti_keys__"] = hit
    return hit


def pod_admits(unit: Unit, pod: TpuPod, spot_ok: bool) -> bool:
    """Whether a TPU unit may take chips of ``pod`` at all: the pod is usable, of the requested
    generation, not spot when the job may not run on spot, and its labels satisfy the unit's rules.
    Which slices of it are free is the engines' business; this is the hard part they share."""
    assert unit.tpu is not None
    if not pod.usable or (unit.tpu.type and pod.generation != unit.tpu.type):
        return False
    if not spot_ok and pod.capacity_class == "spot":
        return False
    return not unit.rules or all_hold(unit.rules, pod.labels)


def _warm() -> None:
    """Compile :func:`_fits_free` for the signature :meth:`NodeArrays._fits` calls it with, or load it from
    numba's cache, when this module is imported: not inside the first decision's deadline (the reason is
    :func:`placer.solver.objective.kernels.warm`'s)."""
    i, f = np.zeros(1, dtype=np.int64), np.zeros(1)
    _fits_free(i, f, f, f, f, i, 0, 0.0, 0.0, 0.0, 0.0, 0, np.empty(1, dtype=bool))


_warm()
