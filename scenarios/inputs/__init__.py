"""From a scenario file to what the simulator runs: cluster, jobs, policy, prices, failures, reservations,
autoscaled node groups.

Why a separate step from reading the file: the file is validated on its own (:mod:`placer.scenarios.load`);
this
step builds the things it names — which may fail too (an unknown builder argument, a trace loader that is
not there, a reservation on a node the cluster lacks) — and reports those failures the same way, as a
:class:`~placer.scenarios.load.ScenarioError` naming the field.

>>> from placer.scenarios.load import load_scenario_text
>>> spec = load_scenario_text('''
... name: tiny
... horizon: 1h
... cluster: {builders: [{dgx_h100: {count: 1}}]}
... workload: {jobs: [{id: a, ext_ml_gpu_count: 8, ext_ml_timeout_seconds: 600}]}
... ''')
>>> inputs = prepare(spec, base=None)
>>> inputs.end - inputs.start, [j.id for j in inputs.jobs], inputs.policy.engine
(datetime.timedelta(seconds=3600), ['a'], 'greedy')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import ValidationError

from placer.scenarios.inputs.autoscaling import NodeGroup, node_groups_of
from placer.scenarios.inputs.cluster import (
    build,
    slurm_assoc_of,
    slurm_partitions_of,
    slurm_qos_limits_of,
    slurm_qos_of,
)
from placer.scenarios.inputs.failures import NodeFailure, failures_of
from placer.scenarios.inputs.reservations import reservations_of
from placer.scenarios.inputs.workload import jobs_of
from placer.scenarios.load import ScenarioError, fail, issues_of, resolve
from placer.scenarios.spec import PolicySpec, ScenarioSpec
from placer.solver.jobs.errors import Issue, JobValidationError
from placer.solver.jobs.model import Job
from placer.solver.policy import Policy, engine_fields
from placer.solver.prices import PriceCatalog, load_prices, load_prices_file
from placer.solver.reservations import Reservation
from placer.topology import Cluster, RunningJob
from placer.topology.importers.slurm import fewest_cpus_per_core

__all__ = ["NodeFailure", "NodeGroup", "SimInputs", "policy_of", "prepare", "prices_of"]


@dataclass(frozen=True)
class SimInputs:
    """Everything one simulation run needs, built and checked."""

    name: str
    seed: int
    start: datetime
    end: datetime
    interval_s: float
    cluster: Cluster
    jobs: list[Job]
    policy: Policy
    prices: PriceCatalog
    failures: list[NodeFailure] = field(default_factory=list)
    reservations: list[Reservation] = field(default_factory=list)
    background: list[RunningJob] = field(default_factory=list)
    #: Autoscaled node groups (``autoscaling``), tried in this order.
    node_groups: list[NodeGroup] = field(default_factory=list)


def policy_of(spec: PolicySpec, seed: int) -> Policy:
    """The solver policy of a scenario (``weights`` are further :class:`Policy` fields)."""
    try:
        return Policy(
            **engine_fields(spec.engine),
            time_limit_s=spec.time_limit_s,
            seed=seed,
            plan=spec.plan,
            preemption=spec.preemption,
            reproducible=spec.reproducible,
            **spec.weights,
        )
    except ValidationError as e:
        raise ScenarioError(issues_of(e, "policy.weights")) from None


def prices_of(value: str | dict | None, base: Path | None) -> PriceCatalog:
    """The default catalog, with a prices file (a path) or inline prices (a mapping) on top."""
    if value is None:
        return PriceCatalog.default()
    try:
        if isinstance(value, str):
            return load_prices_file(str(resolve(value, base)))
        return load_prices(value)
    except OSError as e:
        raise fail("required", "prices", f"cannot open {value}: {e.strerror or e}") from None
    except JobValidationError as e:
        raise ScenarioError(
            [Issue(code=i.code, path=f"prices.{i.path}".rstrip("."), message=i.message) for i in e.issues]
        ) from None


def prepare(spec: ScenarioSpec, base: Path | None, *, seed: int | None = None) -> SimInputs:
    """Build every input of ``spec``; ``seed`` (default: the scenario's) drives the workload, failures and
    the solver. ``base``: the folder relative paths in the scenario start from."""
    seed = spec.seed if seed is None else seed
    cluster, background = build(spec.cluster, base)
    partitions = slurm_partitions_of(spec.cluster, base)
    jobs = jobs_of(
        spec.workload,
        spec.start,
        spec.horizon,
        seed=seed,
        base=base,
        partitions=partitions,
        qos=slurm_qos_of(spec.cluster, base),
        qos_limits=slurm_qos_limits_of(spec.cluster, base),
        assoc=slurm_assoc_of(spec.cluster, base),
        cpus_per_core=fewest_cpus_per_core(cluster.nodes),
    )
    if not jobs and spec.workload.trace is not None:
        # A trace that yields nothing is a mistake (a wrong file, a `since` past its end): a run of nothing
        # would report 0 of everything as if it had measured something. An explicit `jobs: []` is a choice.
        raise fail(
            "range",
            "workload.trace",
            "the trace yields no job within the horizon (an empty file, or `since`/the horizon outside it)",
        )
    prices = prices_of(spec.prices, base)
    return SimInputs(
        name=spec.name,
        seed=seed,
        start=spec.start,
        end=spec.start + timedelta(seconds=spec.horizon),
        interval_s=spec.interval,
        cluster=cluster,
        jobs=jobs,
        policy=policy_of(spec.policy, seed),
        prices=prices,
        failures=failures_of(spec.failures, cluster, spec.start, spec.horizon, seed),
        reservations=reservations_of(spec.reservations, cluster, spec.start),
        background=background,
        node_groups=node_groups_of(spec.autoscaling, cluster, prices),
    )
