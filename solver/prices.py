"""What capacity costs: a price catalog per GPU type / TPU generation and capacity class, and the cost of
a decision.

Why in the solver and not the topology: prices are a policy input (the same cluster priced for a cost study
under different contracts), and a user overrides them per run (``placer place --prices FILE``). The
defaults (``solver/data/prices.json``) are indicative public list prices with their sources noted there.

A node's hourly price is its own ``price_per_hour`` when the inventory gives one; otherwise its GPUs (or,
for CPU-only nodes, its cores) priced by the catalog for its capacity class. A replica costs its share of
its node: its GPUs over the node's GPUs (fractional shares count their fraction), or, for CPU-only work, its
cores over the node's cores. TPU replicas cost their chips.

One pricing function, :func:`replica_units` (over :func:`node_share_units` / :func:`pod_share_units`),
prices every replica: a placement of the decision, a running job's allocation, a replica the greedy engine
is about to place, a CP-SAT coefficient, and the checker's re-count of dollar budgets. It answers in
integer hundredths of a cent per hour (:data:`UNITS_PER_DOLLAR`), the precision ``cost_per_hour`` is
reported in, so that engines, budgets and checker add up the very same integers and never disagree over
a rounding.

Dollar budgets: a queue's ``ml_limits.max_cost_per_hour`` (queue configuration) and a tenant's
``budgets.tenants.<name>`` in the prices file (:class:`CostBudgets`): the running jobs' spend (not
evicted) plus the decision's placements stay within them; over budget means pending, never rejected.

>>> cat = PriceCatalog.default()
>>> [cat.gpu_hour("nvidia-h100", c) for c in ("spot", "reserved", "on-demand")]
[4.9, 7.8, 12.29]
>>> from placer.topology import cluster_of, dgx_h100
>>> node = cluster_of(dgx_h100(1)).node("dgx-h100")
>>> node_share_units(node, 2, None, 16, cat)  # two of its eight H100s: 2 x $12.29 in 1/100 cents
245800
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from importlib.resources import files
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from placer.solver.decision import Decision
from placer.solver.jobs.errors import JobValidationError, issue
from placer.solver.jobs.queues import MAX_BUDGET_PER_HOUR
from placer.topology import Cluster, Node, TpuPod
from placer.topology.inventory import MAX_DOLLARS_PER_HOUR

__all__ = [
    "CLASSES",
    "UNITS_PER_DOLLAR",
    "ClassPrices",
    "CostBudgets",
    "PriceCatalog",
    "load_prices",
    "load_prices_file",
    "node_share_units",
    "pod_share_units",
    "price_decision",
    "replica_units",
    "running_units",
    "to_units",
]

CLASSES = ("on-demand", "spot", "reserved")

#: Money units per dollar: prices and budgets are added up as integer hundredths of a cent per hour.
UNITS_PER_DOLLAR = 10_000

ClassPrices = dict[str, Annotated[float, Field(ge=0, le=MAX_DOLLARS_PER_HOUR)]]


class CostBudgets(BaseModel):
    """Dollar-per-hour limits that are not a queue's: per tenant (``Job.tenant``, ``RunningJob.tenant``).

    Why in the prices file: a tenant spans queues, and OJS queue configurations have no place for it; the
    prices file is the one money document a run is given (queue limits stay in the queue configuration,
    ``ml_limits.max_cost_per_hour``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenants: dict[str, Annotated[float, Field(ge=0, le=MAX_BUDGET_PER_HOUR)]] = Field(default_factory=dict)


class PriceCatalog(BaseModel):
    """Dollars per accelerator-hour (GPU, TPU chip) and per CPU core-hour, by capacity class."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: dict[str, ClassPrices] = Field(default_factory=dict)
    tpu: dict[str, ClassPrices] = Field(default_factory=dict)
    cpu_core: ClassPrices = Field(default_factory=dict)
    unknown_gpu: ClassPrices = Field(default_factory=dict)
    #: Dollar budgets that travel with the prices (tenant limits, $/h).
    budgets: CostBudgets = Field(default_factory=CostBudgets)

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
            budgets=CostBudgets(tenants={**self.budgets.tenants, **override.budgets.tenants}),
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

    def pod_hour(self, pod: TpuPod) -> float:
        """The TPU pod's own price, else its chips at catalog prices (what a whole pod costs per hour)."""
        if pod.price_per_hour is not None:
            return pod.price_per_hour
        return pod.chips * self.tpu_chip_hour(pod.generation, pod.capacity_class)


@lru_cache(maxsize=1)
def _default() -> PriceCatalog:
    data = json.loads(files(__package__).joinpath("data/prices.json").read_text())
    data.pop("_about", None)
    return PriceCatalog.model_validate(data)


def load_prices(obj_or_text: Any, *, source: str = "prices") -> PriceCatalog:
    """The default catalog with a user's prices (same shape, any subset) on top; ``JobValidationError``
    naming the field for anything malformed."""
    if isinstance(obj_or_text, str):
        from placer.solver.jobs.parse import parse_json_or_yaml

        obj = parse_json_or_yaml(obj_or_text, source=source)
    else:
        obj = obj_or_text
    if isinstance(obj, dict):
        obj = {k: v for k, v in obj.items() if k != "_about"}
    try:
        override = PriceCatalog.model_validate(obj)
    except ValidationError as e:
        raise JobValidationError(
            [
                issue(
                    "range" if err["type"] in ("greater_than_equal", "less_than_equal") else "type",
                    ".".join(str(p) for p in err["loc"]) or source,
                    err["msg"],
                )
                for err in e.errors()
            ]
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


def load_prices_file(path: str) -> PriceCatalog:
    """:func:`load_prices` over a UTF-8 JSON or YAML file: what ``--prices FILE`` reads for ``placer place``
    and ``placer check`` alike (``OSError`` when it cannot be read)."""
    from placer.solver.jobs.parse import read_utf8_file

    return load_prices(read_utf8_file(path), source=path)


def to_units(dollars: float) -> int:
    """Dollars per hour as integer money units (hundredths of a cent), rounded half to even."""
    return round(dollars * UNITS_PER_DOLLAR)


def node_share_units(
    node: Node,
    gpus: int,
    gpu_milli: int | None,
    cpu_cores: float,
    prices: PriceCatalog,
    *,
    whole: bool = False,
) -> int:
    """What a replica holding ``gpus`` GPUs (or one ``gpu_milli`` share) and ``cpu_cores`` cores of
    ``node`` costs per hour, in money units: its share of the node's price (GPUs over the node's GPUs;
    CPU-only work: cores over the node's cores). ``whole``: the replica holds the node exclusively
    (``dedicated``, ``exclusive_nodes``, a Flux slot's node) and pays all of it, whatever it uses."""
    hour = prices.node_hour(node)
    if whole:
        return to_units(hour)
    if node.gpu_count and (gpus or gpu_milli):
        share = gpu_milli / 1000 if gpu_milli is not None else gpus
        return to_units(hour * share / node.gpu_count)
    if node.cpu_cores:
        return to_units(hour * cpu_cores / node.cpu_cores)
    return 0


def pod_share_units(pod: TpuPod, chips: int, prices: PriceCatalog) -> int:
    """What ``chips`` TPU chips of ``pod`` cost per hour, in money units: their share of the pod's own
    price when it has one (as :meth:`PriceCatalog.pod_hour` and nodes' prices go), else catalog per chip.

    >>> from placer.topology import cluster_of, tpu_pod
    >>> pod = cluster_of(tpu_pod("v5e", shape=(4, 4), price_per_hour=16.0)).tpu_pods()[0]
    >>> pod_share_units(pod, 8, PriceCatalog.default()) / UNITS_PER_DOLLAR  # 8 of 16 chips of $16/h
    8.0
    """
    if pod.price_per_hour is not None:
        return to_units(pod.price_per_hour * chips / pod.chips)
    return to_units(chips * prices.tpu_chip_hour(pod.generation, pod.capacity_class))


def replica_units(cluster: Cluster, replica: Any, prices: PriceCatalog, *, whole: bool = False) -> int:
    """The one pricing function: a replica of a placement (:class:`~placer.solver.decision.ReplicaPlacement`)
    or
    of a running job's allocation (``placer.topology.ReplicaAllocation``) — both carry ``node``, ``gpus``,
    ``gpu_milli``, ``tpu_pod``, ``tpu_chips`` and ``cpu_cores`` — in money units per hour; 0 on a node or
    pod the cluster does not have (the checker reports those). ``whole``: the replica holds its node
    exclusively (see :func:`node_share_units`)."""
    if replica.tpu_pod is not None:
        try:
            pod = cluster.tpu_pod(replica.tpu_pod)
        except KeyError:
            return 0
        return pod_share_units(pod, len(replica.tpu_chips), prices)
    if replica.node is None or not cluster.has_node(replica.node):
        return 0
    node = cluster.node(replica.node)
    return node_share_units(
        node, len(replica.gpus), replica.gpu_milli, replica.cpu_cores, prices, whole=whole
    )


def running_units(cluster: Cluster, job: Any, prices: PriceCatalog) -> int:
    """A running job's spend per hour (``placer.topology.RunningJob``), priced from its allocation."""
    return sum(replica_units(cluster, r, prices) for r in job.replicas)


def price_decision(
    decision: Decision,
    cluster: Cluster,
    prices: PriceCatalog,
    whole: Callable[[str, str | None], bool] | None = None,
) -> float:
    """Fill each placement's ``cost_per_hour`` (its replicas' share of their nodes; the whole node for a
    replica ``whole(job, task group)`` says holds its node exclusively) and return the total."""
    total = 0
    for p in decision.placements:
        units = sum(
            replica_units(cluster, r, prices, whole=whole is not None and whole(p.job, r.task_group))
            for r in p.replicas
        )
        p.cost_per_hour = units / UNITS_PER_DOLLAR
        total += units
    return total / UNITS_PER_DOLLAR
