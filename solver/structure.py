"""Matching a Flux resource request against a node's inner containment tree (RFC 14), with what is in use.

Why: a Flux jobspec can ask for shape, not just amounts — "one slot of 2 sockets with 4 cores each" — and
a node with 8 cores on one socket has the amounts but not the shape. Nodes described with their inner tree
(Flux JGF, Slurm sockets) are checked here; nodes without one are judged by their totals (the candidates'
capacity checks), as nothing more is known. The check is not only static: once a job holds 3 of a
socket's 4 cores, a second "socket with 3 cores" must go to the other socket or another node, and a job
asking "2 sockets, 1 GPU each" must get one GPU *from each* socket. So a match also says what it takes
(a :class:`Claim`: GPU indices, and cores bound to the vertices it chose). The engines keep, per node,
the shaped replicas they placed with their GPUs; a new one is matched *together* with them, their GPUs
fixed and their cores free to move (the decision names GPU indices, not cores: any arrangement of the
cores that fits is as valid as the first one found).

Semantics (the contract the independent checker, ``solver/checks/shape.py``, verifies):

* A *group* request vertex (``socket``, ``numa``, ... — a type the tree describes, with ``with``
  children, or without children when the tree's vertices of that type have some) needs ``count.min``
  *distinct* vertices of its type among the nearest descendants of the current level (levels in
  between are looked through), each holding the group's own children.
* ``slot`` stands for a share of the replica: its children count ``count.min`` times (a leaf amount is
  multiplied, a group is repeated — repeated groups may share a vertex when it has room). ``node`` and
  vertices above a node (``switch``, ``rack``, ...) stand for the replica's node: looked through, their
  counts not multiplied. A group type the tree does not describe is looked through with its count
  multiplied (``numa 2 > core 4`` on a tree without NUMA domains needs 8 cores at that level).
* Leaves inside a group are bound to the vertex the group took: ``core`` by amount (cores are pooled
  per vertex: a ``core`` vertex of size 16 is 16 cores; which core a job gets is not recorded, the
  decision format has no core ids), ``gpu`` by index (the k-th ``gpu`` vertex of the tree in depth-first
  order is GPU k of the node, as in ``topology/graph.py``). Other leaf types (``memory``) are checked
  against the vertex's sizes, not accounted. Leaves outside every group, and all usage by running jobs
  and by jobs without a shape (their cores are not tied to sockets in the inputs), are *floating*: they
  fit wherever the vertices have room left, which the node's totals already decide.
* Room: for every vertex, the cores bound inside its subtree stay within the cores it holds; a GPU is
  taken by one job only.
* Exclusivity (RFC 14: ``exclusive`` defaults to true for a resource *inside a slot*, false elsewhere;
  an explicit ``exclusive`` wins): a group vertex taken exclusively is held by one slot alone — no other
  slot, of this replica, of another replica or of another shaped job on the node, may take it, a vertex
  inside it, or (exclusively) a vertex above it. The slots of one replica never share a vertex either
  (Flux counts distinct vertices: ``slot 2 > socket 2`` is 4 sockets). So "2 slots, each of 2 sockets
  with 1 core" needs 4 sockets, not 2 sockets with room for 2 cores. A top-level request without a
  ``slot`` vertex is one slot's contents (the readers strip the slot of a ``slot > ...`` replica), so
  its groups are inside a slot. Usage by jobs without a shape is floating (above) and is judged by the
  node's totals: the cores of an exclusively held socket that its slot does not ask for are not
  withheld from them.

The search is a depth-first backtracking over the vertices each group may take (best fit first: the
vertex with the fewest free GPUs and cores that holds it), bounded by :data:`MAX_STEPS`; on reaching the
bound it answers "does not fit", which is conservative. GPUs inside a chosen vertex are taken lowest index
first (no backtracking over which ones).

>>> from placer.solver.jobs.model import CountRange, FluxResource
>>> from placer.topology import InnerVertex
>>> socket = lambda n: InnerVertex(type="socket", children=[InnerVertex(type="core") for _ in range(n)])
>>> two_by_four = [FluxResource(type="socket", count=CountRange(min=2), with_=[
...     FluxResource(type="core", count=CountRange(min=4))])]
>>> fits_structure([socket(4), socket(4)], two_by_four), fits_structure([socket(8)], two_by_four)
(True, False)
>>> tree = InnerTree.of([socket(4), socket(4)])
>>> one_by_three = [FluxResource(type="socket", count=CountRange(min=1), with_=[
...     FluxResource(type="core", count=CountRange(min=3))])]
>>> shape = compile_shape(one_by_three, tree)
>>> [c.cores for c in match(tree, [shape, shape], [])]  # 3 cores on each socket (vertex ids 0 and 5)
[[(0, 3.0)], [(5, 3.0)]]
>>> match(tree, [shape, shape, shape], []) is None  # a third "socket with 3 cores" does not fit
True
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from placer.solver.jobs.model import FluxResource
from placer.topology import InnerVertex

__all__ = [
    "EPS",
    "MAX_STEPS",
    "OUTER",
    "ROOT",
    "TRANSPARENT",
    "Claim",
    "Group",
    "InnerTree",
    "Shape",
    "compile_shape",
    "fits_empty",
    "fits_structure",
    "match",
    "may_shape",
    "request_text",
    "shaped",
]

#: Request vertex types that stand for the replica or its node rather than for parts of it.
TRANSPARENT = frozenset({"slot", "node"})
#: Request vertex types at or above a node: looked through, counts not multiplied.
OUTER = frozenset({"node", "cluster", "rack", "switch", "block", "zone", "rack_group"})
CORE, GPU = "core", "gpu"
#: The level of the node itself (above its top-level inner vertices).
ROOT = -1
#: Steps of one match's backtracking before it gives up and answers "does not fit" (conservative).
MAX_STEPS = 20_000
EPS = 1e-9


@dataclass(eq=False)
class InnerTree:
    """A node's inner tree, flattened in depth-first order (vertex ids are positions in that order)."""

    types: list[str]
    sizes: list[int]
    parent: list[int]
    children: list[list[int]]
    top: list[int]
    #: GPU indices in each vertex's subtree, ascending.
    gpus_under: list[tuple[int, ...]]
    #: Cores in each vertex's subtree (sum of ``core`` vertex sizes).
    cores_under: list[float]
    #: Types that have at least one vertex with children (what a childless group request may mean).
    containers: frozenset[str]
    described: frozenset[str]
    #: Equal for trees of the same shape (same types, sizes and nesting): interchangeable nodes.
    signature: tuple[tuple[str, int, int], ...]
    _nearest: dict[tuple[int, str], tuple[int, ...]] = field(default_factory=dict, repr=False)
    _path: dict[int, tuple[int, ...]] = field(default_factory=dict, repr=False)

    @staticmethod
    def of(inner: Sequence[InnerVertex]) -> InnerTree | None:
        """The flattened tree, or None for an empty one."""
        if not inner:
            return None
        types: list[str] = []
        sizes: list[int] = []
        parent: list[int] = []
        children: list[list[int]] = []
        gpu_of: list[tuple[int, ...]] = []
        next_gpu = 0

        def visit(v: InnerVertex, up: int) -> int:
            nonlocal next_gpu
            me = len(types)
            types.append(v.type)
            sizes.append(v.size)
            parent.append(up)
            children.append([])
            if v.type == GPU:
                gpu_of.append(tuple(range(next_gpu, next_gpu + v.size)))
                next_gpu += v.size
            else:
                gpu_of.append(())
            for c in v.children:
                children[me].append(visit(c, me))
            return me

        top = [visit(v, ROOT) for v in inner]
        n = len(types)
        gpus_under: list[tuple[int, ...]] = [()] * n
        cores_under = [0.0] * n
        for v in range(n - 1, -1, -1):  # children come after their parent in depth-first order
            gs = list(gpu_of[v])
            cores = float(sizes[v]) if types[v] == CORE else 0.0
            for c in children[v]:
                gs.extend(gpus_under[c])
                cores += cores_under[c]
            gpus_under[v] = tuple(sorted(gs))
            cores_under[v] = cores
        return InnerTree(
            types=types,
            sizes=sizes,
            parent=parent,
            children=children,
            top=top,
            gpus_under=gpus_under,
            cores_under=cores_under,
            containers=frozenset(types[v] for v in range(n) if children[v]),
            described=frozenset(types),
            signature=tuple(zip(types, sizes, parent, strict=True)),
        )

    @property
    def gpus(self) -> tuple[int, ...]:
        """Every GPU index the tree describes."""
        return tuple(sorted(g for v in self.top for g in self.gpus_under[v]))

    def nearest(self, at: int, kind: str) -> tuple[int, ...]:
        """The nearest vertices of type ``kind`` below ``at`` (``ROOT``: the node), in depth-first order."""
        key = (at, kind)
        hit = self._nearest.get(key)
        if hit is None:
            out: list[int] = []
            stack = list(reversed(self.top if at == ROOT else self.children[at]))
            while stack:
                v = stack.pop()
                if self.types[v] == kind:
                    out.append(v)
                else:
                    stack.extend(reversed(self.children[v]))
            hit = self._nearest[key] = tuple(out)
        return hit

    def size_under(self, at: int, kind: str) -> int:
        """Sum of the sizes of the nearest ``kind`` vertices below ``at``."""
        return sum(self.sizes[v] for v in self.nearest(at, kind))

    def path(self, v: int) -> tuple[int, ...]:
        """``v`` and its ancestors (the node itself excluded)."""
        hit = self._path.get(v)
        if hit is None:
            out = []
            while v != ROOT:
                out.append(v)
                v = self.parent[v]
            hit = self._path[out[0]] = tuple(out)
        return hit


@dataclass(frozen=True)
class Group:
    """One group request vertex compiled against a tree: ``count`` distinct vertices of ``type``, each
    holding ``kids`` plus ``cores`` cores and ``gpus`` GPUs (bound to it), and leaf vertices of at least
    ``amounts`` in size (``memory``...; checked, not accounted)."""

    type: str
    count: int
    kids: tuple[Group, ...] = ()
    cores: float = 0.0
    gpus: int = 0
    amounts: tuple[tuple[str, float], ...] = ()
    #: Held by its slot alone (RFC 14: the default inside a slot).
    exclusive: bool = False


@dataclass(frozen=True)
class Shape:
    """One replica's request compiled against one tree: its groups, the GPUs it asks for outside any
    group (floating), and its node-level leaf amounts of described types (checked on the empty node)."""

    groups: tuple[Group, ...]
    gpus: int
    amounts: tuple[tuple[str, float], ...]


@dataclass
class Claim:
    """What one replica takes: GPU indices, and ``(vertex, cores)`` bound to vertices it chose."""

    gpus: list[int] = field(default_factory=list)
    cores: list[tuple[int, float]] = field(default_factory=list)


def request_text(request: Sequence[FluxResource]) -> str:
    """A Flux request as text: equal requests of different jobs have equal texts (they match a node
    alike), so engines key their caches and item types by it."""
    return "[" + ",".join(r.model_dump_json() for r in request) + "]"


def shaped(request: Sequence[FluxResource], milli: int) -> bool:
    """Whether a unit with this request must be matched against nodes' inner trees: it names sockets or
    other inner vertices (:func:`may_shape`) and takes whole GPUs (shares are judged on totals)."""
    return bool(request) and not milli and may_shape(request)


def may_shape(request: Sequence[FluxResource]) -> bool:
    """Whether a request names anything beyond amounts (a socket, NUMA domain, memory vertex...): only
    such requests can be refused by a node's shape. Cheap, tree-independent."""
    stack = list(request)
    while stack:
        r = stack.pop()
        if r.type not in OUTER and r.type not in TRANSPARENT and r.type not in (CORE, GPU):
            return True
        stack.extend(r.with_)
    return False


def compile_shape(request: Sequence[FluxResource], tree: InnerTree) -> Shape:
    """``request`` (one replica's Flux resources) as groups and amounts on ``tree`` (module docstring)."""
    groups, _cores, gpus, amounts = _level(request, tree, 1, not _has_slot(request))
    return Shape(groups=tuple(groups), gpus=gpus, amounts=tuple(sorted(amounts.items())))


def _has_slot(request: Sequence[FluxResource]) -> bool:
    stack = list(request)
    while stack:
        r = stack.pop()
        if r.type == "slot":
            return True
        stack.extend(r.with_)
    return False


def _level(
    request: Sequence[FluxResource], tree: InnerTree, mult: int, in_slot: bool
) -> tuple[list[Group], float, int, dict[str, float]]:
    groups: list[Group] = []
    cores, gpus = 0.0, 0
    amounts: dict[str, float] = {}
    for r in request:
        n = r.count.min
        if r.type in OUTER:
            sub = _level(r.with_, tree, mult, in_slot)
        elif r.type == "slot" or (r.with_ and r.type not in tree.described):
            sub = _level(r.with_, tree, mult * n, in_slot or r.type == "slot")
        elif r.with_ or (r.type in tree.containers and r.type not in (CORE, GPU)):
            kids, k_cores, k_gpus, k_amounts = _level(r.with_, tree, 1, in_slot)
            own = r.exclusive if r.exclusive is not None else in_slot
            group = Group(r.type, n, tuple(kids), k_cores, k_gpus, tuple(sorted(k_amounts.items())), own)
            groups.extend([group] * mult)
            continue
        else:
            if r.type in tree.described:
                amounts[r.type] = amounts.get(r.type, 0.0) + n * mult
                if r.type == CORE:
                    cores += n * mult
                elif r.type == GPU:
                    gpus += n * mult
            continue
        groups.extend(sub[0])
        cores += sub[1]
        gpus += sub[2]
        for k, a in sub[3].items():
            amounts[k] = amounts.get(k, 0.0) + a
    # ``amounts`` has every described leaf type (cores and GPUs too): inside a group they are compared
    # with the chosen vertex's sizes, at the node level with the tree's totals (on the empty node only).
    return groups, cores, gpus, amounts


class _GiveUp(Exception):
    pass


#: A group to place: the replica that owns it, its slot's token, the group.
_Item = tuple[int, int, Group]


class _Search:
    """One backtracking search over a tree. ``pools[i]`` is where shape ``i`` takes GPUs from: the
    shared set of free GPUs, or — for a replica already placed — its own GPUs (fixed by the decision; only
    its cores may be arranged again). ``holds`` are the vertices taken so far, each with the slot that
    took it (its replica, a token — one per top-level group item, inherited by its kids) and whether
    exclusively.
    Mutated on the way down, restored on the way back."""

    def __init__(self, tree: InnerTree, pools: list[set[int]], steps: int):
        self.tree = tree
        self.pools = pools
        self.load = [0.0] * len(tree.types)  # cores bound inside each vertex's subtree
        self.holds: list[tuple[int, int, int, bool]] = []
        self.steps = steps

    def _clashes(self, v: int, owner: int, token: int, exclusive: bool) -> bool:
        """Whether ``v`` is already the vertex of another slot of the same replica (Flux counts distinct
        vertices), lies in or is another slot's exclusive vertex, or (when ``exclusive``) holds or is
        another slot's vertex."""
        path = self.tree.path
        for u, who, other, excl in self.holds:
            if other == token:
                continue
            if (who == owner and u == v) or (excl and u in path(v)) or (exclusive and v in path(u)):
                return True
        return False

    def _room(self, owner: int, v: int) -> tuple[int, float, int]:
        t = self.tree
        pool = self.pools[owner]
        return (sum(1 for g in t.gpus_under[v] if g in pool), t.cores_under[v] - self.load[v], v)

    def groups(self, items: Sequence[_Item], at: int, claims: list[Claim]) -> Iterator[None]:
        if not items:
            yield
            return
        (owner, token, g), rest = items[0], items[1:]
        cands = sorted(self.tree.nearest(at, g.type), key=lambda v: self._room(owner, v))
        yield from self._pick((owner, token, g), cands, 0, g.count, rest, at, claims)

    def _pick(
        self,
        item: _Item,
        cands: list[int],
        start: int,
        left: int,
        rest: Sequence[_Item],
        at: int,
        claims: list[Claim],
    ) -> Iterator[None]:
        if left == 0:
            yield from self.groups(rest, at, claims)
            return
        for i in range(start, len(cands) - left + 1):  # increasing positions: distinct vertices
            self.steps -= 1
            if self.steps < 0:
                raise _GiveUp
            for _ in self._inside(item, cands[i], claims):
                yield from self._pick(item, cands, i + 1, left - 1, rest, at, claims)

    def _inside(self, item: _Item, v: int, claims: list[Claim]) -> Iterator[None]:
        owner, token, g = item
        if self._clashes(v, owner, token, g.exclusive):
            return
        # Deeper groups first, so that the group's own leaves take what they leave.
        for _ in self.groups([(owner, token, k) for k in g.kids], v, claims):
            taken = self._take(owner, g, v, claims[owner])
            if taken is not None:
                self.holds.append((v, owner, token, g.exclusive))
                yield
                self.holds.pop()
                self._give_back(owner, g, v, taken, claims[owner])

    def _take(self, owner: int, g: Group, v: int, claim: Claim) -> tuple[int, ...] | None:
        t = self.tree
        for kind, amount in g.amounts:
            if t.size_under(v, kind) < amount - EPS:
                return None
        path = t.path(v)
        if g.cores and any(self.load[w] + g.cores > t.cores_under[w] + EPS for w in path):
            return None
        gpus: tuple[int, ...] = ()
        if g.gpus:
            pool = self.pools[owner]
            here = [x for x in t.gpus_under[v] if x in pool]
            if len(here) < g.gpus:
                return None
            gpus = tuple(here[: g.gpus])
            pool.difference_update(gpus)
        if g.cores:
            for w in path:
                self.load[w] += g.cores
            claim.cores.append((v, g.cores))
        claim.gpus.extend(gpus)
        return gpus

    def _give_back(self, owner: int, g: Group, v: int, gpus: tuple[int, ...], claim: Claim) -> None:
        if g.cores:
            for w in self.tree.path(v):
                self.load[w] -= g.cores
            claim.cores.pop()
        self.pools[owner].update(gpus)
        if gpus:
            del claim.gpus[-len(gpus) :]


def match(
    tree: InnerTree,
    shapes: Sequence[Shape],
    free_gpus: Iterable[int],
    held: Sequence[Collection[int] | None] | None = None,
    *,
    max_steps: int = MAX_STEPS,
) -> list[Claim] | None:
    """Claims for all ``shapes`` together on one node (one per shape, in order), or None when they do not
    fit. ``free_gpus``: whole GPUs free now. ``held[i]``, when given, are the GPUs replica ``i`` already
    holds (placed earlier in the decision): it is matched again with exactly those, its cores may move —
    the decision records GPU indices, not cores, so every arrangement that fits is as good. Floating GPUs
    (outside groups) come last: a held replica's remaining own GPUs, else the lowest free ones."""
    free = set(free_gpus)
    owned = list(held) if held is not None else [None] * len(shapes)
    pools = [free if h is None else set(h) for h in owned]
    search = _Search(tree, pools, max_steps)
    claims = [Claim() for _ in shapes]
    items = [
        (i, token, g) for token, (i, g) in enumerate((i, g) for i, s in enumerate(shapes) for g in s.groups)
    ]
    try:
        for _ in search.groups(items, ROOT, claims):
            out: list[Claim] = []
            spare = sorted(free)
            k = 0
            for i, (c, s) in enumerate(zip(claims, shapes, strict=True)):
                if owned[i] is None:
                    extra = spare[k : k + s.gpus]
                    k += s.gpus
                else:
                    extra = sorted(pools[i])[: s.gpus]
                if len(extra) < s.gpus:
                    return None  # independent of the groups' choices: they take the same number of GPUs
                out.append(Claim(gpus=sorted([*c.gpus, *extra]), cores=list(c.cores)))
            return out
    except _GiveUp:
        return None
    return None


def fits_empty(tree: InnerTree, request: Sequence[FluxResource]) -> bool:
    """Whether the node, empty, can hold one replica asking for ``request``."""
    shape = compile_shape(request, tree)
    if any(tree.size_under(ROOT, kind) < amount - EPS for kind, amount in shape.amounts):
        return False
    return not shape.groups or match(tree, [shape], tree.gpus) is not None


def fits_structure(inner: Sequence[InnerVertex], request: Sequence[FluxResource]) -> bool:
    """Whether a node whose inner tree is ``inner`` can hold one replica asking for ``request``."""
    tree = InnerTree.of(inner)
    return tree is None or fits_empty(tree, request)
