"""Capacity reservations (OJS ML resources §8.3; Flux/SSS ``ReservationId``): declared, held, expiring.

A reservation holds whole nodes (``nodes``) or a number of GPUs on given nodes (``gpus: {node: count}``)
from ``start`` to ``end``. While it is held, only jobs naming it (``ext_ml_reservation_id``) may use that
capacity, and they may use nothing else (§8.3: "MUST NOT dispatch the job to a worker outside the reserved
capacity pool"). ``timeout_s``: when none of its members runs in it and more than that has passed since its
start, its unused capacity is released (a job naming it then waits, ``RESERVATION_INACTIVE``).

*Who is a member running in it* (:func:`running_members`): a running job whose own envelope names the
reservation (``ext_ml_reservation_id``, :attr:`placer.topology.RunningJob.reservation`) and that holds
something
on one of its nodes. Why not "any job on the reserved capacity": §8.3 ties a job to a reservation only by
that id, and a job that merely sits on a reserved node (it started before the reservation, or evictions
left it there) is not using the reservation; counting it would keep an abandoned reservation held forever.
Placer is stateless, so "in use" is judged on what runs now: a member that ran and ended earlier does not
keep the reservation held.

Every node a reservation names must exist in the cluster and a GPU count may not exceed the node's GPUs
(:func:`check_against`): a typo would otherwise hold nothing, silently.

The file form (``placer place --reservations FILE``) is a JSON/YAML list of these objects, or what Slurm's
``scontrol show reservation`` prints (:mod:`placer.topology.importers.slurm_reservations`: each reservation
its nodes whole, from its start to its end; a Slurm job's ``--reservation`` names it);
``placer schema reservations`` prints its JSON Schema.

>>> r = Reservation.model_validate({"id": "nightly", "gpus": {"dgx-1": 4}})
>>> r.state(datetime(2026, 1, 1, tzinfo=UTC), running_members=0)
'active'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from placer.solver.jobs.errors import JobValidationError, issue
from placer.topology.importers.slurm_reservations import is_show_reservation_text

if TYPE_CHECKING:
    from placer.topology import Cluster

__all__ = ["Reservation", "State", "check_against", "load_reservations", "now_utc", "running_members"]

State = Literal["active", "not_started", "ended", "released"]


class Reservation(BaseModel):
    """One reservation as a cluster declares it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    nodes: list[str] = Field(default_factory=list)
    gpus: dict[str, int] = Field(default_factory=dict)
    start: datetime | None = None
    end: datetime | None = None
    timeout_s: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _check(self) -> Reservation:
        if bool(self.nodes) == bool(self.gpus):
            raise ValueError(
                "give either nodes (whole nodes) or gpus ({node: count}), not both and not neither"
            )
        if any(c < 1 for c in self.gpus.values()):
            raise ValueError("gpus counts must be at least 1")
        for t in (self.start, self.end):
            if t is not None and t.tzinfo is None:
                raise ValueError("start and end need a time zone (RFC 3339)")
        if self.start and self.end and self.end <= self.start:
            raise ValueError("end must be after start")
        return self

    @property
    def node_names(self) -> list[str]:
        return sorted(self.nodes or self.gpus)

    def state(self, now: datetime, running_members: int) -> State:
        """``active`` while held; else why not. ``running_members``: how many of its members run in it now
        (:func:`running_members`); while any does, ``timeout_s`` does not release it."""
        if self.start is not None and now < self.start:
            return "not_started"
        if self.end is not None and now >= self.end:
            return "ended"
        if self.timeout_s is not None and running_members == 0:
            since = self.start or now
            if (now - since).total_seconds() > self.timeout_s:
                return "released"
        return "active"


_LIST = TypeAdapter(list[Reservation])


def running_members(r: Reservation, cluster: Cluster) -> int:
    """How many running jobs of ``cluster`` are members of ``r`` running in it: they name it
    (``RunningJob.reservation``) and hold something on one of its nodes (see the module docstring).

    >>> from placer.topology import cluster_of, dgx_h100
    >>> c = cluster_of(dgx_h100(2)).allocate(
    ...     {"job": "m", "reservation": "r", "replicas": [{"node": "dgx-h100-1", "gpus": [0]}]})
    >>> running_members(Reservation(id="r", nodes=["dgx-h100-1"]), c)
    1
    >>> running_members(Reservation(id="r", nodes=["dgx-h100-2"]), c)
    0
    """
    ids = {j for node in r.node_names if cluster.has_node(node) for j in cluster.usage(node).jobs}
    return sum(1 for j in ids if cluster.running_job(j).reservation == r.id)


def check_against(reservations: Sequence[Reservation], cluster: Cluster) -> None:
    """Raise :class:`JobValidationError` (path ``[i].nodes[k]`` / ``[i].gpus.<node>``) when a reservation
    names a node the cluster lacks, or reserves more GPUs of a node than it has. Why an error and not a
    no-op: such a reservation would hold nothing, and its members would be rejected as "too big" for it, a
    misleading answer to a typo."""
    problems = []
    for i, r in enumerate(reservations):
        for k, node in enumerate(r.nodes):
            if not cluster.has_node(node):
                problems.append(
                    issue(
                        "enum",
                        f"[{i}].nodes[{k}]",
                        f"reservation {r.id!r}: node {node!r} is not in the cluster",
                    )
                )
        for node, count in r.gpus.items():
            if not cluster.has_node(node):
                problems.append(
                    issue(
                        "enum",
                        f"[{i}].gpus.{node}",
                        f"reservation {r.id!r}: node {node!r} is not in the cluster",
                    )
                )
            elif count > cluster.node(node).gpu_count:
                problems.append(
                    issue(
                        "range",
                        f"[{i}].gpus.{node}",
                        f"reservation {r.id!r} reserves {count} GPUs of {node!r}, which has "
                        f"{cluster.node(node).gpu_count}",
                    )
                )
    if problems:
        raise JobValidationError(problems)


def load_reservations(
    obj_or_text: Any, *, source: str = "reservations", cluster: Cluster | None = None
) -> list[Reservation]:
    """Reservations from a parsed list or its JSON/YAML text; ``JobValidationError`` (code ``malformed`` /
    ``type``, path ``[i].field``) for anything wrong, and for duplicate ids. With ``cluster``, also the
    checks of :func:`check_against` (unknown nodes, too many GPUs)."""
    if isinstance(obj_or_text, str) and is_show_reservation_text(obj_or_text):
        obj = _from_slurm(obj_or_text, source, cluster)
    elif isinstance(obj_or_text, str):
        from placer.solver.jobs.parse import parse_json_or_yaml

        obj = parse_json_or_yaml(obj_or_text, source=source)
    else:
        obj = obj_or_text
    try:
        out = _LIST.validate_python(obj)
    except ValidationError as e:
        raise JobValidationError(
            [
                issue(
                    "type",
                    "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]) or source,
                    err["msg"],
                )
                for err in e.errors()
            ]
        ) from None
    seen: set[str] = set()
    for i, r in enumerate(out):
        if r.id in seen:
            raise JobValidationError(
                [issue("duplicate", f"[{i}].id", f"reservation id {r.id!r} appears twice")]
            )
        seen.add(r.id)
    if cluster is not None:
        check_against(out, cluster)
    return out


def _from_slurm(text: str, source: str, cluster: Cluster | None) -> list[dict[str, Any]]:
    """``scontrol show reservation`` text as reservation objects
    (:mod:`placer.topology.importers.slurm_reservations`); what placer cannot represent is a
    ``JobValidationError`` (code ``unsupported``) naming the reservation."""
    from placer.topology import TopologyError
    from placer.topology.importers.slurm_reservations import slurm_reservations

    def cores_of(name: str) -> int | None:
        if cluster is None or name not in cluster.structure.node_index:
            return None
        return int(cluster.node(name).cpu_cores)

    try:
        return slurm_reservations(text, source=source, cores_of=cores_of)
    except TopologyError as e:
        raise JobValidationError([issue("unsupported", p.item, p.message) for p in e.problems]) from None


def now_utc() -> datetime:
    return datetime.now(UTC)
