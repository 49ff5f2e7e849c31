"""FGD's fragmentation measure (Weng et al., "Beware of Fragmentation", USENIX ATC '23), defined once.

A *target workload* is a distribution of task shapes ``m`` (CPU, GPUs per task, milli per GPU, where it may
run) with probabilities ``p_m`` (:class:`Targets`). For a node with free CPU ``C`` and free GPU milli
``a_1..a_G`` (total ``T``), the fragment *for task m* is ``T`` when ``m`` cannot run there at all (it needs
no GPU, may not use the node, lacks CPU, or fewer than its GPU count of GPUs have its share free), else
the free milli of the GPUs too full for ``m``. The node's fragmentation is the expectation over the
target workload (:func:`fragmentation`).

Why one module: the engines' ``fgd`` scorer (:mod:`placer.solver.scorers`) and the fill experiment's FGD
baselines (:mod:`placer.scenarios.fill.policies.fgd`) must measure the same thing, in whatever units their
callers hold (greedy: cores; the fill: milli-CPU) — the measure only compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from placer.solver.candidates import UnitCandidates
from placer.solver.demand import JobPlan
from placer.topology.inventory import ReplicaAllocation

__all__ = [
    "COARSE_LEVELS",
    "MAX_SHAPES",
    "MILLI",
    "SCORE_LEVELS",
    "BatchShapes",
    "Learned",
    "Shape",
    "Targets",
    "batch_shapes",
    "drift",
    "fragmentation",
    "fragmentation_after_share",
    "fragments",
    "fragments_after_share",
    "quantized",
    "running_shapes",
    "shape_of",
    "target_workload",
]

#: Milli per whole GPU.
MILLI = 1000
#: A task shape: (CPU, milli per GPU, GPU count).
Shape = tuple[float, int, int]
#: Shapes kept in a target workload, heaviest first: the measure's cost grows with them.
MAX_SHAPES = 32
#: Integer score levels of the FGD artifact's plugin (``int(100 x sigmoid(.))``, kube's MaxNodeScore).
SCORE_LEVELS = 100
#: Coarser levels for whole-GPU and CPU-only replicas, whose increases barely tell nodes apart: more of
#: their near-equal nodes tie, and the next key packs them (``placer-frag`` in the fill experiment).
COARSE_LEVELS = 25


@dataclass(frozen=True, eq=False)
class Targets:
    """FGD's target workload: per task shape ``m`` its probability ``p``, CPU (in the caller's unit: cores
    for the engines, milli-CPU for the fill), milli per GPU (0 for CPU-only), GPU count, and ``access``:
    where ``m`` may run, indexed as its maker needs (the engines: ``[node, m]``; the fill: ``[m, GPU
    model]``). :func:`fragmentation` takes the per-node access matrix as its own argument."""

    p: np.ndarray
    cpu: np.ndarray
    milli: np.ndarray
    num: np.ndarray
    access: np.ndarray
    #: The weight of the lightest shape kept when heavier ones crowded others out (0: none was dropped):
    #: a shape that arrives later lighter than this would not have made it in either.
    floor: float = 0.0

    @property
    def size(self) -> int:
        return int(self.p.size)

    @cached_property
    def levels(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct milli per GPU of the shapes, and each shape's index into them."""
        levels, col = np.unique(self.milli, return_inverse=True)
        return levels, col.reshape(-1)

    @cached_property
    def keys(self) -> tuple[tuple[float, int, int, bytes], ...]:
        """Each shape's identity, column by column: CPU, milli, GPU count and its packed ``access`` column.
        Two targets' columns with the same key have the same :func:`fragments` on every node state, so a
        cache of fragments keeps them when the target changes (only the weights or other shapes moved)."""
        cols = np.packbits(self.access, axis=0)
        return tuple(
            (float(self.cpu[m]), int(self.milli[m]), int(self.num[m]), cols[:, m].tobytes())
            for m in range(self.size)
        )

    def columns(self, picked: list[int]) -> Targets:
        """The target of the shapes ``picked`` only (their columns, in that order; probabilities as they
        are, no longer summing to 1): what :func:`fragments` needs to count new columns alone. Its
        ``access`` is in C order, as every other target's: numpy's column selection gives Fortran order,
        which the compiled counts would take as a second signature to compile."""
        sel = np.array(picked, dtype=np.int64)
        return Targets(
            p=self.p[sel],
            cpu=self.cpu[sel],
            milli=self.milli[sel],
            num=self.num[sel],
            access=np.ascontiguousarray(self.access[:, sel]),
        )


def target_workload(
    plans: list[JobPlan],
    candidates: dict[int, list[UnitCandidates]],
    n: int,
    *,
    running: Mapping[Shape, float] | None = None,
    profile: Mapping[Shape, float] | None = None,
    learned: Learned | None = None,
    gpu_count: np.ndarray | None = None,
    max_shapes: int = MAX_SHAPES,
    batch: BatchShapes | None = None,
) -> Targets:
    """The target workload a decision measures fragmentation against.

    With ``profile`` (a caller's shape -> weight, ``Policy.target_workload``), that profile. Otherwise the
    batch plus ``running`` (the running replicas' shapes with their counts): each node unit of a job that
    has candidates is a shape (its replica's CPU, GPUs and GPU share) that may use the nodes its hard
    constraints allow, weighted by its replicas; running shapes add their count to the batch's shape of the
    same size, and the others may use any node with enough GPUs (``gpu_count[n]``). CPU-only units are
    shapes too (their free GPUs are fragments, as in the FGD artifact); TPU units are not (they use no
    node). The ``max_shapes`` heaviest shapes are kept (FGD's artifact keeps the most popular shapes too)
    and their weights renormalized.

    With ``learned`` (what a :class:`~placer.solver.session.Session` has seen arrive, decayed), the batch
    plus that instead of the running replicas: arrivals keep the nodes their hard constraints allowed (a
    pod that may only use T4 nodes counts against T4 nodes only), which running replicas do not tell.
    ``batch``: :func:`batch_shapes` of ``plans``, when the caller has it.

    Why the running work: it is what an online scheduler has seen arrive, the best estimate it has of what
    arrives next (FGD's paper uses the whole trace, which no scheduler knows in advance).
    """
    weight: dict[tuple[float, int, int, bytes], float] = {}
    masks: dict[bytes, np.ndarray] = {}
    if learned is not None and profile is None:
        weight.update(learned.weights)
        masks.update(learned.masks)
        running = None
    if profile is None:
        batch_weight, batch_masks = batch if batch is not None else batch_shapes(plans, candidates)
        masks.update(batch_masks)
        for key, w in batch_weight.items():
            weight[key] = weight.get(key, 0.0) + w
    extra = dict(profile) if profile is not None else dict(running or {})
    by_size: dict[Shape, tuple[float, int, int, bytes]] = {}
    for key in weight:
        by_size.setdefault(key[:3], key)
    for shape, w in sorted(extra.items()):
        if w <= 0:
            continue
        same = by_size.get(shape)
        if same is None:
            counts = gpu_count if gpu_count is not None else np.zeros(n, dtype=np.int64)
            ok = counts >= shape[2] if shape[2] else np.ones(n, dtype=bool)
            mask = np.packbits(ok).tobytes()
            masks.setdefault(mask, ok)
            same = by_size[shape] = (*shape, mask)
        weight[same] = weight.get(same, 0.0) + w
    ranked = sorted(weight, key=lambda k: (-weight[k], k[:3], k[3]))
    keys = ranked[:max_shapes]
    floor = weight[keys[-1]] if len(ranked) > max_shapes else 0.0
    keys.sort(key=lambda k: (k[:3], k[3]))
    weights = np.array([weight[k] for k in keys], dtype=np.float64)
    return Targets(
        p=weights / weights.sum() if weights.size else weights,
        cpu=np.array([k[0] for k in keys], dtype=np.float64),
        milli=np.array([k[1] for k in keys], dtype=np.int64),
        num=np.array([k[2] for k in keys], dtype=np.int64),
        access=np.stack([masks[k[3]] for k in keys], axis=1) if keys else np.zeros((n, 0), dtype=bool),
        floor=floor,
    )


def batch_shapes(plans: list[JobPlan], candidates: dict[int, list[UnitCandidates]]) -> BatchShapes:
    """The batch's node units as target shapes, each with the nodes its hard constraints allow (the
    packed mask is part of the key), weighted by replicas."""
    weight: dict[tuple[float, int, int, bytes], float] = {}
    masks: dict[bytes, np.ndarray] = {}
    for plan in plans:
        cands = candidates.get(plan.idx)
        if cands is None:
            continue
        for unit, cand in zip(plan.units, cands, strict=True):
            if unit.tpu is None and unit.replicas > 0:
                mask = np.packbits(cand.static).tobytes()
                masks.setdefault(mask, cand.static)
                key = (*shape_of(unit.need.cpu, unit.need.gpus, unit.need.milli), mask)
                weight[key] = weight.get(key, 0.0) + unit.replicas
    return weight, masks


#: A batch's node units as target shapes: (CPU, milli, GPU count, packed node mask) -> replicas, and the
#: masks by their packed bytes (:func:`batch_shapes`).
BatchShapes = tuple[dict[tuple[float, int, int, bytes], float], dict[bytes, np.ndarray]]


@dataclass(eq=False)
class Learned:
    """The shapes a session has seen arrive, with where each may run, decayed: every replica seen
    multiplies the weight of everything seen before by ``0.5 ** (1 / HALF_LIFE)``, so the profile follows a
    workload that changes, over about ``HALF_LIFE`` arrivals.

    It also keeps the *target in force*: the target workload made from it at some arrival, used until the
    replicas seen since reach ``REFRESH_SHARE`` of all seen (at least ``REFRESH_MIN``), or a batch brings
    a shape it did not know, heavy enough to be among the target's shapes (:attr:`Targets.floor`).
    Why not a new target per decision: FGD's measure of every node is computed
    against the target, and a target that moves with each arrival makes every node's cached measure stale,
    which cost a one-pod decision ten times what deciding it did. A profile of thousands of arrivals barely
    moves in a sixteenth of them; FGD's paper keeps one target for the whole run.
    """

    #: Replicas after which an arrival counts half.
    HALF_LIFE = 10_000
    #: The target in force is made again when the replicas seen since it was made reach this share of all
    #: replicas seen so far (so about 16 targets per doubling of what was seen) ...
    REFRESH_SHARE = 1 / 16
    #: ... and at least this many (the first arrivals change the profile most). When it is due, the new
    #: target replaces the one in force only if it moved by more than ``DRIFT`` (:func:`drift`: the share
    #: of probability that moved); else the one in force is re-affirmed and every cached measure stays.
    REFRESH_MIN = 16.0
    DRIFT = 0.02

    #: Weights as stored: each shape's weight is ``raw x scale`` (:attr:`weights`). Why: decaying every
    #: shape at every arrival was a pass over the whole profile per one-pod decision; the decay is one
    #: factor on ``scale`` instead, folded back into ``raw`` (and the forgotten shapes dropped) only when
    #: ``scale`` falls below :data:`_RESCALE`.
    raw: dict[tuple[float, int, int, bytes], float]
    masks: dict[bytes, np.ndarray]
    scale: float = 1.0
    #: The target in force (None until the first decision makes one).
    target: Targets | None = None
    #: The shapes the target in force was made from (a batch with another shape makes a new one).
    known: frozenset[tuple[float, int, int, bytes]] = frozenset()
    #: Replicas seen since the target in force was made, and in all.
    since: float = 0.0
    total: float = 0.0

    def in_force(self, batch: BatchShapes) -> Targets | None:
        """The target in force, if it still stands for a decision on ``batch`` (its shapes known and not
        too much seen since); None when a new one should be made."""
        t = self.target
        if t is None or self.since >= max(self.REFRESH_MIN, self.REFRESH_SHARE * self.total):
            return None
        floor = t.floor * 0.5 ** (self.since / self.HALF_LIFE)
        if any(w > floor for k, w in batch[0].items() if k not in self.known):
            return None
        return t

    def target_for(self, batch: BatchShapes, make: Callable[[], Targets]) -> tuple[Targets, bool]:
        """The target a decision on ``batch`` measures against, and whether it is the one in force
        re-affirmed (pass both to :meth:`seen`): the one in force while it stands (:meth:`in_force`);
        when one is due, ``make()``'s, unless that barely moved from the one in force (:meth:`settled`)."""
        standing = self.in_force(batch)
        if standing is not None:
            return standing, False
        fresh = make()
        target = self.settled(fresh)
        return target, target is not fresh

    def settled(self, fresh: Targets) -> Targets:
        """``fresh`` (a target made now, when :meth:`in_force` said one is due), or the target in force
        when ``fresh`` is within :attr:`DRIFT` of it: a target that barely moved keeps every cached
        measure (pass it to :meth:`seen` with ``reaffirmed=True``)."""
        old = self.target
        return old if old is not None and drift(old, fresh) <= self.DRIFT else fresh

    def seen(
        self,
        plans: list[JobPlan],
        candidates: dict[int, list[UnitCandidates]],
        *,
        batch: BatchShapes | None = None,
        target: Targets | None = None,
        reaffirmed: bool = False,
    ) -> Learned:
        """The profile after the batch's arrivals (a new object; this one is unchanged). ``target``: the
        target the batch was decided against (the one in force, or a new one made from this profile and
        the batch); ``reaffirmed``: the one in force, kept by :meth:`settled` when a new one was due
        (it then counts as made now); ``batch``: :func:`batch_shapes` of the batch, when the caller has
        it."""
        weight, masks = batch if batch is not None else batch_shapes(plans, candidates)
        replicas = sum(weight.values())
        scale = self.scale * 0.5 ** (replicas / self.HALF_LIFE)
        if scale < _RESCALE:  # fold the decay back in; the shapes decayed to nothing are forgotten
            raw = {k: w * scale for k, w in self.raw.items() if w * scale > _FORGOTTEN}
            scale = 1.0
        else:
            raw = dict(self.raw)
        for k, w in weight.items():
            raw[k] = raw.get(k, 0.0) + w / scale
        kept = self.masks
        if len(raw) != len(self.raw) or any(k not in self.raw for k in weight):
            known = {**self.masks, **masks}
            kept = {k[3]: known[k[3]] for k in raw}  # the masks of shapes forgotten go too
        after = Learned(raw, kept, scale=scale, total=self.total + replicas)
        if target is not None and target is self.target and not reaffirmed:
            after.target, after.known, after.since = target, self.known, self.since + replicas
        elif target is not None:  # made (or re-affirmed) for this batch, from this profile and the batch
            after.target, after.known = target, frozenset(self.raw) | frozenset(weight)
        return after

    def moved(self, source: np.ndarray) -> Learned:
        """The profile on a cluster whose node ``i`` takes the place of node ``source[i]`` of this one
        (-1: a node this one never had, which no shape seen may use). Nodes joining or leaving keep what a
        session has seen arrive: each shape's mask is moved row by row (shapes whose masks become equal
        add up), the weights and counts stand; the target in force goes (its ``access`` is per node), so
        the next decision makes one from the moved profile.

        >>> m = np.array([True, False, True])
        >>> seen = Learned({(1.0, 1, 0, np.packbits(m).tobytes()): 2.0}, {np.packbits(m).tobytes(): m})
        >>> [v.tolist() for v in seen.moved(np.array([2, 0, -1])).masks.values()]  # node 1 left, one joined
        [[True, True, False]]
        """
        keep = source >= 0
        raw: dict[tuple[float, int, int, bytes], float] = {}
        masks: dict[bytes, np.ndarray] = {}
        for (a, b, c, old), w in self.raw.items():
            mask = np.where(keep, self.masks[old][np.where(keep, source, 0)], False)
            packed = np.packbits(mask).tobytes()
            masks.setdefault(packed, mask)
            raw[(a, b, c, packed)] = raw.get((a, b, c, packed), 0.0) + w
        return Learned(raw, masks, scale=self.scale, total=self.total)

    @property
    def weights(self) -> dict[tuple[float, int, int, bytes], float]:
        """Each shape seen with its decayed weight (those decayed below :data:`_FORGOTTEN` left out)."""
        return {k: w * self.scale for k, w in self.raw.items() if w * self.scale > _FORGOTTEN}


#: A :class:`Learned` shape's weight below which it is forgotten, and the scale below which the decay is
#: folded back into the stored weights (about 20 half-lives: a float has room to spare).
_FORGOTTEN = 1e-6
_RESCALE = 1e-6


def drift(a: Targets, b: Targets) -> float:
    """The share of probability that moved between two target workloads: half the summed absolute
    difference of their shapes' probabilities (total variation), a shape being its CPU, milli, GPU count
    and the nodes it may use; a shape only one of them has counts in full.

    >>> ones = np.ones((2, 1), dtype=bool)
    >>> a = Targets(p=np.array([1.0]), cpu=np.array([4.0]), milli=np.array([1000]), num=np.array([1]),
    ...             access=ones)
    >>> b = Targets(p=np.array([0.9, 0.1]), cpu=np.array([4.0, 8.0]), milli=np.array([1000, 0]),
    ...             num=np.array([1, 0]), access=np.ones((2, 2), dtype=bool))
    >>> round(drift(a, b), 6), drift(a, a)
    (0.1, 0.0)
    """

    def keyed(t: Targets) -> dict[tuple[float, int, int, bytes], float]:
        return dict(zip(t.keys, t.p.tolist(), strict=True))

    pa, pb = keyed(a), keyed(b)
    return 0.5 * sum(abs(pa.get(k, 0.0) - pb.get(k, 0.0)) for k in pa.keys() | pb.keys())


def shape_of(cpu: float, gpus: int, milli: int) -> Shape:
    """A task shape as FGD counts it: (CPU, milli per GPU, GPU count); a share is one GPU at its milli.

    >>> shape_of(4, 2, 0), shape_of(1, 0, 250), shape_of(8, 0, 0)
    ((4.0, 1000, 2), (1.0, 250, 1), (8.0, 0, 0))
    """
    num, milli = (gpus, MILLI) if gpus else ((1, milli) if milli else (0, 0))
    return (float(cpu), milli, num)


def running_shapes(replicas: Iterable[ReplicaAllocation]) -> dict[Shape, float]:
    """The shapes of running replicas on nodes, with their counts (TPU replicas use no node)."""
    out: dict[Shape, float] = {}
    for r in replicas:
        if r.node is None:
            continue
        gpus, milli = (0, r.gpu_milli) if r.gpu_milli is not None else (len(r.gpus), 0)
        shape = shape_of(r.cpu_cores, gpus, milli or 0)
        out[shape] = out.get(shape, 0.0) + 1.0
    return out


def quantized(delta: np.ndarray, levels: int = SCORE_LEVELS) -> np.ndarray:
    """The FGD artifact's node score for a fragmentation increase ``delta`` (milli-GPUs): ``int(levels x
    sigmoid(-delta / 1000))``, higher is better. Increases that land in the same integer are ties: near-
    equal nodes then go to the next keys (best fit for shares, node order), which pack them consistently.

    >>> quantized(np.array([-2000.0, -10.0, 0.0, 10.0, 30.0, 2000.0])).tolist()
    [88, 50, 50, 49, 49, 11]
    """
    return (levels / (1.0 + np.exp(np.clip(delta, -50_000, 50_000) / 1000.0))).astype(np.int64)


def fragments(cpu: np.ndarray, gpu: np.ndarray, access: np.ndarray, t: Targets) -> np.ndarray:
    """FGD's GPU fragment (milli-GPUs) of ``K`` node states for each task shape of ``t``, ``[k, m]``: free
    CPU cores ``cpu[K]``, free milli per GPU ``gpu[K, G]`` (0 for GPUs a node lacks), ``access[K, M]``.

    The fragment for task shape ``m`` is every free GPU milli when ``m`` cannot run on the node at all (it
    needs no GPU, may not use the node, lacks CPU, or fewer than its GPU count of GPUs have its share
    free), else the free milli of the GPUs too full for ``m`` (the definition of
    ``scenarios/fill/policies/fgd.py``, on greedy's amounts). Why per shape and not only the expectation
    (:func:`fragmentation`): a column depends on its shape alone, never on the weights, so a caller that
    keeps the columns answers a re-weighted target with a product, not a recount.

    >>> t = Targets(p=np.array([0.5, 0.5]), cpu=np.array([4.0, 1.0]), milli=np.array([1000, 500]),
    ...             num=np.array([1, 1]), access=np.ones((1, 2), dtype=bool))
    >>> fragments(np.array([8.0]), np.array([[1000, 300]]), np.ones((1, 2), dtype=bool), t).tolist()
    [[300.0, 300.0]]
    """
    total = gpu.sum(axis=1).astype(np.float64)
    if t.size == 0:
        return np.zeros((len(cpu), 0))
    levels, col = t.levels
    g = gpu[:, :, None]
    fits = (g >= levels[None, None, :]).sum(axis=1)[:, col]  # GPUs with m's share free, (K, M)
    below = (g * (g < levels[None, None, :])).sum(axis=1)[:, col].astype(np.float64)  # too-full GPUs' milli
    ok = access & (cpu[:, None] + 1e-9 >= t.cpu[None, :]) & (fits >= t.num[None, :]) & (t.num[None, :] > 0)
    return np.where(ok, below, total[:, None])


def fragmentation(cpu: np.ndarray, gpu: np.ndarray, access: np.ndarray, t: Targets) -> np.ndarray:
    """FGD's expected GPU fragment (milli-GPUs) of ``K`` node states: :func:`fragments`' per-shape
    fragments weighted by the target workload's probabilities.

    >>> t = Targets(p=np.array([0.5, 0.5]), cpu=np.array([4.0, 1.0]), milli=np.array([1000, 500]),
    ...             num=np.array([1, 1]), access=np.ones((1, 2), dtype=bool))
    >>> fragmentation(np.array([8.0]), np.array([[1000, 300]]), np.ones((1, 2), dtype=bool), t).tolist()
    [300.0]
    """
    return fragments(cpu, gpu, access, t) @ t.p


def fragments_after_share(
    cpu: np.ndarray, gpu: np.ndarray, milli: int, access: np.ndarray, t: Targets
) -> np.ndarray:
    """:func:`fragments` of ``K`` nodes after a share of ``milli`` is taken from each one of their GPUs in
    turn: ``[k, g, m]`` is node ``k``'s fragment for shape ``m`` with ``milli`` less free on GPU ``g`` (and
    CPU ``cpu[k]``, already net of the share's CPU). Only GPUs with ``milli`` free are meaningful.

    Why not :func:`fragments` on ``K x G`` copies of the nodes: taking from one GPU moves each shape's
    count of fitting GPUs and milli of too-full GPUs by that GPU's terms alone, so the per-GPU answers
    come from the node's sums in ``K x G x M`` steps instead of ``K x G x G x M``.

    >>> t = Targets(p=np.array([0.5, 0.5]), cpu=np.array([4.0, 1.0]), milli=np.array([1000, 500]),
    ...             num=np.array([1, 1]), access=np.ones((1, 2), dtype=bool))
    >>> fragments_after_share(np.array([8.0]), np.array([[1000, 600]]), 200, np.ones((1, 2), dtype=bool), t)
    array([[[1400.,    0.],
            [ 400.,  400.]]])
    """
    k = len(cpu)
    if t.size == 0:
        return np.zeros((k, gpu.shape[1], 0))
    levels, col = t.levels
    g = gpu[:, :, None]  # (K, G, 1) against levels (L,)
    ge = g >= levels
    fits = ge.sum(axis=1)  # (K, L)
    below = (g * ~ge).sum(axis=1)  # (K, L)
    h = g - milli  # the GPU after the share
    he = h >= levels
    fits_after = fits[:, None, :] - ge + he  # (K, G, L)
    below_after = below[:, None, :] - g * ~ge + h * ~he
    total_after = (gpu.sum(axis=1) - milli).astype(np.float64)  # (K,)
    fits_m, below_m = fits_after[:, :, col], below_after[:, :, col].astype(np.float64)  # (K, G, M)
    static = access & (cpu[:, None] + 1e-9 >= t.cpu[None, :]) & (t.num[None, :] > 0)  # (K, M)
    ok = static[:, None, :] & (fits_m >= t.num)
    return np.where(ok, below_m, total_after[:, None, None])


def fragmentation_after_share(
    cpu: np.ndarray, gpu: np.ndarray, milli: int, access: np.ndarray, t: Targets
) -> np.ndarray:
    """:func:`fragmentation` of ``K`` nodes after a share of ``milli`` is taken from each one of their
    GPUs in turn: ``[k, g]`` is node ``k``'s fragmentation with ``milli`` less free on GPU ``g``
    (:func:`fragments_after_share` weighted by the target's probabilities).

    >>> t = Targets(p=np.array([0.5, 0.5]), cpu=np.array([4.0, 1.0]), milli=np.array([1000, 500]),
    ...             num=np.array([1, 1]), access=np.ones((1, 2), dtype=bool))
    >>> gpu, acc = np.array([[1000, 600]]), np.ones((1, 2), dtype=bool)
    >>> fragmentation_after_share(np.array([8.0]), gpu, 200, acc, t).tolist()
    [[700.0, 400.0]]
    >>> [fragmentation(np.array([8.0]), np.array(g), acc, t).tolist() for g in ([[800, 600]], [[1000, 400]])]
    [[700.0], [400.0]]
    """
    return fragments_after_share(cpu, gpu, milli, access, t) @ t.p
