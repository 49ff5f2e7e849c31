"""Packing patterns: what one node of a class can hold at once, as counts of item types.

Why patterns (Gilmore-Gomory's configurations): capacity per class as one sum would be a relaxation (three
5-GPU replicas "fit" two 8-GPU nodes in total, but not on them). A pattern is a multiset of replicas that
truly fits one node; the model chooses how many nodes of the class use each pattern, so packing is exact
while the model's size follows classes and item types, not nodes.

An **item type** is a per-replica demand. Replicas of different jobs with the same demand share a type,
unless a job needs per-node rules: ``distinct`` replicas (one per node), exclusive nodes, or anti-affinity
with other jobs of the batch; such units get a *tagged* type of their own, with a per-node cap, an
exclusivity flag, and the tags they may not share a node with.

Patterns per class: every pattern greedy used (so its answer is a valid hint), one greedy-filled pattern
seeded by each type, then a depth-first enumeration of maximal patterns until ``limit``.

**Flux shapes.** Replicas whose Flux request names sockets (or other inner vertices) get item types of
their own (``ItemType.structure``). On a class whose nodes describe an inner tree, a pattern holding such
items fits only when all of them match the tree *together* (:func:`shape_fits`: one joint search of
:func:`placer.solver.structure.match` over the class's free GPUs, cores bound per socket): two "socket with 3
cores" replicas fit a node of 2 x 4 cores, three do not. Realization takes the GPUs that joint match
chose (:func:`shape_claims`), so the model's packings are exact for shapes too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placer.solver.cpsat.classes import NodeClass
from placer.solver.jobs.model import FluxResource
from placer.solver.structure import Claim, compile_shape, match

__all__ = [
    "DFS_MAX_TYPES",
    "DFS_MAX_VISITS",
    "EPS",
    "SHARES_MAX_VISITS",
    "ItemType",
    "Packer",
    "Pattern",
    "fits",
    "patterns_for",
    "shape_claims",
    "shape_fits",
    "shares_pack",
]

EPS = 1e-9


@dataclass(frozen=True)
class ItemType:
    """One per-replica demand (with per-node rules when tagged)."""

    gpus: int
    milli: int
    cpu: float
    mem: float
    storage: float
    shm: float
    tag: tuple[object, ...] | None = None
    #: Extended resources per replica, ``(name, amount)`` sorted (``Need.extra``).
    extra: tuple[tuple[str, float], ...] = ()
    cap: int | None = None
    exclusive: bool = False
    conflicts: frozenset[tuple[object, ...]] = field(default_factory=frozenset)
    #: A Flux request naming sockets (or other inner vertices): matched on classes with an inner tree.
    #: Types differ by ``shape_key`` (the request as JSON); the request itself is carried along.
    shape_key: str | None = None
    structure: tuple[FluxResource, ...] = field(default=(), compare=False, hash=False)

    def size(self) -> tuple[float, ...]:
        return (self.gpus, self.milli, self.cpu, self.mem)


Pattern = tuple[tuple[int, int], ...]  # ((type index, count), ...) sorted by type index


def shape_claims(cls: NodeClass, types: list[ItemType], counts: Pattern) -> dict[int, list[Claim]] | None:
    """For one node of ``cls`` holding ``counts`` of the item types: per shaped type, one claim per
    replica (GPU indices, cores per socket) from a joint match of all of them on the class's tree as it
    is free now; None when they do not fit together. Types without a shape, or whose request names nothing
    the tree describes, get no claim (their totals are all that matter)."""
    if cls.tree is None:
        return {}
    shapes = []
    owners: list[int] = []
    for i, k in counts:
        if k <= 0 or types[i].shape_key is None:
            continue
        shape = compile_shape(types[i].structure, cls.tree)
        if shape.groups:
            shapes.extend([shape] * k)
            owners.extend([i] * k)
    if not shapes:
        return {}
    found = match(cls.tree, shapes, cls.free_gpus)
    if found is None:
        return None
    out: dict[int, list[Claim]] = {}
    for i, c in zip(owners, found, strict=True):
        if len(c.gpus) > types[i].gpus:
            return None  # the request names more GPUs than its task group holds
        out.setdefault(i, []).append(c)
    return out


def shape_fits(cls: NodeClass, types: list[ItemType], counts: dict[int, int]) -> bool:
    """Whether the shaped items among ``counts`` fit one node of ``cls`` together (memoized per class:
    the depth-first enumeration asks the same multisets again and again)."""
    if cls.tree is None:
        return True
    key = tuple(sorted((i, k) for i, k in counts.items() if k > 0 and types[i].shape_key is not None))
    if not key:
        return True
    hit = cls.shape_memo.get(key)
    if hit is None:
        hit = cls.shape_memo[key] = shape_claims(cls, types, key) is not None
    return hit


def fits(cls: NodeClass, types: list[ItemType], counts: dict[int, int]) -> bool:
    """Whether ``counts`` of the item types fit one node of ``cls`` together."""
    g = cpu = mem = sto = shm = 0.0
    shares: list[int] = []
    tags: set[tuple[object, ...]] = set()
    exclusive_tag = None
    for t_idx, k in counts.items():
        if k <= 0:
            continue
        t = types[t_idx]
        if t.cap is not None and k > t.cap:
            return False
        g += t.gpus * k
        cpu += t.cpu * k
        mem += t.mem * k
        sto += t.storage * k
        shm += t.shm * k
        shares.extend([t.milli] * k if t.milli else [])
        if t.tag is not None:
            tags.add(t.tag)
            if t.exclusive:
                exclusive_tag = t.tag
    if (
        g > cls.gpus
        or cpu > cls.cpu + EPS
        or mem > cls.mem + EPS
        or sto > cls.storage + EPS
        or shm > cls.shm + EPS
    ):
        return False
    if cls.extra and not _extra_fits(cls, types, counts):  # classes carry extra only when the batch asks
        return False
    if exclusive_tag is not None and (
        len(tags) > 1 or any(types[i].tag is None for i in counts if counts[i])
    ):
        return False
    for t_idx, k in counts.items():
        if k and types[t_idx].conflicts & tags:
            return False
    if shares:
        bins = [1000] * (cls.gpus - int(g)) + list(cls.milli)
        start = list(bins)
        for s in sorted(shares, reverse=True):  # first-fit decreasing: conservative, never wrong
            for i, free in enumerate(bins):
                if free >= s:
                    bins[i] = free - s
                    break
            else:
                # Realization packs shares the same way, so the pattern stays out; but when the shares do
                # fit these GPUs another way, the model misses a packing and must not call itself exact.
                if (
                    not cls.shares_missed
                    and sum(shares) <= sum(start)
                    and shares_pack(shares, start) is not False
                ):
                    cls.shares_missed = True
                return False
    return shape_fits(cls, types, counts)


#: Search steps :func:`shares_pack` may take before it gives up (and says it does not know).
SHARES_MAX_VISITS = 20_000


def shares_pack(shares: list[int], bins: list[int]) -> bool | None:
    """Whether GPU shares (thousandths) fit the GPUs' free thousandths ``bins``, exactly (a depth-first
    search, largest share first, GPUs with equal room tried once); None when :data:`SHARES_MAX_VISITS` ran
    out first.

    >>> shares_pack([400, 400, 300, 300, 300, 300], [1000, 1000])  # first-fit decreasing fails here
    True
    >>> shares_pack([600, 600], [1000])
    False
    """
    items = sorted(shares, reverse=True)
    room = list(bins)
    visits = [0]

    def go(k: int) -> bool | None:
        if k == len(items):
            return True
        visits[0] += 1
        if visits[0] > SHARES_MAX_VISITS:
            return None
        tried: set[int] = set()
        unknown = False
        for i, free in enumerate(room):
            if free < items[k] or free in tried:
                continue
            tried.add(free)
            room[i] = free - items[k]
            got = go(k + 1)
            room[i] = free
            if got:
                return True
            unknown |= got is None
        return None if unknown else False

    return go(0)


def _as_pattern(counts: dict[int, int]) -> Pattern:
    return tuple(sorted((i, k) for i, k in counts.items() if k > 0))


def _extra_fits(cls: NodeClass, types: list[ItemType], counts: dict[int, int]) -> bool:
    """Whether the extended resources of ``counts`` fit one node of ``cls`` together."""
    extra: dict[str, float] = {}
    for t_idx, k in counts.items():
        for name, amount in types[t_idx].extra if k > 0 else ():
            extra[name] = extra.get(name, 0.0) + amount * k
    return all(total <= cls.extra.get(name, 0.0) + EPS for name, total in extra.items())


class Packer:
    """One node being filled item by item, with running totals (O(1) per item but for GPU shares).

    Used to generate patterns quickly; :func:`fits` stays the reference check for whole patterns.
    """

    __slots__ = (
        "bins",
        "cls",
        "counts",
        "cpu",
        "exclusive",
        "extra",
        "gpus",
        "mem",
        "shm",
        "storage",
        "tags",
        "types",
        "untagged",
    )

    def __init__(self, cls: NodeClass, types: list[ItemType]):
        self.cls = cls
        self.types = types
        self.gpus, self.cpu, self.mem, self.storage, self.shm = (
            cls.gpus,
            cls.cpu,
            cls.mem,
            cls.storage,
            cls.shm,
        )
        self.bins = list(cls.milli)
        self.extra = dict(cls.extra)
        self.counts: dict[int, int] = {}
        self.tags: set[tuple[object, ...]] = set()
        self.exclusive: tuple[object, ...] | None = None
        self.untagged = 0

    def add(self, i: int) -> bool:
        """Add one item of type ``i`` if it fits (and return whether it did)."""
        t = self.types[i]
        k = self.counts.get(i, 0)
        if t.cap is not None and k + 1 > t.cap:
            return False
        if (
            t.gpus > self.gpus
            or t.cpu > self.cpu + EPS
            or t.mem > self.mem + EPS
            or t.storage > self.storage + EPS
            or t.shm > self.shm + EPS
            or (t.extra and any(amount > self.extra.get(name, 0.0) + EPS for name, amount in t.extra))
        ):
            return False
        if self.exclusive is not None and t.tag != self.exclusive:
            return False
        if t.exclusive and (self.untagged or (self.tags - {t.tag})):
            return False
        if t.conflicts & self.tags or (
            t.tag is not None and any(t.tag in self.types[j].conflicts for j in self.counts)
        ):
            return False
        shaped = t.shape_key is not None and self.cls.tree is not None
        if shaped and not shape_fits(self.cls, self.types, {**self.counts, i: k + 1}):
            return False
        gpus = t.gpus
        if t.milli:
            for b, free in enumerate(self.bins):
                if free >= t.milli:
                    self.bins[b] = free - t.milli
                    break
            else:
                if self.gpus - gpus < 1:
                    return False
                gpus += 1  # open a whole GPU for shares
                self.bins.append(1000 - t.milli)
        self.gpus -= gpus
        self.cpu -= t.cpu
        self.mem -= t.mem
        self.storage -= t.storage
        self.shm -= t.shm
        for name, amount in t.extra:
            self.extra[name] -= amount
        self.counts[i] = k + 1
        if t.tag is None:
            self.untagged += 1
        else:
            self.tags.add(t.tag)
            if t.exclusive:
                self.exclusive = t.tag
        return True


def _fill(cls: NodeClass, types: list[ItemType], order: list[int]) -> dict[int, int]:
    packer = Packer(cls, types)
    for i in order:
        while packer.add(i):
            pass
    return packer.counts


#: Depth-first enumeration of maximal patterns only runs when a class has at most this many item types.
DFS_MAX_TYPES = 10
#: Nodes of the depth-first search visited per class at most: the count of each type can be large (many
#: small items fit a big node), so the search tree is bounded by size, not only by patterns found.
DFS_MAX_VISITS = 20_000


def patterns_for(
    cls: NodeClass,
    types: list[ItemType],
    eligible: list[int],
    seeds: list[Pattern],
    limit: int,
    complete: list[bool] | None = None,
) -> list[Pattern]:
    """Patterns for one class over the ``eligible`` item types: ``seeds`` first (kept even beyond
    ``limit``), then greedy fills seeded by each type, then (for few types) a bounded depth-first
    enumeration of maximal patterns. ``complete`` (a one-element list) is set to False when that
    enumeration stopped at its visit bound (:data:`DFS_MAX_VISITS`) before the pattern limit."""
    out: list[Pattern] = []
    seen: set[Pattern] = set()

    def add(p: Pattern) -> None:
        if p and p not in seen:
            seen.add(p)
            out.append(p)

    for p in seeds:
        add(p)
    budget = limit + len(seeds)
    order = sorted(eligible, key=lambda i: tuple(-x for x in types[i].size()))
    for i in order:
        if len(out) >= budget:
            break
        add(_as_pattern(_fill(cls, types, [i, *[j for j in order if j != i]])))
    if len(out) < budget and len(order) <= DFS_MAX_TYPES:
        visits = [DFS_MAX_VISITS]
        _dfs(cls, types, order, 0, {}, out, seen, budget, visits)
        if complete is not None and visits[0] < 0:
            complete[0] = False
    return out


def _dfs(
    cls: NodeClass,
    types: list[ItemType],
    order: list[int],
    pos: int,
    counts: dict[int, int],
    out: list[Pattern],
    seen: set[Pattern],
    budget: int,
    visits: list[int],
) -> None:
    visits[0] -= 1
    if len(out) >= budget or visits[0] < 0:
        return
    if pos == len(order):
        p = _as_pattern(counts)
        if p and p not in seen and _maximal(cls, types, order, counts):
            seen.add(p)
            out.append(p)
        return
    i = order[pos]
    k = 0
    while True:
        counts[i] = k + 1
        if not fits(cls, types, counts):
            break
        k += 1
    for c in range(k, -1, -1):
        counts[i] = c
        _dfs(cls, types, order, pos + 1, counts, out, seen, budget, visits)
        if len(out) >= budget or visits[0] < 0:
            break
    counts.pop(i, None)


def _maximal(cls: NodeClass, types: list[ItemType], order: list[int], counts: dict[int, int]) -> bool:
    for i in order:
        counts[i] = counts.get(i, 0) + 1
        ok = fits(cls, types, counts)
        counts[i] -= 1
        if ok:
            return False
    return True
