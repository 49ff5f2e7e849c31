"""A cluster design of a cost study: which nodes, how many, bought how (spot, on-demand, reserved).

Why pools with shares and not only a scenario ``cluster`` block: the question a cost study asks is "32
H100 nodes, 25 % spot, 50 % on-demand, 25 % reserved — or 24 reserved and 16 spot?", and a design should
say that in one line. A :class:`Pool` is one machine type (a :mod:`placer.topology.presets` builder) with a
node
count and the shares bought spot and reserved (the rest on-demand); it becomes one builder entry per
capacity class, nodes named ``{prefix}-{class}-{i}`` (``dgx-h100-spot-3``; a lone node has no ``-{i}``).
Any other cluster — racks, zones, a site's inventory file — is a :class:`Design` with a scenario
``cluster`` block instead.

Shares become node counts by largest remainder, so the counts always add up to ``nodes`` and round the
way a person would:

>>> Pool(nodes=32, spot=0.25, reserved=0.25).counts()
{'reserved': 8, 'on-demand': 16, 'spot': 8}
>>> Pool(nodes=10, spot=1 / 3).counts()
{'reserved': 0, 'on-demand': 7, 'spot': 3}
>>> d = Design.of("quarter-spot", 32, spot=0.25, reserved=0.25)
>>> [next(iter(b.values()))["capacity_class"] for b in d.cluster_spec().builders]
['reserved', 'on-demand', 'spot']
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from placer.scenarios.spec import AutoscalingSpec, ClusterSpec

__all__ = ["CAPACITY_CLASSES", "Design", "Machine", "Pool"]

#: Capacity classes in the order a design lists them (the one paid for whether used or not first).
CAPACITY_CLASSES = ("reserved", "on-demand", "spot")

#: Machines a pool may name: node builders of :mod:`placer.topology.presets` (``count`` is racks for NVL72).
Machine = Literal["dgx_h100", "hgx_a100", "gb200_nvl72", "pcie_inference"]

#: Node-name prefix of each machine when the pool names none (the builders' own default names).
_PREFIX = {"dgx_h100": "dgx-h100", "hgx_a100": "hgx-a100", "gb200_nvl72": "nvl72"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Pool(_Model):
    """``nodes`` machines of one kind; ``spot`` and ``reserved`` are the shares (0-1) bought that way,
    on-demand is the rest. ``options``: further builder arguments (``nodes_per_rack``, ``zones``; for
    ``pcie_inference`` ``gpu`` and ``gpus_per_node``). ``name``: the node-name prefix (needed when a
    design has two pools of one machine). For ``gb200_nvl72`` ``nodes`` counts racks of 18 trays."""

    machine: Machine = "dgx_h100"
    nodes: int = Field(ge=0, le=100_000)
    spot: float = Field(default=0.0, ge=0, le=1)
    reserved: float = Field(default=0.0, ge=0, le=1)
    name: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]{0,40}$")
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Pool:
        if self.spot + self.reserved > 1 + 1e-9:
            raise ValueError("spot + reserved shares must be at most 1 (on-demand is the rest)")
        clash = sorted({"count", "n", "racks", "capacity_class", "name"} & set(self.options))
        if clash:
            raise ValueError(f"set {', '.join(clash)} through the pool (nodes, spot/reserved, name)")
        return self

    @property
    def prefix(self) -> str:
        if self.name:
            return self.name
        if self.machine == "pcie_inference":
            return str(self.options.get("gpu", "nvidia-l4")).split("-", 1)[-1]
        return _PREFIX[self.machine]

    def counts(self) -> dict[str, int]:
        """Nodes per capacity class: the shares of ``nodes``, rounded by largest remainder (ties to the
        class listed first: reserved, on-demand, spot)."""
        shares = {"reserved": self.reserved, "on-demand": max(0.0, 1 - self.spot - self.reserved)}
        shares["spot"] = self.spot
        exact = {c: self.nodes * s for c, s in shares.items()}
        out = {c: math.floor(x + 1e-9) for c, x in exact.items()}
        left = self.nodes - sum(out.values())
        for c in sorted(CAPACITY_CLASSES, key=lambda c: -(exact[c] - out[c]))[: max(0, left)]:
            out[c] += 1
        return out

    def builders(self) -> list[dict[str, dict[str, Any]]]:
        """Scenario builder entries, one per capacity class with nodes."""
        return [
            {
                self.machine: {
                    **self.options,
                    "count": n,
                    "capacity_class": cls,
                    "name": f"{self.prefix}-{cls}",
                }
            }
            for cls, n in self.counts().items()
            if n
        ]


class Design(_Model):
    """One cluster design: ``pools`` (machine types split over capacity classes) or ``cluster`` (a
    scenario ``cluster`` block as written in a scenario file: builders, a layout or a file), and
    optionally ``autoscaling``: node groups an autoscaler adds to it when jobs wait and removes when idle
    (a scenario ``autoscaling`` block, ``docs/simulator.md``), billed from request to removal."""

    name: str = Field(min_length=1, max_length=80)
    description: str = ""
    pools: list[Pool] | None = None
    cluster: ClusterSpec | None = None
    autoscaling: AutoscalingSpec | None = None

    @model_validator(mode="after")
    def _one(self) -> Design:
        if (self.pools is None) == (self.cluster is None):
            raise ValueError("give exactly one of pools or cluster")
        if self.pools is not None:
            if not self.pools:
                raise ValueError("a design needs at least one pool")
            prefixes = [p.prefix for p in self.pools]
            dup = sorted({p for p in prefixes if prefixes.count(p) > 1})
            if dup:
                raise ValueError(f"pools share the node-name prefix {', '.join(dup)}: give each a name")
        return self

    @classmethod
    def of(
        cls,
        name: str,
        nodes: int,
        *,
        machine: Machine = "dgx_h100",
        spot: float = 0.0,
        reserved: float = 0.0,
        description: str = "",
        **options: Any,
    ) -> Design:
        """A one-pool design: ``Design.of("mix", 32, spot=0.25, reserved=0.25)`` is 32 DGX H100 nodes,
        8 spot, 16 on-demand and 8 reserved."""
        pool = Pool(machine=machine, nodes=nodes, spot=spot, reserved=reserved, options=options)
        return cls(name=name, description=description, pools=[pool])

    def cluster_spec(self) -> ClusterSpec:
        """The design as a scenario ``cluster`` block."""
        if self.cluster is not None:
            return self.cluster
        assert self.pools is not None
        return ClusterSpec(name=self.name, builders=[b for p in self.pools for b in p.builders()])
