"""What the solver's replicas cost: :mod:`placer.solver.prices`' one pricing function over snapshot indices.

Why a solver-side wrapper: the engines hold replicas as node and pod *indices* with a per-replica
:class:`~placer.solver.demand.Need`, not as Decision replicas; this prices them with the very function that
prices the Decision and that the checker uses (:func:`placer.solver.prices.node_share_units`,
:func:`placer.solver.prices.pod_share_units`), in the same integer money units (hundredths of a cent per
hour),
so that a budget greedy or CP-SAT keeps is a budget the checker finds kept. Per-node arrays (one replica of
a unit on every node at once) serve greedy's node choice and the cheapest-cost estimate of explanations;
they follow the same arithmetic, vectorized.

>>> from placer.topology import capacity_pool, cluster_of
>>> from placer.solver.snapshot import Snapshot
>>> from placer.solver.demand import Need
>>> pricing = Pricing(Snapshot.of(cluster_of(capacity_pool(spot=1, on_demand=1))), PriceCatalog.default())
>>> pricing.node_costs(Need(gpus=1)).tolist()  # one H100 on the spot node, then on the on-demand node
[49000, 122900]
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any

import numpy as np

from placer.solver.assignment import ReplicaAt
from placer.solver.candidates import UnitCandidates
from placer.solver.demand import JobPlan, Need, Unit
from placer.solver.prices import UNITS_PER_DOLLAR, PriceCatalog, node_share_units, pod_share_units
from placer.solver.snapshot import Snapshot

__all__ = ["Pricing"]


class Pricing:
    """Prices of one decision's replicas, cached (a batch repeats the same few needs)."""

    def __init__(
        self, snap: Snapshot, prices: PriceCatalog, cache: MutableMapping[object, Any] | None = None
    ) -> None:
        """``cache``: where per-node prices may be kept across decisions on the same nodes (a session's
        node arrays): they depend on node facts and the catalog only."""
        self.snap, self.prices, self._cache = snap, prices, cache
        self._one: dict[tuple[int, Need, bool], int] = {}
        self._arrays: dict[tuple[Need, bool], np.ndarray] = {}
        self._hour: np.ndarray | None = None
        self._gpus: np.ndarray | None = None
        self._cores: np.ndarray | None = None
        self._codes: np.ndarray | None = None
        self._priced: bool | None = None

    # -- exact, one replica at a time (budgets, CP-SAT coefficients) ---------------------------------------
    def on_node(self, node: int, need: Need, whole: bool = False) -> int:
        """Money units per hour of one replica of ``need`` on node ``node`` (snapshot index); ``whole``:
        it holds the node exclusively and pays all of it."""
        key = (node, need, whole)
        hit = self._one.get(key)
        if hit is None:
            n = self.snap.nodes[node].node
            hit = node_share_units(n, need.gpus, need.milli or None, need.cpu, self.prices, whole=whole)
            self._one[key] = hit
        return hit

    def on_pod(self, pod: int, chips: int) -> int:
        """Money units per hour of ``chips`` chips of TPU pod ``pod`` (snapshot index)."""
        return pod_share_units(self.snap.pods[pod].pod, chips, self.prices)

    def replica(self, r: ReplicaAt) -> int:
        """Money units per hour of one placed replica, exactly as the Decision will price it."""
        if r.pod is not None:
            return self.on_pod(r.pod, len(r.chips))
        if r.node is None:
            return 0
        return self.on_node(r.node, r.unit.need, r.unit.exclusive)

    def replicas(self, reps: Iterable[ReplicaAt]) -> int:
        """Money units per hour of a job's replicas."""
        return sum(self.replica(r) for r in reps)

    # -- vectorized, per node (node choice, estimates) -----------------------------------------------------
    @property
    def nodes_priced(self) -> bool:
        """Whether any node has a price: when none does, every node costs the same (nothing) and the
        dollar key cannot tell nodes apart, so node choice skips it. Answered once per decision (node
        choice asks it for every replica)."""
        if self._priced is None:
            self._priced = bool(self._node_hour().any())
        return self._priced

    def _node_hour(self) -> np.ndarray:
        """Per node: its price per hour, GPU count and cores (computed once per decision)."""
        if self._hour is None:
            kept = self._cache.get("__hour__") if self._cache is not None else None
            if kept is not None and kept[0] is self.prices:
                self._hour, self._gpus, self._cores = kept[1:]
                return self._hour
            nodes = self.snap.nodes
            self._hour = np.fromiter((self.prices.node_hour(v.node) for v in nodes), np.float64, len(nodes))
            self._gpus = np.fromiter((v.node.gpu_count for v in nodes), np.float64, len(nodes))
            self._cores = np.fromiter((v.node.cpu_cores for v in nodes), np.float64, len(nodes))
            if self._cache is not None:
                self._cache["__hour__"] = (self.prices, self._hour, self._gpus, self._cores)
        return self._hour

    def node_costs(self, need: Need, whole: bool = False) -> np.ndarray:
        """Money units per hour of one replica of ``need`` on each node (int64 array, shared: do not
        modify); the arithmetic of :func:`placer.solver.prices.node_share_units`, vectorized; ``whole``:
        the node's whole price (an exclusive replica)."""
        hit = self._arrays.get((need, whole))
        if hit is None:
            hour = self._node_hour()
            gpus, cores = self._gpus, self._cores
            assert gpus is not None and cores is not None
            with np.errstate(divide="ignore", invalid="ignore"):
                by_cores = np.where(cores > 0, hour * need.cpu / cores, 0.0)
                if whole:
                    dollars = hour
                elif need.gpus or need.milli:
                    share = need.milli / 1000 if need.milli else need.gpus
                    dollars = np.where(gpus > 0, hour * share / gpus, by_cores)
                else:
                    dollars = by_cores
            hit = np.rint(dollars * UNITS_PER_DOLLAR).astype(np.int64)
            self._arrays[(need, whole)] = hit
        return hit

    def price_codes(self) -> np.ndarray:
        """Per node, a code that is equal for nodes any replica costs the same on (their price per hour,
        GPU count and cores): symmetry classes must not merge nodes of different prices."""
        if self._codes is None:
            hour = self._node_hour()
            ids: dict[tuple[float, int, float], int] = {}
            self._codes = np.fromiter(
                (
                    ids.setdefault((float(hour[v.idx]), v.node.gpu_count, v.node.cpu_cores), len(ids))
                    for v in self.snap.nodes
                ),
                dtype=np.int64,
                count=len(self.snap.nodes),
            )
        return self._codes

    def cheapest(self, plan: JobPlan, cands: list[UnitCandidates]) -> int:
        """The least a job could cost per hour: each unit's replicas at the cheapest node that could hold
        one now (else ever), TPU units at the cheapest pod of their generation. What an explanation
        quotes as the job's price when it did not run."""
        total = 0
        for unit, cand in zip(plan.units, cands, strict=True):
            total += unit.replicas * self._cheapest_unit(unit, cand)
        return total

    def _cheapest_unit(self, unit: Unit, cand: UnitCandidates) -> int:
        if unit.tpu is not None:
            chips = unit.tpu.chip_count or 0
            costs = [
                self.on_pod(pv.idx, chips)
                for pv in self.snap.pods
                if pv.pod.usable and (not unit.tpu.type or pv.pod.generation == unit.tpu.type)
            ]
            return min(costs, default=0)
        mask = cand.now if cand.now.any() else cand.static
        if not mask.any():
            return 0
        return int(self.node_costs(unit.need, unit.exclusive)[mask].min())
