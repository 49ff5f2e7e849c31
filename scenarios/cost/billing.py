"""What a design costs over the horizon: every node, busy or idle, priced by the catalog and billed by
its capacity class.

Why per node and not per job: a cluster is rented by the node, and what a design costs includes the
capacity nobody used. The simulator's ``metrics.cost`` prices the held capacity (each run's share of its
nodes) and the whole fleet all the time (``fleet_cost_usd``); a cost study needs the bill in between,
because the three ways of buying capacity are paid differently (:class:`Billing`):

* **reserved** (a commitment): the whole horizon, used or not — ``always``;
* **on-demand**: only while a job holds the node (an ideal autoscaler gives idle nodes back at once and
  gets them again when needed, with no start-up delay: a lower bound of what on-demand costs) — ``used``;
* **spot**: likewise ``used``; a reclaimed node is never billed while it is away;
* a node of an **autoscaled** group (a design's ``autoscaling``): from its request to its removal, as a
  cloud bills a VM (``rule`` ``exists``; the simulator's ``nodes`` table), whatever its class.

``always`` for on-demand or spot prices a fixed fleet instead (minus the spot nodes' time away); with
everything ``always`` and no reclaims the bill equals the simulator's ``fleet_cost_usd``. A node held in
part (one GPU of eight) is billed whole, and a TPU pod is billed whole while any slice of it is held.
Prices are :meth:`placer.solver.prices.PriceCatalog.node_hour` / ``pod_hour``: the node's own price, else its
GPUs at catalog prices for its class.

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.prices import PriceCatalog
>>> c = cluster_of(dgx_h100(1, name="r", capacity_class="reserved"),
...                dgx_h100(1, name="s", capacity_class="spot"))
>>> empty = pd.DataFrame(columns=["nodes", "placed_s", "release_s"])
>>> b = bill(c, PriceCatalog.default(), empty, horizon_s=7200, away={})
>>> b[["node", "billed_h", "cost_usd"]].values.tolist()  # 8 x $7.80 x 2 h; the idle spot node: nothing
[['r', 2.0, 124.8], ['s', 0.0, 0.0]]
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from placer.scenarios.inputs.failures import NodeFailure
from placer.solver.prices import PriceCatalog
from placer.topology import Cluster

__all__ = ["Billing", "Rule", "bill", "reclaimed_seconds", "used_seconds"]

Rule = Literal["always", "used"]


class Billing(BaseModel):
    """Per capacity class: billed ``always`` (the whole horizon) or while ``used`` (held by a job).
    ``on-demand`` may be written ``on_demand``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    reserved: Rule = "always"
    on_demand: Rule = Field(default="used", alias="on-demand")
    spot: Rule = "used"

    def rule(self, capacity_class: str) -> Rule:
        return {"reserved": self.reserved, "on-demand": self.on_demand, "spot": self.spot}.get(
            capacity_class, self.on_demand
        )


def _union_s(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of ``[a, b)`` spans."""
    total, end = 0.0, -float("inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def used_seconds(attempts: pd.DataFrame, horizon_s: float) -> dict[str, float]:
    """Per node (or TPU pod): seconds any run held it, from placement to release, clipped to the
    horizon (the attempts table's ``nodes``, ``placed_s``, ``release_s``)."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for nodes, a, b in zip(attempts["nodes"], attempts["placed_s"], attempts["release_s"], strict=True):
        if b is None or pd.isna(b):
            continue
        a, b = max(0.0, float(a)), min(horizon_s, float(b))
        if b > a:
            for n in str(nodes).split(","):
                if n:
                    spans[n].append((a, b))
    return {n: _union_s(s) for n, s in spans.items()}


def reclaimed_seconds(reclaims: list[NodeFailure], start: datetime, horizon_s: float) -> dict[str, float]:
    """Per node: seconds reclaimed nodes were away inside the horizon (union of their reclaims)."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for f in reclaims:
        a = (f.down - start).total_seconds()
        b = horizon_s if f.up is None else (f.up - start).total_seconds()
        a, b = max(0.0, a), min(horizon_s, b)
        if b > a:
            spans[f.node].append((a, b))
    return {n: _union_s(s) for n, s in spans.items()}


def bill(
    cluster: Cluster,
    prices: PriceCatalog,
    attempts: pd.DataFrame,
    *,
    horizon_s: float,
    away: dict[str, float],
    billing: Billing | None = None,
    autoscaled: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per node and TPU pod: ``node, kind, capacity_class, gpu_type, gpus, price_per_hour,
    rule, used_h, away_h, billed_h, cost_usd``. ``away``: seconds each node was reclaimed
    (:func:`reclaimed_seconds`); ``attempts``: the run's attempts table; ``autoscaled``: the run's
    ``nodes`` table (a row each, ``kind`` ``autoscaled``, billed as it says)."""
    billing = billing or Billing()
    used = used_seconds(attempts, horizon_s) if not attempts.empty else {}
    rows = []
    items = [("node", n, n.gpu_type, n.gpu_count, prices.node_hour(n)) for n in cluster.nodes]
    items += [("tpu_pod", p, p.generation, p.chips, prices.pod_hour(p)) for p in cluster.tpu_pods()]
    for kind, thing, gpu_type, gpus, price in items:
        rule = billing.rule(thing.capacity_class)
        used_s = used.get(thing.name, 0.0)
        away_s = away.get(thing.name, 0.0)
        billed_s = max(0.0, horizon_s - away_s) if rule == "always" else used_s
        rows.append(
            {
                "node": thing.name,
                "kind": kind,
                "capacity_class": thing.capacity_class,
                "gpu_type": gpu_type,
                "gpus": gpus,
                "price_per_hour": price,
                "rule": rule,
                "used_h": used_s / 3600.0,
                "away_h": away_s / 3600.0,
                "billed_h": billed_s / 3600.0,
                "cost_usd": price * billed_s / 3600.0,
            }
        )
    for r in [] if autoscaled is None else autoscaled.to_dict("records"):
        rows.append(
            {
                "node": r["node"],
                "kind": "autoscaled",
                "capacity_class": r["capacity_class"],
                "gpu_type": None,
                "gpus": r["gpus"],
                "price_per_hour": r["price_per_hour"],
                "rule": "exists",
                "used_h": used.get(r["node"], 0.0) / 3600.0,
                "away_h": 0.0,
                "billed_h": r["billed_h"],
                "cost_usd": r["cost_usd"],
            }
        )
    return pd.DataFrame(rows)
