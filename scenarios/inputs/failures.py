"""Node failures of a scenario: the ones it lists, and random ones drawn from a stated MTBF.

Why concrete intervals up front: the simulator handles a failure as two events (down, up), and drawing
them before the run — from ``"{seed}:failures"`` only — keeps the workload and the failures independent
of each other and of the solver: the same seed fails the same nodes at the same times whatever the policy.

>>> from datetime import UTC, datetime
>>> from placer.scenarios.spec import FailuresSpec
>>> from placer.topology import cluster_of, dgx_h100
>>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
>>> spec = FailuresSpec.model_validate({"events": [{"node": "dgx-h100-2", "at": "1h", "for": "30m"}]})
>>> [(f.node, f.down.hour, f.up.minute) for f in failures_of(spec, cluster_of(dgx_h100(2)), t0, 86400, 0)]
[('dgx-h100-2', 1, 30)]
"""

from __future__ import annotations

import fnmatch
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from placer.scenarios.load import fail
from placer.scenarios.spec import FailuresSpec
from placer.scenarios.units import instant
from placer.topology import Cluster

__all__ = ["NodeFailure", "failures_of"]


@dataclass(frozen=True, slots=True)
class NodeFailure:
    """Node ``node`` is down from ``down`` until ``up`` (None: until the end of the run)."""

    node: str
    down: datetime
    up: datetime | None


def failures_of(
    spec: FailuresSpec | None,
    cluster: Cluster,
    start: datetime,
    horizon_s: float,
    seed: int,
    *,
    stream: str = "failures",
) -> list[NodeFailure]:
    """Every failure inside the horizon, sorted by time then node. Unknown nodes and patterns that match
    no node are scenario errors (``failures.events[i].node``, ``failures.random.nodes``). ``stream``
    names the random stream (``"{seed}:{stream}"``): another stream draws failures independent of the
    scenario's own (the cost studies' spot reclaims, ``scenarios/cost/reclaims.py``)."""
    if spec is None:
        return []
    end = start + timedelta(seconds=horizon_s)
    out: list[NodeFailure] = []
    for i, ev in enumerate(spec.events):
        if not cluster.has_node(ev.node):
            raise fail("enum", f"failures.events[{i}].node", f"no node named {ev.node!r} in the cluster")
        try:
            down = instant(ev.at, start)
        except ValueError as e:
            raise fail("type", f"failures.events[{i}].at", str(e)) from None
        up = None if ev.for_ is None else down + timedelta(seconds=ev.for_)
        if down < end:
            out.append(NodeFailure(ev.node, down, up))
    if spec.random is not None:
        r = spec.random
        names = [n.name for n in cluster.nodes if any(fnmatch.fnmatchcase(n.name, p) for p in r.nodes)]
        if not names:
            raise fail("enum", "failures.random.nodes", f"no node matches {r.nodes}")
        rng = random.Random(f"{seed}:{stream}")
        for name in names:
            t = rng.expovariate(1.0 / r.mtbf)
            while t < horizon_s:
                down = start + timedelta(seconds=round(t))
                out.append(NodeFailure(name, down, down + timedelta(seconds=r.repair)))
                t += r.repair + rng.expovariate(1.0 / r.mtbf)
    out.sort(key=lambda f: (f.down, f.node))
    return out
