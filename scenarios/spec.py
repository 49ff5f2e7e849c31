"""The scenario file: one YAML document naming a cluster, a workload, a policy, prices, a scheduling
interval and a horizon, and optionally node failures, reservations and autoscaled node groups
(``docs/simulator.md``).

Why pydantic models with ``extra="forbid"``: a what-if study is only as good as its input, and a typo
(``intreval: 30s``) must fail loudly, naming the field, rather than silently simulate the default.
``placer schema scenario`` prints the JSON Schema; :func:`placer.scenarios.load.load_scenario` turns any
problem into a :class:`~placer.scenarios.load.ScenarioError` of ``{code, path, message}`` issues.

>>> spec = ScenarioSpec.model_validate({"name": "tiny", "horizon": "2h", "interval": "1m",
...     "cluster": {"builders": [{"dgx_h100": {"count": 2}}]},
...     "workload": {"synthetic": {"arrivals": {"rate_per_hour": 10},
...                                "classes": [{"name": "train", "gpus": 8, "duration": "1h"}]}}})
>>> spec.horizon, spec.interval, spec.workload.synthetic.classes[0].duration.dist
(7200.0, 60.0, 'fixed')
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from placer.scenarios.units import DURATION_JSON, Duration
from placer.solver.jobs.model import DistributedStrategy, PriorityClass, SpotPreference
from placer.solver.policy import BASELINES
from placer.topology.catalog import parse_shape

__all__ = [
    "DEFAULT_START",
    "MAX_TICKS",
    "Arrivals",
    "AutoscalingSpec",
    "ClassChoice",
    "ClusterSpec",
    "DurationDist",
    "EngineName",
    "EscalationSpec",
    "FailureEvent",
    "FailuresSpec",
    "GpuChoice",
    "JobClass",
    "LayoutSpec",
    "NamedOrPools",
    "NodeGroupSpec",
    "PolicySpec",
    "PoolSpec",
    "RandomFailures",
    "ReservationSpec",
    "ScenarioSpec",
    "ShapeChoice",
    "SyntheticWorkload",
    "TpuClassSpec",
    "TraceWorkload",
    "WorkloadSpec",
    "unique_names",
]

#: Default start of a scenario's clock: fixed, so that a scenario gives the same run on any day.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
#: Most scheduling intervals one run may have (horizon / interval): a typo like ``interval: 1`` over a
#: month is refused rather than run for hours.
MAX_TICKS = 200_000


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _bad(code: str, message: str) -> PydanticCustomError:
    """A validation error whose type is one of ``placer.solver.jobs.ISSUE_CODES`` (``conflict``, ``required``,
    ``range``): :mod:`placer.scenarios.load` reports it with that code. No braces in ``message`` (a
    template)."""
    return PydanticCustomError(code, message)


def unique_names(names: list[str], what: str) -> None:
    """Refuse names given twice (``duplicate``, naming them): job classes, node groups, designs.

    >>> unique_names(["a", "b"], "job class")
    >>> unique_names(["a", "b", "a"], "job class")
    Traceback (most recent call last):
    pydantic_core._pydantic_core.PydanticCustomError: job class names must be unique: a
    """
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise _bad("duplicate", f"{what} names must be unique: {', '.join(dup)}")


def _as_choice(value: Any) -> Any:
    """A scalar means "always this value": ``8`` -> ``{8: 1.0}``; a list of values means equal weights."""
    if isinstance(value, dict):
        return value
    if isinstance(value, list):
        return dict.fromkeys(value, 1.0)
    return {value: 1.0}


def _weights_ok(value: dict[Any, float]) -> dict[Any, float]:
    if not value:
        raise _bad("required", "give at least one value")
    if any(w < 0 for w in value.values()) or sum(value.values()) <= 0:
        raise _bad("range", "weights must be non-negative and not all zero")
    return value


def _shape(text: Any) -> str:
    shape = parse_shape(text) if isinstance(text, str) else None
    if shape is None or len(shape) < 2:
        raise ValueError(f"{text!r} is not a TPU slice shape such as '2x4' or '4x4x8'")
    return "x".join(str(d) for d in shape)


def _choice_json(value: dict[str, Any]) -> WithJsonSchema:
    """A choice as a file may write it: one value, a list (equal weights), or ``{value: weight}``."""
    return WithJsonSchema(
        {
            "anyOf": [
                value,
                {"type": "array", "items": value},
                {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}},
            ],
            "description": "a value, a list of values (equal weights), or {value: weight}",
        }
    )


GpuChoice = Annotated[
    dict[Annotated[int, Field(ge=0, le=4096)], float],
    BeforeValidator(_as_choice),
    _choice_json({"type": "integer", "minimum": 0}),
]
ClassChoice = Annotated[
    dict[PriorityClass, float],
    BeforeValidator(_as_choice),
    _choice_json({"enum": [c.value for c in PriorityClass]}),
]
ShapeChoice = Annotated[
    dict[Annotated[str, BeforeValidator(_shape)], float],
    BeforeValidator(_as_choice),
    _choice_json({"type": "string", "pattern": r"^[0-9]+(x[0-9]+){1,2}$"}),
]


def _job_class_json(schema: dict[str, Any]) -> None:
    """Shorthands the validators accept: ``duration: 4h`` (fixed), ``priority: 300`` (one value)."""
    props = schema["properties"]
    props["duration"] = {
        "anyOf": [DURATION_JSON, props["duration"]],
        "description": "a duration or a distribution",
    }
    props["priority"] = {
        "anyOf": [
            {"type": "integer"},
            {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        ],
        "description": "a numeric priority, or [low, high] to draw from uniformly",
    }


class DurationDist(_Spec):
    """How long jobs of a class run (their work, in seconds of wall time on their full allocation).

    ``fixed`` (``value``), ``exponential`` (``mean``), ``lognormal`` (``median``, ``sigma``: the
    heavy tail of real ML job durations, Philly and Helios alike), ``uniform`` (``low``, ``high``).
    Draws are clamped to ``[min, max]``. A bare duration (``duration: 4h``) is ``fixed``.
    """

    dist: Literal["fixed", "exponential", "lognormal", "uniform"] = "fixed"
    value: Duration | None = None
    mean: Duration | None = None
    median: Duration | None = None
    sigma: float = Field(default=1.0, gt=0, le=5)
    low: Duration | None = None
    high: Duration | None = None
    min: Duration = 60.0
    max: Duration | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str | int | float) and not isinstance(data, bool):
            return {"dist": "fixed", "value": data}
        return data

    @model_validator(mode="after")
    def _check(self) -> DurationDist:
        need = {
            "fixed": ("value",),
            "exponential": ("mean",),
            "lognormal": ("median",),
            "uniform": ("low", "high"),
        }
        missing = [k for k in need[self.dist] if getattr(self, k) is None]
        if missing:
            raise _bad("required", f"a {self.dist} duration needs {' and '.join(missing)}")
        if self.dist == "uniform" and self.high < self.low:  # type: ignore[operator]
            raise _bad("range", "high must be >= low")
        if self.max is not None and self.max < self.min:
            raise _bad("range", "max must be >= min")
        return self


class Arrivals(_Spec):
    """When jobs are submitted: a Poisson process (``rate_per_hour``, exponential gaps) or one job every
    ``every``; plus ``backlog`` jobs already queued at the start. Arrivals stop at ``until`` (default:
    the horizon) or after ``max_jobs``."""

    process: Literal["poisson", "fixed"] = "poisson"
    rate_per_hour: float | None = Field(default=None, gt=0, le=1_000_000)
    every: Duration | None = None
    backlog: int = Field(default=0, ge=0, le=1_000_000)
    max_jobs: int | None = Field(default=None, ge=0, le=10_000_000)
    until: Duration | None = None

    @model_validator(mode="after")
    def _check(self) -> Arrivals:
        if self.process == "poisson" and self.rate_per_hour is None:
            raise _bad("required", "a poisson arrival process needs rate_per_hour")
        if self.process == "fixed" and not self.every:
            raise _bad("required", "a fixed arrival process needs every (a positive duration)")
        return self


class TpuClassSpec(_Spec):
    """A TPU job's slice: generation and shape(s) (``topology: 2x4`` or ``{2x4: 0.6, 4x4: 0.4}``)."""

    type: str = Field(default="v5e", min_length=1)
    topology: ShapeChoice

    _check_weights = field_validator("topology")(_weights_ok)


class EscalationSpec(_Spec):
    """OJS ML §8.4: a ``spot`` job waiting longer than ``after`` counts as ``target``."""

    after: Duration = 3600.0
    target: PriorityClass = PriorityClass.ON_DEMAND


class JobClass(_Spec):
    """One kind of job in a synthetic workload, drawn with probability ``share`` (normalized over the
    classes). Every per-job choice is a value or ``{value: weight}``: ``gpus: {1: 0.6, 8: 0.4}``.

    GPU jobs ask ``gpus`` GPUs (``gpu_types``: any of them; empty: any type); more GPUs than a node has
    need a ``strategy`` (``fsdp``, ``data_parallel``, ...) so the solver may split them over nodes. A
    ``tpu`` job asks a slice instead; ``gpus: 0`` without ``tpu`` is a CPU job (``cpu_cores``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_job_class_json)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$")
    share: float = Field(default=1.0, gt=0)
    gpus: GpuChoice = Field(default_factory=lambda: {1: 1.0})  # 0 for a TPU class (_default_gpus)
    gpu_types: list[str] = Field(default_factory=list)
    interconnect: Literal["any", "nvlink"] = "any"
    strategy: DistributedStrategy | None = None
    tpu: TpuClassSpec | None = None
    cpu_cores_per_gpu: float = Field(default=8.0, ge=0)
    memory_gb_per_gpu: float = Field(default=64.0, ge=0)
    cpu_cores: float = Field(default=4.0, ge=0)
    memory_gb: float = Field(default=16.0, ge=0)
    priority_class: ClassChoice = Field(default_factory=lambda: {PriorityClass.ON_DEMAND: 1.0})
    priority: tuple[int, int] = (0, 0)
    duration: DurationDist
    checkpoint_interval: Duration | None = None
    checkpoint_on_preempt: bool = False
    preemptible: bool | None = None
    grace_period: Duration = 30.0
    spot_preference: SpotPreference = SpotPreference.ANY
    escalation: EscalationSpec | None = None
    queue: str | None = None
    tenant: str | None = None
    reservation: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    _check_weights = field_validator("gpus", "priority_class")(_weights_ok)

    @model_validator(mode="before")
    @classmethod
    def _default_gpus(cls, data: Any) -> Any:
        """No ``gpus`` means one GPU, or none for a TPU class."""
        if isinstance(data, dict) and "gpus" not in data:
            return {**data, "gpus": 0 if data.get("tpu") is not None else 1}
        return data

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, v: Any) -> Any:
        return (v, v) if isinstance(v, int) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _check(self) -> JobClass:
        if self.priority[1] < self.priority[0]:
            raise _bad("range", "priority range [low, high] needs low <= high")
        if self.tpu is not None and any(g for g in self.gpus):
            raise _bad("conflict", "a TPU job class asks no GPUs: leave gpus out (or 0)")
        if self.checkpoint_interval is not None and self.checkpoint_interval <= 0:
            raise _bad("range", "checkpoint_interval must be positive (leave it out for no checkpoints)")
        return self


class SyntheticWorkload(_Spec):
    """A generated workload: an arrival process and a mix of job classes."""

    arrivals: Arrivals
    classes: list[JobClass] = Field(min_length=1)

    @field_validator("classes")
    @classmethod
    def _unique(cls, v: list[JobClass]) -> list[JobClass]:
        unique_names([c.name for c in v], "job class")
        return v


class TraceWorkload(_Spec):
    """Jobs from a public trace through a loader (``philly``, or ``module:function``): the loader gets
    ``file`` and ``options`` and returns jobs with ``submit_time`` and ``duration_s``; the first
    submission — or ``since``, a trace time: earlier jobs are dropped — is moved to the scenario's start
    (``rebase``); ``limit`` keeps the first jobs."""

    loader: str = Field(min_length=1)
    file: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)
    since: datetime | None = None
    limit: int | None = Field(default=None, ge=1)
    rebase: bool = True

    @field_validator("since")
    @classmethod
    def _aware(cls, v: datetime | None) -> datetime | None:
        if v is not None and v.tzinfo is None:
            raise _bad("type", "since needs a time zone (RFC 3339 with an offset, e.g. 2017-10-09T00:00:00Z)")
        return v


class WorkloadSpec(_Spec):
    """Exactly one of ``synthetic`` (generated), ``trace`` (a trace file and loader), ``jobs`` (a list
    of job envelopes in any job format, each with ``submit``: a duration after the start) or ``file`` (a
    job file of any format ``placer place --jobs`` reads — ``squeue --json`` gives its pending jobs —
    every job of it submitted at the start)."""

    synthetic: SyntheticWorkload | None = None
    trace: TraceWorkload | None = None
    jobs: list[dict[str, Any]] | None = None
    file: str | None = None

    @model_validator(mode="after")
    def _one(self) -> WorkloadSpec:
        given = [k for k in ("synthetic", "trace", "jobs", "file") if getattr(self, k) is not None]
        if len(given) != 1:
            raise _bad(
                "conflict",
                f"give exactly one of synthetic, trace, jobs or file (got {', '.join(given) or 'none'})",
            )
        return self


class PoolSpec(_Spec):
    """A pool of a synthetic layout (``placer.scenarios.synthetic.layout``): shape, zone, capacity class,
    nodes."""

    shape: Literal["dgx-h100", "hgx-a100", "l40s", "dgx-b200", "cpu"]
    zone: str = "zone-a"
    capacity_class: Literal["spot", "on-demand", "reserved"] = "on-demand"
    nodes: int = Field(ge=1, le=100_000)


class LayoutSpec(_Spec):
    """A synthetic layout written out: pools, TPU pods, racks."""

    pools: list[PoolSpec] = Field(min_length=1)
    tpu_pods: list[dict[str, Any]] = Field(default_factory=list)
    nodes_per_rack: int = Field(default=32, ge=1)
    racks_per_block: int = Field(default=8, ge=1)


#: A named synthetic layout or one written out; the tag picks the branch so that errors name one of them.
NamedOrPools = Annotated[
    Annotated[Literal["S", "M", "L"], Tag("layout-name")] | Annotated[LayoutSpec, Tag("layout-pools")],
    Discriminator(lambda v: "layout-name" if isinstance(v, str) else "layout-pools"),
]


class ClusterSpec(_Spec):
    """Exactly one of: ``builders`` (a list of ``{builder: {arguments}}`` from
    :mod:`placer.topology.presets`,
    ``count`` meaning the node / rack count), ``layout`` (``S``, ``M``, ``L`` of the synthetic scenarios,
    or pools written out), or ``file`` (an inventory or an importer's input, ``format`` as
    ``placer cluster``). ``running``: what to do with jobs the file says are running (``drop``: start
    empty; ``keep``: they run until their ``expected_end`` and are never requeued). ``slurm_jobs``: with a
    Slurm node file, ``squeue --json`` or ``scontrol show job -d`` naming the jobs that run (a live
    snapshot; ``placer place --running``); ``slurm_partitions``: ``scontrol show partition``, whose tiers
    and preemption modes Slurm's jobs then get (``placer place --slurm-partitions``), or ``slurm_qos``:
    ``sacctmgr show qos -P`` under ``preempt/qos`` (with ``slurm_preempt_mode``, the cluster's
    ``PreemptMode``; ``placer place --slurm-qos``), which also holds jobs to the QOSes' limits;
    ``slurm_qos_limits``: that table read for its limits alone (``placer place --slurm-qos-limits``);
    ``slurm_assoc``: ``sacctmgr show assoc tree -P``, whose job and GPU limits jobs are held to
    (``placer place --slurm-assoc``). Cluster-wide licence seats (``Inventory.licenses``; jobs asking for
    licences start only while seats are left): ``licenses`` (``{name: seats}``), or ``slurm_licenses``,
    ``scontrol show licenses`` or ``slurm.conf``'s ``Licenses=`` line (``placer place --slurm-licenses``),
    for any cluster; they replace seats its file states."""

    name: str | None = None
    builders: list[dict[str, dict[str, Any]]] | None = None
    layout: NamedOrPools | None = None
    file: str | None = None
    format: str = "auto"
    pods: str | None = None
    running: Literal["drop", "keep"] = "drop"
    slurm_jobs: str | None = None
    slurm_partitions: str | None = None
    slurm_qos: str | None = None
    slurm_preempt_mode: str | None = None
    slurm_qos_limits: str | None = None
    slurm_assoc: str | None = None
    licenses: dict[str, Annotated[int, Field(ge=0)]] | None = None
    slurm_licenses: str | None = None

    @model_validator(mode="after")
    def _one(self) -> ClusterSpec:
        given = [k for k in ("builders", "layout", "file") if getattr(self, k) is not None]
        if len(given) != 1:
            raise _bad(
                "conflict", f"give exactly one of builders, layout or file (got {', '.join(given) or 'none'})"
            )
        slurm = (
            self.slurm_jobs,
            self.slurm_partitions,
            self.slurm_qos,
            self.slurm_qos_limits,
            self.slurm_assoc,
        )
        if self.file is None and any(slurm):
            raise _bad(
                "conflict",
                "slurm_jobs, slurm_partitions, slurm_qos, slurm_qos_limits, slurm_assoc go with a Slurm node "
                "file (file)",
            )
        if self.licenses is not None and self.slurm_licenses is not None:
            raise _bad("conflict", "give licenses or slurm_licenses, not both")
        if self.slurm_qos and self.slurm_qos_limits:
            raise _bad("conflict", "slurm_qos_limits and slurm_qos: slurm_qos holds jobs to the limits too")
        if self.slurm_preempt_mode and not self.slurm_qos:
            raise _bad("conflict", "slurm_preempt_mode goes with slurm_qos")
        for i, entry in enumerate(self.builders or []):
            if len(entry) != 1:
                raise _bad(
                    "malformed", f"builders[{i}] must name exactly one builder (one key, such as dgx_h100)"
                )
        return self


#: What ``policy.engine`` may name: placer's engines, and the baseline scorers of :mod:`placer.solver.scorers`
#: (each is greedy choosing nodes by that scorer: ``engine: fgd``).
EngineName = Literal[
    "auto", "cpsat", "greedy", "first-fit", "best-fit", "least-allocated", "most-allocated", "fgd"
]


class PolicySpec(_Spec):
    """The solver policy at every scheduling interval. ``engine``: placer's ``greedy`` (the default here),
    ``cpsat`` or ``auto``, or a baseline to compare with — ``first-fit``, ``best-fit``, ``least-allocated``,
    ``most-allocated``, ``fgd`` (greedy with that node scorer, :mod:`placer.solver.scorers`). ``weights``: any
    other field of :class:`placer.solver.policy.Policy` (``restart_penalty_s``, ``class_weight``, ...).
    ``reproducible`` (on by default) makes CP-SAT answer the same whatever the machine's load, so a seed
    fixes the whole run."""

    engine: EngineName = "greedy"
    time_limit_s: float = Field(default=1.0, gt=0, le=600)
    plan: bool = True
    preemption: bool = True
    reproducible: bool = True
    weights: dict[str, Any] = Field(default_factory=dict)

    @field_validator("weights")
    @classmethod
    def _not_core(cls, v: dict[str, Any]) -> dict[str, Any]:
        core = {"engine", "time_limit_s", "plan", "preemption", "reproducible", "seed", "prices"}
        clash = sorted(core & set(v))
        if clash:
            raise _bad(
                "conflict", f"set {', '.join(clash)} directly under policy (or the scenario's seed/prices)"
            )
        if "scorer" in v:
            raise _bad("conflict", f"choose a baseline scorer as policy.engine ({', '.join(BASELINES)})")
        return v


class FailureEvent(_Spec):
    """Node ``node`` goes down at ``at`` (offset or RFC 3339) for ``for`` (``null``: for good)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    node: str = Field(min_length=1)
    at: str | float | datetime
    for_: Duration | None = Field(default=None, alias="for")


class RandomFailures(_Spec):
    """Independent failures per node: exponential time between failures (``mtbf``) and fixed ``repair``
    time, drawn from the scenario's seed. ``nodes``: names or shell patterns (``dgx-*``); all by default."""

    mtbf: Duration
    repair: Duration = 3600.0
    nodes: list[str] = Field(default_factory=lambda: ["*"])

    @field_validator("mtbf")
    @classmethod
    def _positive(cls, v: float) -> float:
        if v <= 0:
            raise _bad("range", "mtbf must be positive")
        return v


class FailuresSpec(_Spec):
    events: list[FailureEvent] = Field(default_factory=list)
    random: RandomFailures | None = None


class ReservationSpec(_Spec):
    """A reservation (OJS ML §8.3) as in ``placer schema reservations``, with ``start``/``end`` also as
    offsets from the scenario's start and ``timeout`` as a duration."""

    id: str = Field(min_length=1)
    nodes: list[str] = Field(default_factory=list)
    gpus: dict[str, int] = Field(default_factory=dict)
    start: str | float | datetime | None = None
    end: str | float | datetime | None = None
    timeout: Duration | None = None


class NodeGroupSpec(_Spec):
    """A group of identical nodes an autoscaler adds and removes (a Kubernetes cluster-autoscaler node
    group, a Karpenter NodePool of one instance type, a Slurm power-saving partition).

    ``node``: one node, as one ``cluster.builders`` entry without ``count`` (``{dgx_h100: {capacity_class:
    spot}}``); the group's nodes are named ``<name>-1``, ``<name>-2``... ``min`` of them are there from the
    start; at most ``max`` exist or are on their way. ``provision``: from the request to the node being
    ready (a cloud GPU VM booting and registering: minutes); it is billed from the request.
    ``scale_down_after``: a node no job has held for this long leaves (cluster-autoscaler's
    ``--scale-down-unneeded-time``, 10 minutes by default). ``reclaim_mtbf``: the provider takes a node
    back (spot capacity) after an exponential time from its joining with this mean; its jobs fail
    (work since their last checkpoint is lost) and wait again, and the autoscaler asks for a node again
    if they need one."""

    name: str = Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    node: dict[str, dict[str, Any]]
    min: int = Field(default=0, ge=0, le=10_000)
    max: int = Field(ge=1, le=10_000)
    provision: Duration = 300.0
    scale_down_after: Duration = 600.0
    reclaim_mtbf: Duration | None = None

    @model_validator(mode="after")
    def _check(self) -> NodeGroupSpec:
        if len(self.node) != 1:
            raise _bad("malformed", "node must name exactly one builder (one key, such as dgx_h100)")
        if self.min > self.max:
            raise _bad("range", f"min ({self.min}) is above max ({self.max})")
        if self.provision < 0 or self.scale_down_after < 0:
            raise _bad("range", "provision and scale_down_after cannot be negative")
        if self.reclaim_mtbf is not None and self.reclaim_mtbf <= 0:
            raise _bad("range", "reclaim_mtbf must be positive")
        return self


class AutoscalingSpec(_Spec):
    """Node groups an autoscaler grows when jobs wait for capacity a new node would give, and shrinks when
    their nodes stand idle (``docs/simulator.md``, section ``autoscaling``). Groups are tried in the order
    listed (cluster-autoscaler's ``priority`` expander with one priority per group)."""

    groups: list[NodeGroupSpec] = Field(min_length=1, max_length=100)

    @field_validator("groups")
    @classmethod
    def _unique(cls, v: list[NodeGroupSpec]) -> list[NodeGroupSpec]:
        unique_names([g.name for g in v], "node group")
        return v


class ScenarioSpec(_Spec):
    """A whole what-if scenario (see the module docstring and ``docs/simulator.md``)."""

    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    seed: int = 0
    start: datetime = DEFAULT_START
    horizon: Duration
    interval: Duration = 60.0
    cluster: ClusterSpec
    workload: WorkloadSpec
    policy: PolicySpec = Field(default_factory=PolicySpec)
    prices: str | dict[str, Any] | None = None
    failures: FailuresSpec | None = None
    reservations: list[ReservationSpec] = Field(default_factory=list)
    autoscaling: AutoscalingSpec | None = None

    @field_validator("start")
    @classmethod
    def _aware(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            raise _bad("type", "start needs a time zone (RFC 3339 with an offset, e.g. 2026-01-01T00:00:00Z)")
        return v

    @model_validator(mode="after")
    def _ticks(self) -> ScenarioSpec:
        if self.horizon <= 0 or self.interval <= 0:
            raise _bad("range", "horizon and interval must be positive")
        if self.horizon / self.interval > MAX_TICKS:
            raise _bad(
                "limit",
                f"horizon / interval = {self.horizon / self.interval:.0f} scheduling intervals; "
                f"the most is {MAX_TICKS}: lengthen the interval or shorten the horizon",
            )
        return self
