"""Rule 19: a Flux job's shape inside a node (sockets with their cores and GPUs) fits the node's inner
tree, together with every other shaped job placed there.

Why a rule of its own: rules 5 and 6 count a node's GPUs and cores as totals, and a jobspec asking for
"2 sockets, each with 2 cores and 1 GPU" is also satisfied, in totals, by two GPUs of one socket. The
decision names a replica's GPU indices and its number of cores, not which cores; so the rule asks
whether *some* arrangement exists: for each shaped replica on a node, a choice of the inner vertices its
request names (distinct vertices for one request vertex's count), such that

* each replica's bound GPUs lie where its choice says: for every vertex, the GPUs the replica's chosen
  vertices in that subtree ask for are at most the replica's own GPUs in that subtree (GPU k is the k-th
  ``gpu`` vertex in depth-first order); GPUs it asks for outside any socket may be any of its others;
* cores fit: for every vertex, the cores all shaped replicas bind inside its subtree are at most the
  cores the subtree holds;
* exclusivity (RFC 14, *exclusive*: true by default for a slot's resources, false elsewhere, an explicit
  value wins; a request without a ``slot`` vertex is one slot's contents): each top-level request vertex
  copy is one slot's; a vertex given to a slot exclusively is not given to any other slot, nor is a
  vertex inside it; a slot that takes a vertex exclusively takes none that is, or holds, another
  slot's vertex; and one replica's slots get distinct vertices (RFC 14 counts distinct resources).

Cores asked for outside any socket, and all cores of running jobs and of jobs without a shape, are not
tied to a vertex by the inputs; they need room somewhere, which is exactly rule 6's node total. (So the
cores of an exclusively held socket that its slot does not ask for are not withheld from unshaped jobs.)

Request semantics are those of ``docs/solver.md`` (*Flux shapes*): ``slot`` repeats its children
``count.min`` times, ``node`` and vertices above it are looked through, a type the tree does not describe
is looked through with its count multiplied, leaf types other than ``core`` and ``gpu`` are not checked
here. Written again from the documentation (no code shared with ``solver/structure.py``) and solved
differently: a search over vertex choices only, with GPUs counted per subtree rather than picked.

The search is exact up to :data:`MAX_STEPS` choices per node; a node that needs more is reported as not
verified (a violation: the checker passes nothing it could not verify).

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement as Rep
>>> from placer.solver.jobs.model import CountRange, FluxResource as R, Job, TaskGroup
>>> from placer.solver.checks.context import build_context
>>> from placer.topology import InnerVertex as V, Inventory, NodeSpec, build_cluster
>>> sock = V(type="socket", children=[V(type="core", size=4), V(type="gpu"), V(type="gpu")])
>>> n = NodeSpec(name="n", cpu_cores=8, gpus={"type": "nvidia-t4", "count": 4}, inner=[sock, sock])
>>> cluster = build_cluster(Inventory(nodes=[n]), source="t")
>>> one = CountRange(min=1)
>>> inside = [R(type="core", count=one), R(type="gpu", count=one)]
>>> want = [R(type="socket", count=CountRange(min=2), with_=inside)]
>>> job = Job(id="j", tasks=[TaskGroup(cpu_cores=2, gpu={"count": 2}, structure=want)])
>>> def rules(gpus):
...     d = Decision(placements=[JobPlacement(job="j", replicas=[Rep(node="n", gpus=gpus, cpu_cores=2)])])
...     return [v.rule for v in check_shapes(build_context(d, [job], cluster))]
>>> rules([0, 2]), rules([0, 1])  # GPUs 0-1 are socket 0's, 2-3 socket 1's
([], ['structure'])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from placer.solver.checks.context import EPS, Context, group_of
from placer.solver.checks.violation import Violation
from placer.solver.jobs.model import FluxResource
from placer.topology import InnerVertex, Node

__all__ = ["MAX_STEPS", "check_shapes"]

#: Vertex choices tried per node before the rule gives up (and reports the node as not verified).
MAX_STEPS = 200_000
#: Request types at or above a node: they stand for the replica's node.
_ABOVE = frozenset({"node", "cluster", "rack", "switch", "block", "zone", "rack_group"})


@dataclass
class _Tree:
    kind: list[str] = field(default_factory=list)
    up: list[int] = field(default_factory=list)
    kids: list[list[int]] = field(default_factory=list)
    tops: list[int] = field(default_factory=list)
    gpus: list[set[int]] = field(default_factory=list)  # GPU indices in the subtree
    cores: list[float] = field(default_factory=list)  # cores in the subtree
    kinds: set[str] = field(default_factory=set)  # every type in the tree
    containers: set[str] = field(default_factory=set)  # types of vertices with children

    def below(self, at: int, kind: str) -> list[int]:
        """Nearest vertices of ``kind`` under ``at`` (-1: the node itself)."""
        out: list[int] = []
        todo = list(self.tops if at < 0 else self.kids[at])
        while todo:
            v = todo.pop()
            if self.kind[v] == kind:
                out.append(v)
            else:
                todo.extend(self.kids[v])
        return sorted(out)

    def upwards(self, v: int) -> list[int]:
        out = []
        while v >= 0:
            out.append(v)
            v = self.up[v]
        return out


def _flatten(inner: Sequence[InnerVertex]) -> _Tree:
    t = _Tree()
    gpu_no = 0
    todo: list[tuple[InnerVertex, int]] = [(v, -1) for v in reversed(inner)]
    while todo:  # explicit stack, depth-first, children in order: vertex ids are depth-first positions
        vertex, parent = todo.pop()
        me = len(t.kind)
        t.kind.append(vertex.type)
        t.up.append(parent)
        t.kids.append([])
        (t.tops if parent < 0 else t.kids[parent]).append(me)
        own = set()
        if vertex.type == "gpu":
            own = set(range(gpu_no, gpu_no + vertex.size))
            gpu_no += vertex.size
        t.gpus.append(own)
        t.cores.append(float(vertex.size) if vertex.type == "core" else 0.0)
        todo.extend((c, me) for c in reversed(vertex.children))
    for v in range(len(t.kind) - 1, -1, -1):
        if t.up[v] >= 0:
            t.gpus[t.up[v]] |= t.gpus[v]
            t.cores[t.up[v]] += t.cores[v]
    t.kinds = set(t.kind)
    t.containers = {t.kind[v] for v in range(len(t.kind)) if t.kids[v]}
    return t


@dataclass
class _Slot:
    """One vertex a replica must be given: its type, the slot it lies in (-1: the node), the previous
    slot of the same request vertex (they take distinct vertices), what it binds there, the Flux task
    slot it belongs to (``owner``: the first vertex of that slot's copy) and whether it is exclusive."""

    replica: int
    parent: int
    kind: str
    prev: int
    cores: float = 0.0
    gpus: int = 0
    owner: int = -1
    exclusive: bool = False


def _mentions_slot(request: Sequence[FluxResource]) -> bool:
    return any(r.type == "slot" or _mentions_slot(r.with_) for r in request)


def _slots(
    request: Sequence[FluxResource],
    tree: _Tree,
    replica: int,
    parent: int,
    mult: int,
    out: list[_Slot],
    sloted: bool,
) -> None:
    kinds, containers = tree.kinds, tree.containers
    for r in request:
        n = r.count.min
        if r.type in _ABOVE:
            _slots(r.with_, tree, replica, parent, mult, out, sloted)
        elif r.type == "slot" or (r.with_ and r.type not in kinds):
            _slots(r.with_, tree, replica, parent, mult * n, out, sloted or r.type == "slot")
        elif r.with_ or (r.type in containers and r.type not in ("core", "gpu")):
            excl = sloted if r.exclusive is None else r.exclusive
            for _ in range(mult):
                owner = len(out) if parent < 0 else out[parent].owner  # a new copy of the slot
                prev = -1
                for _ in range(n):
                    me = len(out)
                    out.append(
                        _Slot(
                            replica=replica,
                            parent=parent,
                            kind=r.type,
                            prev=prev,
                            owner=owner,
                            exclusive=excl,
                        )
                    )
                    _slots(r.with_, tree, replica, me, 1, out, sloted)
                    prev = me
        elif parent >= 0 and r.type == "core" and "core" in kinds:
            out[parent].cores += n * mult
        elif parent >= 0 and r.type == "gpu" and "gpu" in kinds:
            out[parent].gpus += n * mult


class _TooLong(Exception):
    pass


def _arrangeable(tree: _Tree, slots: list[_Slot], gpus: list[set[int]]) -> bool:
    """Whether every slot can take a vertex (see the module docstring); ``gpus`` per replica."""
    at = [-1] * len(slots)
    core_load = [0.0] * len(tree.kind)
    gpu_load: list[dict[int, int]] = [{} for _ in gpus]
    bound = [0] * len(gpus)
    steps = [MAX_STEPS]

    def room(s: _Slot, v: int) -> bool:
        for w in tree.upwards(v):
            if s.cores and core_load[w] + s.cores > tree.cores[w] + EPS:
                return False
            if s.gpus and gpu_load[s.replica].get(w, 0) + s.gpus > len(tree.gpus[w] & gpus[s.replica]):
                return False
        return bound[s.replica] + s.gpus <= len(gpus[s.replica])

    def put(s: _Slot, v: int, sign: int) -> None:
        for w in tree.upwards(v):
            core_load[w] += sign * s.cores
            gpu_load[s.replica][w] = gpu_load[s.replica].get(w, 0) + sign * s.gpus
        bound[s.replica] += sign * s.gpus

    def apart(i: int, v: int) -> bool:
        """Whether giving ``v`` to ``slots[i]`` respects the task slots given vertices before it."""
        s = slots[i]
        mine = tree.upwards(v)
        for j in range(i):
            o = slots[j]
            if o.owner == s.owner:
                continue
            u = at[j]
            if s.replica == o.replica and u == v:
                return False
            if o.exclusive and u in mine:
                return False
            if s.exclusive and v in tree.upwards(u):
                return False
        return True

    def search(i: int) -> bool:
        if i == len(slots):
            return True
        s = slots[i]
        within = -1 if s.parent < 0 else at[s.parent]
        for v in tree.below(within, s.kind):
            if s.prev >= 0 and v <= at[s.prev]:
                continue  # distinct, and in increasing order (the slots of one vertex are alike)
            steps[0] -= 1
            if steps[0] < 0:
                raise _TooLong
            if not room(s, v) or not apart(i, v):
                continue
            put(s, v, 1)
            at[i] = v
            if search(i + 1):
                return True
            put(s, v, -1)
        at[i] = -1
        return False

    return search(0)


@dataclass
class _Shaped:
    job: str
    gpus: set[int]
    cores: float
    slots: list[_Slot]


def _describe(slots: list[_Slot]) -> str:
    """``2 socket(s) with 2 cores and 1 GPU(s) each``: one phrase per request vertex."""
    first: list[int] = []
    count: dict[int, int] = {}
    for i in range(len(slots)):
        root = i
        while slots[root].prev >= 0:
            root = slots[root].prev
        if root not in count:
            first.append(root)
        count[root] = count.get(root, 0) + 1
    phrases = []
    for i in first:
        s = slots[i]
        inside = f" inside each {slots[s.parent].kind}" if s.parent >= 0 else ""
        phrases.append(f"{count[i]} {s.kind}(s){inside} with {s.cores:g} cores and {s.gpus} GPU(s) each")
    return "; ".join(phrases)


def check_shapes(ctx: Context) -> Iterator[Violation]:
    """Every violation of rule 19 in the decision."""
    per_node: dict[str, list[_Shaped]] = {}
    trees: dict[str, _Tree] = {}
    for placement, job in ctx.placed:
        for rep in placement.replicas:
            node = ctx.node(rep)
            group = group_of(job, rep)
            if node is None or group is None or not group.structure or rep.gpu_milli is not None:
                continue
            if not node.spec.inner:
                continue  # no tree: judged by totals (rules 5, 6)
            tree = trees.get(node.name)
            if tree is None:
                tree = trees[node.name] = _flatten(node.spec.inner)
            here = per_node.setdefault(node.name, [])
            slots: list[_Slot] = []
            _slots(group.structure, tree, 0, -1, 1, slots, not _mentions_slot(group.structure))
            if slots:
                here.append(_Shaped(job.id, set(rep.gpus), rep.cpu_cores, slots))
    for name, shaped in per_node.items():
        yield from _node_violations(ctx.cluster.node(name), trees[name], shaped)


def _node_violations(node: Node, tree: _Tree, shaped: list[_Shaped]) -> Iterator[Violation]:
    alone_ok = True
    try:
        for s in shaped:
            if not _arrangeable(tree, s.slots, [s.gpus]):
                alone_ok = False
                yield Violation(
                    "structure",
                    s.job,
                    f"GPUs {sorted(s.gpus)} with {s.cores:g} cores cannot be arranged as the request's "
                    f"{_describe(s.slots)} on the node's inner tree",
                    node.name,
                )
        if not alone_ok or len(shaped) < 2:
            return
        slots: list[_Slot] = []
        for r, s in enumerate(shaped):
            base = len(slots)
            for t in s.slots:
                slots.append(
                    _Slot(
                        replica=r,
                        parent=t.parent + base if t.parent >= 0 else -1,
                        kind=t.kind,
                        prev=t.prev + base if t.prev >= 0 else -1,
                        cores=t.cores,
                        gpus=t.gpus,
                        owner=t.owner + base,
                        exclusive=t.exclusive,
                    )
                )
        if not _arrangeable(tree, slots, [s.gpus for s in shaped]):
            jobs = sorted({s.job for s in shaped})
            yield Violation(
                "structure",
                shaped[-1].job,
                f"the Flux shapes of {', '.join(jobs)} ({len(shaped)} replicas) do not fit the node's "
                "sockets together: no arrangement gives each its vertices without more cores on one than "
                "it holds",
                node.name,
            )
    except _TooLong:
        yield Violation(
            "structure",
            shaped[-1].job,
            f"the Flux shapes placed here could not be verified within {MAX_STEPS} choices",
            node.name,
        )
