"""Request bodies (pydantic v2) and the one way a body becomes a model: strict JSON, then the model, or 400.

Why the service parses JSON itself instead of letting FastAPI do it: the body must go through the same
strict, bounded parser as every other untrusted document (:mod:`placer.topology.safe_load`: no NaN, no
duplicate
keys, nesting capped), and a body that is not the request's shape is a 400 naming each field and the rule
it breaks (``required``, ``unknown``, ``type``, ``enum``, ``range``), never FastAPI's 422 — 422 is kept for
documents inside a well-formed body that break a rule (a job over a queue limit, an invalid cluster).

Models are strict (``"5"`` is not a number, ``1`` is not ``true``) and refuse unknown fields, so a typo
(``time_limit`` for ``time_limit_s``) is an error rather than a silently ignored setting.

>>> body = parse_body(PlacementRequest, b'{"cluster": {"nodes": []}, "jobs": [], "time_limit_s": 2}')
>>> body.time_limit_s, body.policy.engine
(2.0, 'auto')
>>> try:
...     parse_body(PlacementRequest, b'{"jobs": [], "policy": {"engine": "fast"}, "time_limit": 2}')
... except ApiError as e:
...     [(x["code"], x["path"]) for x in e.errors]
[('required', 'cluster'), ('enum', 'policy.engine'), ('unknown', 'time_limit')]
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError

from placer.service.errors import ApiError
from placer.topology.inventory import Inventory
from placer.topology.safe_load import UnsafeDocument, load_json

__all__ = [
    "CHANGE_OPS",
    "EXAMPLES",
    "Change",
    "ClusterFields",
    "ClusterFormat",
    "ClusterPatch",
    "ClusterPut",
    "Document",
    "JobFinished",
    "JobStarted",
    "M",
    "MatchRequest",
    "NodeChange",
    "NodeRemoved",
    "NodesAdded",
    "PlacementInputs",
    "PlacementRequest",
    "PolicyBody",
    "Timestamp",
    "ValidateRequest",
    "field_errors",
    "parse_body",
    "parse_json",
]


def _document(value: Any) -> Any:
    if not isinstance(value, dict | list | str):
        raise PydanticCustomError(
            "document_type", "must be a JSON object, a list, or a string holding YAML, XML or text"
        )
    return value


def _rfc3339(value: Any) -> Any:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("timestamp_type", "must be an RFC 3339 timestamp string")
    from placer.cli.place import parse_rfc3339

    try:
        return parse_rfc3339(value)
    except ValueError as e:
        raise PydanticCustomError("timestamp_format", str(e)) from None


#: A document as the readers take it: a parsed JSON object or list, or text (YAML, XML, Slurm output).
Document = Annotated[
    Any,
    BeforeValidator(_document),
    WithJsonSchema({"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"}]}),
]
#: RFC 3339 with a mandatory offset (a naive time would shift every start by the server's zone).
Timestamp = Annotated[datetime, BeforeValidator(_rfc3339)]
ClusterFormat = Literal["auto", "inventory", "ojs-workers", "kubernetes", "slurm", "jgf"]
#: ``--topology-labels`` in a body: a site's node labels read as topology levels.
TopologyLabels = dict[str, Literal["rack", "block", "zone"]]
_TOPOLOGY_LABELS = (
    "--topology-labels: the site's node labels read as levels ({label: rack | block | zone}), by the "
    "Kubernetes node importer and by the job reader (a Kueue job may name them)"
)


#: A node and two jobs: the request examples of the OpenAPI document (``/docs`` shows them, and a test
#: sends each one and expects it to succeed).
_EXAMPLE_CLUSTER: dict[str, Any] = {
    "nodes": [
        {"name": "dgx-1", "cpu_cores": 224, "memory_gb": 2048, "gpus": {"type": "nvidia-h100", "count": 8}},
        {"name": "l4-1", "cpu_cores": 48, "memory_gb": 192, "gpus": {"type": "nvidia-l4", "count": 4}},
    ]
}
_EXAMPLE_JOBS: list[dict[str, Any]] = [
    {
        "id": "train-1",
        "type": "ml.train",
        "queue": "training",
        "args": [],
        "ext_ml_gpu_count": 4,
        "ext_ml_gpu_type": "nvidia-h100",
        "ext_ml_priority_class": "on-demand",
    },
    {
        "id": "serve-1",
        "type": "ml.serve",
        "queue": "inference",
        "args": [],
        "ext_ml_gpu_count": 1,
        "ext_ml_gpu_type": "nvidia-l4",
    },
]
#: Model name -> request example (a body that succeeds).
EXAMPLES: dict[str, dict[str, Any]] = {
    "PlacementRequest": {"cluster": _EXAMPLE_CLUSTER, "jobs": _EXAMPLE_JOBS, "time_limit_s": 2},
    "ClusterPut": {"cluster": _EXAMPLE_CLUSTER},
    "PlacementInputs": {"jobs": _EXAMPLE_JOBS, "time_limit_s": 2, "policy": {"engine": "greedy"}},
    "ValidateRequest": {"jobs": _EXAMPLE_JOBS},
}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PolicyBody(_Body):
    """The parts of :class:`placer.solver.policy.Policy` a client may choose (as ``placer place`` options).
    Model
    size knobs and CP-SAT threads stay the server's: they decide what one request costs."""

    engine: Literal["auto", "cpsat", "greedy"] = Field("auto", description="as placer place --engine")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="CP-SAT random seed")
    reproducible: bool = Field(False, description="same answer under a wall-clock limit (slower)")
    plan: bool = Field(True, description="planned starts and backfill (false: placer place --no-plan)")
    preemption: bool = Field(True, description="whether running jobs may be evicted")


class RunningFields(_Body):
    """Running jobs in a body, and the Slurm tables that say how Slurm's may be preempted and what limits
    Slurm's jobs count against (``placer/service/slurm.py``)."""

    running: list[dict[str, Any]] | dict[str, Any] | str | None = Field(
        None,
        description="running jobs as placer place --running: envelopes plus node/gpus or replicas; or "
        "Slurm's squeue --json (an object) or scontrol show job -d (text)",
    )
    slurm_partitions: str | None = Field(None, description="scontrol show partition (--slurm-partitions)")
    slurm_qos: str | None = Field(None, description="sacctmgr show qos -P, under preempt/qos (--slurm-qos)")
    slurm_preempt_mode: str | None = Field(
        None, description="the cluster's PreemptMode, with slurm_qos (--slurm-preempt-mode)"
    )
    slurm_qos_limits: str | None = Field(
        None, description="sacctmgr show qos -P, read for its limits alone (--slurm-qos-limits)"
    )
    slurm_assoc: str | None = Field(None, description="sacctmgr show assoc tree -P (--slurm-assoc)")
    slurm_licenses: str | None = Field(
        None, description="scontrol show licenses, or slurm.conf's Licenses= line (--slurm-licenses)"
    )


class PlacementInputs(RunningFields):
    """Everything of a placement but the cluster: the body of ``POST /v1/clusters/{id}/placements``."""

    jobs: list[Document] = Field(
        description="job documents in any JSON job format (an OJS envelope, a list of them, a workflow, a "
        "Flux jobspec object); Flux YAML and SSS XML as strings"
    )
    policy: PolicyBody = Field(default_factory=PolicyBody)
    time_limit_s: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="seconds for the whole placement; capped by the server"
    )
    now: Timestamp | None = Field(None, description="the decision time, RFC 3339 (default: now)")
    queue_config: dict[str, Any] | list[dict[str, Any]] | None = Field(
        None,
        description="OJS §10 queue configuration: one {queue, config} object or a list; or Kueue's "
        "ClusterQueues and LocalQueues (a kubectl List)",
    )
    reservations: list[dict[str, Any]] | str | None = Field(
        None,
        description="held capacity: [{id, nodes | gpus, start, end, timeout_s}], or Slurm's scontrol show "
        "reservation (text)",
    )
    prices: dict[str, Any] | None = Field(
        None, description="prices over the default catalog, tenant dollar budgets (budgets.tenants)"
    )
    topology_labels: TopologyLabels | None = Field(None, description=_TOPOLOGY_LABELS)


class ClusterFields(_Body):
    """A cluster in a body: any format ``placer cluster`` reads."""

    cluster: Document = Field(
        description="the cluster: placer inventory, OJS worker advertisements, kubectl get nodes -o json, "
        "Flux JGF (objects), or any of these as text (inventory YAML, scontrol show node output)"
    )
    cluster_format: ClusterFormat = Field("auto", description="the cluster's format (default: detect)")
    pods: Document | None = Field(None, description="kubectl get pods -A -o json, with a Kubernetes cluster")
    topology_labels: TopologyLabels | None = Field(None, description=_TOPOLOGY_LABELS)


class PlacementRequest(PlacementInputs, ClusterFields):
    """``POST /v1/placements``: one batch on one cluster, answered with the Decision JSON."""


class ClusterPut(ClusterFields, RunningFields):
    """``PUT /v1/clusters/{id}``: a snapshot to keep; ``running`` adds running jobs to it (Slurm's replace
    the anonymous allocations of a Slurm node list, under the Slurm tables sent with them)."""


class ValidateRequest(_Body):
    """``POST /v1/jobs:validate``: the ``placer validate`` rules over job documents."""

    jobs: list[Document] = Field(description="job documents, as in a placement")
    queue_config: dict[str, Any] | list[dict[str, Any]] | None = None
    format: Literal["auto", "ojs", "flux", "sss"] = "auto"
    topology_labels: TopologyLabels | None = Field(None, description=_TOPOLOGY_LABELS)


class MatchRequest(_Body):
    """``POST /v1/match``: resource-aware FETCH (OJS ML resources v0.1.0 §6) for one worker."""

    worker: dict[str, Any] = Field(
        description="the worker: a FETCH request (worker_id, queues, count, capabilities; v0.1.0 §6.1), a "
        "v0.3.0 §11 advertisement, or v0.1.0 §2.3 labels"
    )
    jobs: list[Document] = Field(description="the pending jobs, as in a placement")
    queue_config: dict[str, Any] | list[dict[str, Any]] | None = None
    now: Timestamp | None = None


class NodeChange(_Body):
    """A node went down (not ready) or came back (ready and schedulable)."""

    op: Literal["node_down", "node_up"]
    node: str = Field(min_length=1, description="a node or TPU pod name")


class JobStarted(_Body):
    """A job started: one running-job item as ``placer place --running`` takes it."""

    op: Literal["job_started"]
    job: dict[str, Any] = Field(description="an envelope plus node/gpus (or replicas) and started_at")


class JobFinished(_Body):
    """A running job ended (finished, failed or was evicted): its capacity is free again."""

    op: Literal["job_finished"]
    job: str = Field(min_length=1, description="the running job's id")


class NodesAdded(_Body):
    """Nodes (and TPU pods) joined the cluster (an autoscaler added them): an inventory document of their
    own, in placer's inventory format (what ``GET /v1/clusters/{id}?inventory=true`` shows); jobs it lists
    as ``running`` are running on them."""

    op: Literal["nodes_added"]
    inventory: Inventory = Field(description="the nodes and TPU pods that joined, as placer inventory")


class LicensesSet(_Body):
    """The cluster's licence seats changed (a licence server's count, Slurm's ``Licenses=``): they replace
    the stored ones, seats by name."""

    op: Literal["licenses"]
    licenses: dict[Annotated[str, Field(min_length=1)], Annotated[int, Field(ge=0)]] = Field(
        description="seats by licence name, as scontrol show licenses' Total less Reserved"
    )


class NodeRemoved(_Body):
    """A node or TPU pod left the cluster (scaled down, deleted): the jobs running there are released, as if
    each were reported finished."""

    op: Literal["node_removed"]
    node: str = Field(min_length=1, description="a node or TPU pod name")


Change = Annotated[
    NodeChange | JobStarted | JobFinished | NodesAdded | NodeRemoved | LicensesSet, Field(discriminator="op")
]
#: The ``op`` tags: pydantic puts the tag in an error's location; paths leave it out.
CHANGE_OPS = frozenset(
    {"node_down", "node_up", "job_started", "job_finished", "nodes_added", "node_removed", "licenses"}
)


class ClusterPatch(_Body):
    """``PATCH /v1/clusters/{id}``: changes applied in order, all or none."""

    changes: list[Change] = Field(min_length=1)
    if_version: int | None = Field(
        None, ge=0, description="refuse (409) unless the cluster is at this version"
    )


# ---------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------

_CODES = {
    "missing": "required",
    "extra_forbidden": "unknown",
    "literal_error": "enum",
    "union_tag_invalid": "enum",
    "greater_than": "range",
    "greater_than_equal": "range",
    "less_than": "range",
    "less_than_equal": "range",
    "too_short": "range",
    "string_too_short": "range",
    "finite_number": "range",
    "timestamp_format": "format",
}

M = TypeVar("M", bound=BaseModel)


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in CHANGE_OPS and i and isinstance(loc[i - 1], int):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "body"


def field_errors(error: ValidationError) -> list[dict[str, str]]:
    """pydantic's errors as ``{code, path, message}`` entries (``policy.engine``, ``jobs[2]``)."""
    out = []
    for err in error.errors(include_url=False):
        code = _CODES.get(err["type"], "type" if err["type"].endswith("_type") else "invalid")
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        out.append({"code": code, "path": _path(tuple(err["loc"])), "message": message[:300]})
    return out


def parse_json(raw: bytes, max_chars: int) -> Any:
    """The body as a JSON value: UTF-8, strict and bounded (:func:`placer.topology.safe_load.load_json`), or
    400."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ApiError(400, "malformed", f"the body is not UTF-8 text (byte {e.start})") from None
    if not text.strip():
        raise ApiError(400, "malformed", "the body is empty; send a JSON object")
    try:
        return load_json(text, max_chars=max_chars)
    except UnsafeDocument as e:
        if e.path is not None:  # well-formed JSON, one value out of range: 422 naming the field
            message = str(e)[len(e.path) + 2 :]
            raise ApiError(
                422,
                "invalid_value",
                f"{e}"[:500],
                [{"code": "range", "path": e.path, "message": message[:300]}],
            ) from None
        raise ApiError(400, "malformed", f"the body is not valid JSON: {e}"[:500]) from None


def parse_body(model: type[M], raw: bytes, max_chars: int = 2**31) -> M:
    """``raw`` as ``model``: 400 ``malformed`` when it is not JSON, 400 ``invalid_body`` listing every field
    that breaks the model."""
    obj = parse_json(raw, max_chars)
    if not isinstance(obj, dict):
        raise ApiError(400, "invalid_body", "the body must be a JSON object")
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        problems = field_errors(e)
        first = problems[0]
        raise ApiError(
            400, "invalid_body", f"{first['path']}: {first['message']}" + _more(len(problems)), problems
        ) from None


def _more(n: int) -> str:
    return f" (and {n - 1} more problems)" if n > 1 else ""
