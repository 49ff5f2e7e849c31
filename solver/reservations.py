"""Capacity reservations (OJS ML resources §8.3; Flux/SSS ``ReservationId``): declared, held, expiring.

A reservation holds whole nodes (``nodes``) or a number of GPUs on given nodes (``gpus: {node: count}``)
from ``start`` to ``end``. While it is held, only jobs naming it (``ext_ml_reservation_id``) may use that
capacity, and they may use nothing else (§8.3: "MUST NOT dispatch the job to a worker outside the reserved
capacity pool"). ``timeout_s``: when the reservation has run nothing for that long after its start, its
capacity is released (a job naming it then waits, ``RESERVATION_INACTIVE``).

The file form (``placer place --reservations FILE``) is a JSON/YAML list of these objects;
``placer schema reservations`` prints its JSON Schema.

>>> r = Reservation.model_validate({"id": "nightly", "gpus": {"dgx-1": 4}})
>>> r.state(datetime(2026, 1, 1, tzinfo=UTC), running_members=0)
'active'
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from solver.jobs.errors import JobValidationError, issue

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
        """``active`` while held; else why not."""
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


def load_reservations(obj_or_text: Any, *, source: str = "reservations") -> list[Reservation]:
    """Reservations from a parsed list or its JSON/YAML text; ``JobValidationError`` (code ``malformed`` /
    ``type``, path ``[i].field``) for anything wrong, and for duplicate ids."""
    if isinstance(obj_or_text, str):
        from solver.jobs.parse import parse_json_or_yaml

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
    return out


def now_utc() -> datetime:
    return datetime.now(UTC)
