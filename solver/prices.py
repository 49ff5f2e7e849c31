"""What capacity costs: a price catalog per GPU type / TPU generation and capacity class, and the cost of
a decision.

Why in the solver and not the topology: prices are a policy input (the same cluster priced for a cost study
under different contracts), and a user overrides them per run (``placer place --prices FILE``). The
defaults (``solver/data/prices.json``) are indicative public list prices with their sources noted there.

A node's hourly price is its own ``price_per_hour`` when the inventory gives one; otherwise its GPUs (or,
for CPU-only nodes, its cores) priced by the catalog for its capacity class. A replica costs its share of
its node: its GPUs over the node's GPUs (fractional shares count their fraction), or, for CPU-only work, its
cores over the node's cores. TPU replicas cost their chips.

>>> cat = PriceCatalog.default()
>>> [cat.gpu_hour("nvidia-h100", c) for c in ("spot", "reserved", "on-demand")]
[4.9, 7.8, 12.29]
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solver.decision import Decision
from solver.jobs.errors import JobValidationError, issue
from topology import Cluster, Node

CLASSES = ("on-demand", "spot", "reserved")

ClassPrices = dict[str, float]


class PriceCatalog(BaseModel):
    """Dollars per accelerator-hour (GPU, TPU chip) and per CPU core-hour, by capacity class."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: dict[str, ClassPrices] = Field(default_factory=dict)
    tpu: dict[str, ClassPrices] = Field(default_factory=dict)
    cpu_core: ClassPrices = Field(default_factory=dict)
    unknown_gpu: ClassPrices = Field(default_factory=dict)

    @staticmethod
    def default() -> PriceCatalog:
        return _default()

    def merged(self, override: PriceCatalog) -> PriceCatalog:
        """These prices with ``override``'s entries replacing theirs (per type and class)."""

        def merge(a: dict[str, ClassPrices], b: dict[str, ClassPrices]) -> dict[str, ClassPrices]:
            out = {k: dict(v) for k, v in a.items()}
            for k, v in b.items():
                out.setdefault(k, {}).update(v)
            return out

        return PriceCatalog(
            gpu=merge(self.gpu, override.gpu),
            tpu=merge(self.tpu, override.tpu),
            cpu_core={**self.cpu_core, **override.cpu_core},
            unknown_gpu={**self.unknown_gpu, **override.unknown_gpu},
        )

    def gpu_hour(self, gpu_type: str | None, capacity_class: str) -> float:
        table = self.gpu.get(gpu_type or "", self.unknown_gpu)
        return table.get(capacity_class, table.get("on-demand", 0.0))

    def tpu_chip_hour(self, generation: str, capacity_class: str) -> float:
        table = self.tpu.get(generation, {})
        return table.get(capacity_class, table.get("on-demand", 0.0))

    def node_hour(self, node: Node) -> float:
        """The node's own price, else its GPUs (or cores) at catalog prices."""
        if node.price_per_hour is not None:
            return node.price_per_hour
        if node.gpu_count:
            return node.gpu_count * self.gpu_hour(node.gpu_type, node.capacity_class)
        table = self.cpu_core
        return node.cpu_cores * table.get(node.capacity_class, table.get("on-demand", 0.0))


@lru_cache(maxsize=1)
def _default() -> PriceCatalog:
    data = json.loads(files("solver").joinpath("data/prices.json").read_text())
    data.pop("_about", None)
    return PriceCatalog.model_validate(data)


def load_prices(obj_or_text: Any, *, source: str = "prices") -> PriceCatalog:
    """The default catalog with a user's prices (same shape, any subset) on top; ``JobValidationError``
    naming the field for anything malformed."""
    if isinstance(obj_or_text, str):
        from solver.jobs.parse import parse_json, parse_yaml

        text = obj_or_text
        obj = (
            parse_json(text, source=source) if text.lstrip()[:1] in "{[" else parse_yaml(text, source=source)
        )
    else:
        obj = obj_or_text
    if isinstance(obj, dict):
        obj = {k: v for k, v in obj.items() if k != "_about"}
    try:
        override = PriceCatalog.model_validate(obj)
    except ValidationError as e:
        raise JobValidationError(
            [issue("type", ".".join(str(p) for p in err["loc"]) or source, err["msg"]) for err in e.errors()]
        ) from None
    bad = [
        (f"{section}.{name}.{cls}", v)
        for section, table in (("gpu", override.gpu), ("tpu", override.tpu))
        for name, prices in table.items()
        for cls, v in prices.items()
        if cls not in CLASSES or v < 0
    ]
    if bad:
        raise JobValidationError(
            [
                issue("range", path, "prices are per capacity class (on-demand, spot, reserved) and >= 0")
                for path, _ in bad
            ]
        )
    return PriceCatalog.default().merged(override)


def price_decision(decision: Decision, cluster: Cluster, prices: PriceCatalog) -> float:
    """Fill each placement's ``cost_per_hour`` (its replicas' share of their nodes) and return the total."""
    total = 0.0
    for p in decision.placements:
        cost = 0.0
        for r in p.replicas:
            if r.tpu_pod is not None:
                pod = cluster.tpu_pod(r.tpu_pod)
                cost += len(r.tpu_chips) * prices.tpu_chip_hour(pod.generation, pod.capacity_class)
                continue
            if not cluster.has_node(r.node):
                continue
            node = cluster.node(r.node)
            hour = prices.node_hour(node)
            if node.gpu_count and (r.gpus or r.gpu_milli):
                share = (r.gpu_milli / 1000) if r.gpu_milli is not None else len(r.gpus)
                cost += hour * share / node.gpu_count
            elif node.cpu_cores:
                cost += hour * r.cpu_cores / node.cpu_cores
        p.cost_per_hour = round(cost, 4)
        total += cost
    return round(total, 4)
