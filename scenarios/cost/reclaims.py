"""Spot reclaims: the provider takes spot nodes back, and the work on them since their last checkpoint is
lost.

Why the node-failure machinery: a reclaim does to the jobs on a node what a failure does — they stop,
keep their work up to their last periodic checkpoint and are requeued — so the simulator needs nothing
new, and the cheap spot price is weighed against real lost work and real waits. Reclaims are drawn like
the scenario's random failures (``failures.random``: per spot node, exponential time to the next reclaim
with mean ``mtbf``; the node — or its replacement — is back ``replace_after`` later), but from their own
random stream (``"{seed}:spot-reclaims"``), node after node: with one seed, the first spot node of every
design is reclaimed at the same times (the second likewise, ...) whatever else the scenario fails, so
designs are compared on the same bad luck; a design without spot nodes draws nothing.

Not modelled: the warning a provider gives (two minutes on AWS, 30 seconds on Google Cloud) — jobs keep
only their periodic checkpoints, as on a failure — and reclaims of spot TPU pods.

>>> from datetime import UTC, datetime
>>> from placer.topology import cluster_of, dgx_h100
>>> c = cluster_of(dgx_h100(2, name="od"), dgx_h100(2, name="sp", capacity_class="spot"))
>>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
>>> r = reclaims_of(SpotReclaim(mtbf="2h", replace_after="10m"), c, t0, 86400, seed=0)
>>> sorted({f.node for f in r}), all((f.up - f.down).total_seconds() == 600 for f in r)
(['sp-1', 'sp-2'], True)
"""

from __future__ import annotations

from datetime import datetime

import pandas as pd
from pydantic import BaseModel, ConfigDict, field_validator

from placer.scenarios.inputs.failures import NodeFailure, failures_of
from placer.scenarios.spec import FailuresSpec, RandomFailures
from placer.scenarios.units import Duration
from placer.topology import Cluster

__all__ = ["STREAM", "SpotReclaim", "lost_to_reclaims", "reclaim_seconds", "reclaims_of"]

#: The random stream of the reclaims (``"{seed}:spot-reclaims"``).
STREAM = "spot-reclaims"


class SpotReclaim(BaseModel):
    """Per spot node: mean time between reclaims ``mtbf``; the node is away for ``replace_after``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mtbf: Duration = 12 * 3600.0
    replace_after: Duration = 600.0

    @field_validator("mtbf")
    @classmethod
    def _positive(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("mtbf must be positive")
        return v


def reclaims_of(
    reclaim: SpotReclaim | None, cluster: Cluster, start: datetime, horizon_s: float, *, seed: int
) -> list[NodeFailure]:
    """The reclaims of the cluster's spot nodes inside the horizon (none without spot nodes)."""
    spot = [n.name for n in cluster.nodes if n.capacity_class == "spot"]
    if reclaim is None or not spot:
        return []
    spec = FailuresSpec(random=RandomFailures(mtbf=reclaim.mtbf, repair=reclaim.replace_after, nodes=spot))
    return failures_of(spec, cluster, start, horizon_s, seed, stream=STREAM)


def reclaim_seconds(reclaims: list[NodeFailure], start: datetime) -> set[tuple[str, float]]:
    """``(node, seconds after the start)`` of each reclaim: what a failed run is matched against."""
    return {(f.node, (f.down - start).total_seconds()) for f in reclaims}


def lost_to_reclaims(attempts: pd.DataFrame, reclaimed: set[tuple[str, float]]) -> pd.Series:
    """Per run (the attempts table's index): GPU-hours of work lost to a reclaim — a run that failed at
    the instant one of its nodes was reclaimed — else 0."""
    if attempts.empty:
        return pd.Series(dtype=float)

    def lost(row: pd.Series) -> float:
        if row["outcome"] != "failed" or row["stop_s"] is None:
            return 0.0
        nodes = str(row["nodes"]).split(",")
        hit = any((n, float(row["stop_s"])) in reclaimed for n in nodes)
        return float(row["lost_s"]) * float(row["units"]) / 3600.0 if hit else 0.0

    return attempts.apply(lost, axis=1).astype(float)
