"""A scenario's reservations as :class:`placer.solver.reservations.Reservation`, times made absolute.

Why a conversion step: in a scenario, "the nightly reservation starts 2 hours in" reads better as
``start: 2h`` than as a timestamp; ``place()`` wants timestamps. Nodes must exist in the cluster.

>>> from datetime import UTC, datetime
>>> from placer.scenarios.spec import ReservationSpec
>>> from placer.topology import cluster_of, dgx_h100
>>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
>>> r = reservations_of([ReservationSpec(id="n", gpus={"dgx-h100-1": 4}, start="2h", end="4h")],
...                     cluster_of(dgx_h100(2)), t0)[0]
>>> r.start.hour, r.end.hour, r.timeout_s
(2, 4, None)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import ValidationError

from placer.scenarios.load import ScenarioError, fail, issues_of
from placer.scenarios.spec import ReservationSpec
from placer.scenarios.units import instant
from placer.solver.jobs.errors import JobValidationError
from placer.solver.reservations import Reservation, check_against
from placer.topology import Cluster

__all__ = ["reservations_of"]


def reservations_of(specs: Sequence[ReservationSpec], cluster: Cluster, start: datetime) -> list[Reservation]:
    """Each reservation, validated as ``placer place --reservations`` would (ids unique, nodes known, no
    more GPUs reserved on a node than it has)."""
    out: list[Reservation] = []
    seen: set[str] = set()
    for i, r in enumerate(specs):
        path = f"reservations[{i}]"
        if r.id in seen:
            raise fail("duplicate", f"{path}.id", f"reservation id {r.id!r} appears twice")
        seen.add(r.id)
        times = {}
        for key in ("start", "end"):
            value = getattr(r, key)
            try:
                times[key] = None if value is None else instant(value, start)
            except ValueError as e:
                raise fail("type", f"{path}.{key}", str(e)) from None
        try:
            out.append(
                Reservation(
                    id=r.id,
                    nodes=r.nodes,
                    gpus=r.gpus,
                    timeout_s=None if r.timeout is None else int(r.timeout),
                    **times,
                )
            )
        except ValidationError as e:
            raise ScenarioError(issues_of(e, path)) from None
    try:
        check_against(out, cluster)  # the same rule as place(): known nodes, no more GPUs than they have
    except JobValidationError as e:
        raise ScenarioError(
            [i.model_copy(update={"path": f"reservations{i.path}"}) for i in e.issues]
        ) from None
    return out
